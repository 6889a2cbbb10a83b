#!/usr/bin/env bash
# Run the end-to-end suites against a throw-away Kubernetes control plane:
#
#   test/e2e.sh [GO TEST FLAGS...]        # e.g. test/e2e.sh -run 'TestSweep|TestKwok'
#
# 1. builds what is missing (test/cluster/build.sh: Kubernetes, etcd, kwok;
#    cached under /var/cache/trainsonnet, ~0.2 s when present) and the test
#    binaries;
# 2. runs the suites under test/cluster/with-cluster.sh with WITH_KWOK=1,
#    TRAINSONNET_E2E=1 and TRAINSONNET_E2E_KWOK=1: it starts etcd,
#    kube-apiserver, kube-controller-manager, kube-scheduler and kwok, and
#    stops all of them again on exit, Ctrl-C or SIGTERM.
#
# Exits with `go test`'s exit code (130/143 when interrupted).
#
# An existing cluster: TRAINSONNET_USE_EXISTING_CLUSTER=1 and KUBECONFIG
# (and KUBECTL, else the cached kubectl, built if missing). Nothing is
# started or stopped; the kwok tests run only if TRAINSONNET_E2E_KWOK=1 is
# set by the caller (kwok must then run with test/cluster/kwok-stages.yaml).
#
# Environment:
#   TRAINSONNET_E2E_TIMEOUT    go test -timeout (default 20m)
#   TRAINSONNET_E2E_PARALLEL   go test -parallel (default 16): the tests
#                              mostly wait for the API server
#   TRAINSONNET_SWEEP_SEED, TRAINSONNET_SWEEP_N, TRAINSONNET_E2E_STRICT
#                              see test/e2e/doc.go
#   TRAINSONNET_STATE, TRAINSONNET_*_PORT, ...
#                              see test/cluster/README.md (another state dir
#                              and ports let two runs share a machine)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cluster="$repo/test/cluster"
cd "$repo"

log() { printf 'test/e2e.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The Go packages that run against the control plane (and kwok). Suites
# that need more (a real node: test/node/with-node.sh) get a step of their
# own below.
cluster_suites=(./test/e2e/ ./test/kube/)

go_test=(go test -count=1 -v -timeout "${TRAINSONNET_E2E_TIMEOUT:-20m}" -parallel "${TRAINSONNET_E2E_PARALLEL:-16}" "$@")

# run CMD...: runs CMD in the background and waits for it, passing SIGINT
# and SIGTERM on, so that with-cluster.sh always gets to stop the cluster
# (a foreground command would get a SIGTERM sent to this script only after
# it ended). Returns CMD's exit status.
child=""
# shellcheck disable=SC2317 # invoked by the traps
forward() {
  if [ -n "$child" ]; then kill "-$1" "$child" 2>/dev/null || true; fi
}
trap 'forward INT' INT
trap 'forward TERM' TERM
run() {
  local rc
  "$@" &
  child=$!
  while :; do
    rc=0
    wait "$child" || rc=$?
    # A trapped signal interrupts `wait`; wait again until CMD has ended.
    kill -0 "$child" 2>/dev/null || break
  done
  child=""
  return "$rc"
}

t0=$SECONDS
if [ "${TRAINSONNET_USE_EXISTING_CLUSTER:-0}" = 1 ]; then
  [ -n "${KUBECONFIG:-}" ] || die "TRAINSONNET_USE_EXISTING_CLUSTER=1 needs KUBECONFIG"
  if [ -z "${KUBECTL:-}" ]; then run "$cluster/build.sh" k8s; fi # the cached kubectl
  kwok="${TRAINSONNET_E2E_KWOK:-0}"
  with_kwok=0
else
  run "$cluster/build.sh" all
  kwok=1
  with_kwok=1
fi

# Compile the test binaries before the cluster starts: a compile error
# fails here at once, and the cluster does not wait for the compiler.
run go test -count=1 -run '^$' "${cluster_suites[@]}" >/dev/null

rc=0
export WITH_KWOK="$with_kwok"
run "$cluster/with-cluster.sh" \
  env TRAINSONNET_E2E=1 TRAINSONNET_E2E_KWOK="$kwok" "${go_test[@]}" "${cluster_suites[@]}" || rc=$?

# (Node suites go here, e.g. run test/node/with-node.sh env ... || rc=$?)

log "done in $((SECONDS - t0)) s: exit code $rc"
exit "$rc"
