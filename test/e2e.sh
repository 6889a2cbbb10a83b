#!/usr/bin/env bash
# Run every end-to-end suite, on throw-away Kubernetes built on this machine:
#
#   test/e2e.sh [GO TEST FLAGS...]        # e.g. test/e2e.sh -run 'TestSweep|TestKwok'
#
# 1. builds what is missing (test/cluster/build.sh: Kubernetes, etcd, kwok;
#    test/node/build.sh: CoreDNS, kube-network-policies, the test image;
#    all cached under /var/cache/trainsonnet, seconds when present) and the
#    test binaries;
# 2. test/scripts: lib/assets/mpi.sh and a rendered ConfigMap run for real
#    (sshd, mpirun) in network namespaces; no cluster;
# 3. test/e2e and test/kube under test/cluster/with-cluster.sh with kwok
#    and Kueue: every golden manifest, example overlay and the random sweep
#    applied to a real API server, fake GPU nodes, every prototype's job on
#    a Kueue queue;
# 4. test/node and test/jobs under test/node/with-node.sh (with Kueue): a
#    real kubelet node runs the generated jobs to completion, and a queued
#    training job through its preemption.
# Each step stops what it started, on exit, Ctrl-C or SIGTERM.
#
# Exits 0 when every step passed, else the first failing step's code
# (130/143 when interrupted); every step runs even after a failure.
#
# An existing cluster: TRAINSONNET_USE_EXISTING_CLUSTER=1 and KUBECONFIG
# (and KUBECTL, else the cached kubectl, built if missing). Nothing is
# started or stopped; the kwok tests run only if TRAINSONNET_E2E_KWOK=1 is
# set by the caller (kwok must then run with test/cluster/kwok-stages.yaml),
# the Kueue tests only with TRAINSONNET_E2E_KUEUE=1 and TRAINSONNET_KUEUE=1
# (Kueue's webhooks must see namespaces labelled trainsonnet.test/kueue),
# and the node suites only with TRAINSONNET_E2E_NODE=1 plus the variables of
# test/node/README.md (the test image must be on the cluster's nodes).
#
# Environment:
#   TRAINSONNET_E2E_TIMEOUT    go test -timeout of each package (default 45m: test/jobs, with the
#                              fault cases, takes about 25 minutes)
#   TRAINSONNET_E2E_PARALLEL   go test -parallel (default 16): the tests
#                              mostly wait for the API server
#   TRAINSONNET_SWEEP_SEED, TRAINSONNET_SWEEP_N
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
node_suites=(./test/node/ ./test/jobs/)
host_suites=(./test/scripts/)

go_test=(go test -count=1 -v -timeout "${TRAINSONNET_E2E_TIMEOUT:-45m}" -parallel "${TRAINSONNET_E2E_PARALLEL:-16}" "$@")

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
  kueue="${TRAINSONNET_E2E_KUEUE:-0}"
  with_kwok=0
else
  run "$cluster/build.sh" all
  run "$repo/test/node/build.sh"
  kwok=1
  kueue=1
  with_kwok=1
fi

# Compile the test binaries before any cluster starts: a compile error
# fails here at once, and no cluster waits for the compiler.
run go test -count=1 -run '^$' "${cluster_suites[@]}" "${node_suites[@]}" "${host_suites[@]}" >/dev/null

rc=0
step() { # step NAME CMD...: runs a step, remembers the first failure
  local step_rc=0
  log "step: $1"
  shift
  run "$@" || step_rc=$?
  log "step done: exit code $step_rc"
  if [ "$rc" = 0 ]; then rc=$step_rc; fi
}

step "the pods' script, run for real" env TRAINSONNET_E2E=1 "${go_test[@]}" "${host_suites[@]}"

export WITH_KWOK="$with_kwok" WITH_KUEUE="$with_kwok"
step "control plane: goldens, overlays, sweep, kwok, Kueue" "$cluster/with-cluster.sh" \
  env TRAINSONNET_E2E=1 TRAINSONNET_E2E_KWOK="$kwok" TRAINSONNET_E2E_KUEUE="$kueue" "${go_test[@]}" "${cluster_suites[@]}"

if [ "${TRAINSONNET_USE_EXISTING_CLUSTER:-0}" = 1 ]; then
  if [ "${TRAINSONNET_E2E_NODE:-0}" = 1 ]; then
    step "existing cluster: jobs run" env TRAINSONNET_E2E=1 "${go_test[@]}" "${node_suites[@]}"
  else
    log "node suites skipped: an existing cluster needs TRAINSONNET_E2E_NODE=1 and the test image (test/node/README.md)"
  fi
else
  export WITH_KWOK=0 WITH_KUEUE=1
  step "real node: jobs run to completion" "$repo/test/node/with-node.sh" \
    env TRAINSONNET_E2E=1 TRAINSONNET_E2E_KUEUE=1 "${go_test[@]}" "${node_suites[@]}"
fi

log "done in $((SECONDS - t0)) s: exit code $rc"
exit "$rc"
