#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Stop the control plane that test/cluster/up.sh started from
# $TRAINSONNET_STATE (default /tmp/trainsonnet-cluster).
#
# Only the processes up.sh recorded are signalled, and only while they are
# still the same processes (PID + start time + binary; PIDs get reused).
# kueue, kwok, kube-scheduler, kube-controller-manager and kube-apiserver get
# SIGTERM at once, then etcd; each group gets TRAINSONNET_STOP_TIMEOUT
# seconds (default 20) before SIGKILL.
#
#   CLEAN=1   also remove the state dir (only if up.sh created it)
#
# Safe to run twice, and when nothing runs.
set -euo pipefail
TS_NAME=down
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

if [ ! -d "$TS_STATE" ]; then
  ts_log "nothing to stop: $TS_STATE does not exist"
  exit 0
fi
TS_STATE="$(cd "$TS_STATE" && pwd -P)"
if [ ! -e "$TS_STATE/.trainsonnet-cluster" ]; then
  [ "${CLEAN:-0}" != 1 ] || ts_die "$TS_STATE was not created by test/cluster/up.sh; not removing it"
  ts_log "nothing to stop: $TS_STATE was not created by test/cluster/up.sh"
  exit 0
fi

exec 9>"$TS_STATE/.lock"
if ! flock -n 9; then
  ts_log "waiting for another up.sh/down.sh on $TS_STATE"
  flock -w 120 9 || ts_die "could not lock $TS_STATE within 120s"
fi

if ! compgen -G "$TS_STATE/pids/*.pid" >/dev/null; then
  ts_log "nothing running from $TS_STATE"
fi
rc=0
# Everything that talks to the API server first, all at once; etcd last so
# the API server can shut down cleanly.
ts_stop jobset kueue kwok kube-scheduler kube-controller-manager kube-apiserver || rc=1
ts_stop etcd || rc=1
[ "$rc" = 0 ] || ts_die "some processes could not be stopped; see above"
ts_log "stopped in $(ts_since "$TS_T0")"

if [ "${CLEAN:-0}" = 1 ]; then
  rm -rf "$TS_STATE"
  ts_log "removed $TS_STATE"
fi
