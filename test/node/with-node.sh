#!/usr/bin/env bash
# Run a command against a fresh control plane with one real node, and always
# tear both down:
#
#   test/node/with-node.sh CMD [ARG...]
#   test/node/with-node.sh go test ./test/node/ -run Smoke -v
#
# 1. builds what is missing: test/cluster/build.sh control-plane (kubelet,
#    kube-proxy and kubectl included), test/node/build.sh
# 2. test/cluster/up.sh, then test/node/up.sh
# 3. runs CMD with $TRAINSONNET_STATE/env sourced: KUBECONFIG, KUBECTL,
#    TRAINSONNET_E2E_NODE=1, TRAINSONNET_TEST_IMAGE, TRAINSONNET_NODE_NAME, ...
# 4. on exit, Ctrl-C or SIGTERM: stops CMD (its whole process group),
#    test/node/down.sh, test/cluster/down.sh
#
# Exits with CMD's status (130/143 when interrupted), or 1 if CMD passed but
# the teardown failed. Environment: see up.sh, build.sh and test/cluster/;
# WITH_KWOK=1 also builds and starts kwok (fake nodes next to the real one).
set -euo pipefail
TSN_NAME="test/node/with-node.sh"
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
cluster="$TSN_REPO/test/cluster"

[ "$#" -gt 0 ] || tsn_die "usage: $0 CMD [ARG...]"
for s in build.sh up.sh down.sh; do
  [ -x "$cluster/$s" ] || tsn_die "$cluster/$s is missing"
done

targets=(control-plane)
[ "${WITH_KWOK:-0}" = 1 ] && targets+=(kwok)   # test/cluster/up.sh starts kwok too
"$cluster/build.sh" "${targets[@]}"
"$here/build.sh"

cmd_pid=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
finish() {
  local rc=$? down_rc=0
  trap - EXIT INT TERM
  if [ -n "$cmd_pid" ] && kill -0 "$cmd_pid" 2>/dev/null; then
    tsn_log "stopping the command (process group $cmd_pid)"
    kill -TERM -- "-$cmd_pid" 2>/dev/null || true
    for _ in $(seq 100); do
      kill -0 "$cmd_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$cmd_pid" 2>/dev/null || true
    wait "$cmd_pid" 2>/dev/null || true
  fi
  "$here/down.sh" || down_rc=$?
  "$cluster/down.sh" || down_rc=$?
  if [ "$down_rc" != 0 ]; then
    tsn_log "teardown failed (rc=$down_rc)"
    [ "$rc" != 0 ] || rc=1
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$cluster/up.sh"
"$here/up.sh"
# shellcheck source=/dev/null
. "$TSN_STATE/env"

if [ -t 0 ]; then
  # Interactive: CMD stays in the foreground process group and gets Ctrl-C.
  set +e
  "$@"
  rc=$?
  set -e
else
  # CMD in its own process group (set -m): an interrupt stops its whole
  # tree (go test -> test binary -> kubectl), and `wait` returns as soon as
  # a signal arrives, not only when CMD ends.
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
