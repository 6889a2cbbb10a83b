#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Run a command against a fresh control plane and always tear it down:
#
#   test/cluster/with-cluster.sh CMD [ARG...]
#   WITH_KWOK=1 test/cluster/with-cluster.sh go test ./test/...
#
# Builds what is missing (build.sh), starts the cluster (up.sh), runs CMD
# with $TRAINSONNET_STATE/env sourced (KUBECONFIG, KUBECTL, ...), stops the
# cluster (down.sh) on exit, Ctrl-C or SIGTERM, and exits with CMD's status
# (130/143 when interrupted). With WITH_KWOK=1 kwok is built and started too.
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
TS_NAME=with-cluster
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"

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
"$here/build.sh" "${targets[@]}"

cmd_pid=""
# Stop CMD (its whole process group) and the cluster; keep CMD's status.
# shellcheck disable=SC2317 # invoked by the EXIT trap
finish() {
  local rc=$?
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
  "$here/down.sh" || ts_log "down.sh failed (rc=$?)"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$here/up.sh"
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
