#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Run a command against a fresh control plane (and, with WITH_NODE=1, one
# real node: test/node/with-node.sh is this with WITH_NODE=1) and always
# tear it down: the harness's one wrapper.
#
#   test/cluster/with-cluster.sh CMD [ARG...]
#   WITH_KWOK=1 test/cluster/with-cluster.sh go test ./test/...
#   WITH_NODE=1 test/cluster/with-cluster.sh go test ./test/jobs/
#
# Builds what is missing (build.sh; test/node/build.sh with a node), starts
# the cluster (up.sh; then test/node/up.sh), runs CMD with
# $TRAINSONNET_STATE/env sourced (KUBECONFIG, KUBECTL, and with a node
# TRAINSONNET_E2E_NODE=1, TRAINSONNET_TEST_IMAGE, ...), stops everything on
# exit, Ctrl-C or SIGTERM (the node first), and exits with CMD's status
# (130/143 when interrupted), or 1 if CMD passed but the teardown failed.
# With WITH_KWOK=1 kwok is built and started too (fake nodes, beside the
# real one if there is one), with WITH_KUEUE=1 Kueue, and with WITH_JOBSET=1
# the JobSet controller (up.sh).
#
# Existing cluster: with KUBECONFIG set and TRAINSONNET_USE_EXISTING_CLUSTER=1,
# nothing is built, started or stopped; CMD runs against that cluster. KUBECTL
# is kept if set, else the cached kubectl is used if it was built (else CMD
# has to cope without it). The e2e tests create their own namespaces (and
# fake kwok nodes) and remove them again, but do not point this at a cluster
# you care about.
#
# Other environment: see up.sh (TRAINSONNET_STATE, ports, ...) and build.sh
# (TRAINSONNET_CACHE). CLEAN=1 removes the state dir after the run.
set -euo pipefail
TS_NAME=${TS_NAME:-with-cluster}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"
node="$here/../node"
with_node="${WITH_NODE:-0}"

[ "$#" -gt 0 ] || ts_die "usage: $0 CMD [ARG...]"

if [ "${TRAINSONNET_USE_EXISTING_CLUSTER:-0}" = 1 ]; then
  [ -n "${KUBECONFIG:-}" ] || ts_die "TRAINSONNET_USE_EXISTING_CLUSTER=1 needs KUBECONFIG"
  if [ -z "${KUBECTL:-}" ] && [ -x "$TS_K8S_BIN/kubectl" ]; then
    KUBECTL="$TS_K8S_BIN/kubectl"
    export KUBECTL
  fi
  ts_log "using the existing cluster of KUBECONFIG=$KUBECONFIG (KUBECTL=${KUBECTL:-unset})"
  exec "$@"
fi

targets=(control-plane)
if [ "${WITH_KWOK:-0}" = 1 ]; then targets+=(kwok); fi
if [ "${WITH_KUEUE:-0}" = 1 ]; then targets+=(kueue); fi
if [ "${WITH_JOBSET:-0}" = 1 ]; then targets+=(jobset); fi
"$here/build.sh" "${targets[@]}"
if [ "$with_node" = 1 ]; then "$node/build.sh"; fi

cmd_pid=""
# Stop CMD (its whole process group) and the cluster; keep CMD's status.
# shellcheck disable=SC2317 # invoked by the EXIT trap
finish() {
  local rc=$? down_rc=0
  trap - EXIT INT TERM
  if [ -n "$cmd_pid" ] && kill -0 "$cmd_pid" 2>/dev/null; then
    ts_log "stopping the command (process group $cmd_pid)"
    kill -TERM -- "-$cmd_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "$cmd_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$cmd_pid" 2>/dev/null || true
    wait "$cmd_pid" 2>/dev/null || true
  fi
  if [ "$with_node" = 1 ]; then "$node/down.sh" || down_rc=$?; fi
  "$here/down.sh" || down_rc=$?
  if [ "$down_rc" != 0 ]; then
    ts_log "teardown failed (rc=$down_rc)"
    [ "$rc" != 0 ] || rc=1
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$here/up.sh"
if [ "$with_node" = 1 ]; then "$node/up.sh"; fi
# shellcheck source=/dev/null
. "$TS_STATE/env"

if [ -t 0 ]; then
  # Interactive (e.g. `with-cluster.sh bash`): CMD stays in the foreground
  # process group so it owns the terminal and gets Ctrl-C itself.
  set +e
  "$@"
  rc=$?
  set -e
else
  # CMD gets its own process group (set -m), so an interrupt can stop its
  # whole tree (go test -> test binary -> kubectl), and `wait` returns at
  # once when a signal arrives, instead of after CMD finished.
  set -m
  "$@" &
  cmd_pid=$!
  set +m
  set +e
  wait "$cmd_pid"
  rc=$?
  set -e
  cmd_pid=""
fi
exit "$rc"
