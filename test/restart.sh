#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Restart one process of the running harness, as it ran, after it has been
# down for DOWN seconds (default 0): a fault the tests inject under a
# running job.
#
#   test/restart.sh NAME [DOWN]
#
# NAME is a component test/cluster/up.sh or test/node/up.sh recorded:
# kube-apiserver, kube-controller-manager, kube-scheduler, kueue, kwok,
# etcd; containerd, kubelet, coredns, kube-proxy, kube-network-policies.
# Its output goes on into the same log. Exits 0 once it runs again (not
# once it is ready: the caller waits for what it needs of it).
set -euo pipefail
TS_NAME=restart # read by test/lib.sh
export TS_NAME
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=cluster/common.sh
. "$here/cluster/common.sh"
if [ "$#" -lt 1 ] || [ "$#" -gt 2 ]; then ts_die "usage: $0 NAME [DOWN]"; fi
name="$1" down="${2:-0}"
[[ "$down" =~ ^[0-9]+$ ]] || ts_die "DOWN must be whole seconds, not '$down'"
if [ -f "$TS_STATE/node/pids/$name.pid" ]; then
  TS_PIDS="$TS_STATE/node/pids"
  log="$TS_STATE/node/logs/$name.log"
elif [ -f "$TS_PIDS/$name.pid" ]; then
  log="$TS_STATE/logs/$name.log"
else
  ts_die "no process named $name recorded in $TS_STATE"
fi
ts_restart "$name" "$log" "$down"
