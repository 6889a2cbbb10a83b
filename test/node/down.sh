#!/usr/bin/env bash
# Stop the node that test/node/up.sh started from $TRAINSONNET_STATE/node and
# undo what it changed on the machine. The control plane keeps running (stop
# it with test/cluster/down.sh, after this).
#
# Containers outlive the kubelet and containerd (each pod has its own shim),
# so the order matters:
#   1. cordon the node and delete its pods through the API, while the kubelet
#      still runs: it stops the containers, runs CNI DEL, removes the netns
#   2. stop kube-network-policies, kube-proxy and the kubelet; kill and
#      delete any containerd task still left
#   3. stop containerd, then the shims serving THIS containerd's socket
#      (found by their command line), then CoreDNS
#   4. kill whatever still runs in the node's cgroups, unmount what is still
#      mounted under the node's state dir, remove the cgroups, the network
#      namespaces (under the state dir), kube-proxy's rules (KUBE-* iptables
#      chains, its nftables tables), kube-network-policies' nftables table,
#      the bridge (with it go the service CIDR route and the bridge's
#      settings), the host directories up.sh saw created, the Node object
#   5. restore the kernel settings the kubelet changed, and remove the node's
#      block from $TRAINSONNET_STATE/env
#
# Safe to run twice, and when nothing runs. Exits non-zero if something
# could not be cleaned up. Logs and configs stay in $STATE/node (CLEAN=1
# removes the directory).
set -uo pipefail
TS_NAME="test/node/down.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || ts_die "must run as root"
if [ ! -d "$TSN_NODE" ]; then
  ts_log "nothing to stop: $TSN_NODE does not exist"
  exit 0
fi
TS_STATE="$(cd "$TS_STATE" && pwd -P)"
TSN_NODE="$TS_STATE/node"
exec 8>"$TS_STATE/.lock"
flock -w 120 8 || ts_die "could not lock $TS_STATE within 120s (another up.sh/down.sh?)"
mkdir -p "$TSN_NODE/pids"
touch "$TSN_NODE/created"

rc=0
fail() { ts_log "$*"; rc=1; }
is_created() { grep -qxF "$*" "$TSN_NODE/created"; }
SOCK="$TSN_NODE/containerd/containerd.sock"
KUBECTL="$TS_K8S_BIN/kubectl"
kc() { "$KUBECTL" --kubeconfig="$TS_STATE/kubeconfig" --request-timeout=5s "$@"; }
api_ok=0
if [ -x "$KUBECTL" ] && [ -s "$TS_STATE/kubeconfig" ] && kc get --raw=/readyz >/dev/null 2>&1; then api_ok=1; fi

# ------------------------------------------------- 1. pods off, via the API
if [ "$api_ok" = 1 ] && ts_recorded_pid kubelet >/dev/null && kc get node "$TSN_NODE_NAME" >/dev/null 2>&1; then
  t=$(date +%s.%N)
  kc cordon "$TSN_NODE_NAME" >/dev/null 2>&1 || true
  sel="spec.nodeName=$TSN_NODE_NAME"
  kc delete pods --all-namespaces --field-selector "$sel" --grace-period=1 --wait=false >/dev/null 2>&1 || true
  deadline=$(($(date +%s) + 60))
  while [ -n "$(kc get pods --all-namespaces --field-selector "$sel" -o name 2>/dev/null)" ]; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      ts_log "pods still on the node after 60s; the steps below clean up by force"
      break
    fi
    sleep 0.2
  done
  ts_log "pods deleted in $(ts_since "$t")"
fi

# ---------------------------------------- 2. kubelet, then leftover tasks
ts_stop kube-network-policies || fail "could not stop kube-network-policies"
ts_stop kube-proxy || fail "could not stop kube-proxy"
ts_stop kubelet || fail "could not stop the kubelet"
if ts_recorded_pid containerd >/dev/null; then
  ctr=(ctr --address "$SOCK" --timeout 10s)
  for ns in $("${ctr[@]}" namespaces ls -q 2>/dev/null); do
    tasks="$("${ctr[@]}" -n "$ns" tasks ls -q 2>/dev/null)"
    for t in $tasks; do "${ctr[@]}" -n "$ns" tasks kill --signal SIGKILL "$t" >/dev/null 2>&1; done
    [ -z "$tasks" ] || sleep 0.5
    for t in $tasks; do "${ctr[@]}" -n "$ns" tasks delete --force "$t" >/dev/null 2>&1; done
    for c in $("${ctr[@]}" -n "$ns" containers ls -q 2>/dev/null); do
      "${ctr[@]}" -n "$ns" containers delete "$c" >/dev/null 2>&1
    done
    [ -z "$tasks" ] || ts_log "killed $(wc -w <<<"$tasks") leftover containerd task(s) in namespace $ns"
  done
fi

# ------------------------------------- 3. containerd, its shims, CoreDNS
ts_stop containerd || fail "could not stop containerd"
# A shim killed this way leaves its socket in /run/containerd/s (a fixed
# path): note the socket paths it listens on first, from /proc/net/unix.
for pid in $(pgrep -f containerd-shim 2>/dev/null); do
  if tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF "$SOCK"; then
    inodes="$(find "/proc/$pid/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null | tr -dc '0-9\n')"
    sockets="$(awk -v inodes=" $(tr '\n' ' ' <<<"$inodes") " 'index(inodes, " " $7 " ") && $8 ~ /^\// { print $8 }' /proc/net/unix | sort -u)"
    ts_log "killing leftover shim $pid of $SOCK"
    kill -KILL "$pid" 2>/dev/null
    for s in $sockets; do rm -f "$s"; done
  fi
done
ts_stop coredns || fail "could not stop CoreDNS"

# ------------------------------------------------- 4. what is left behind
cgroups=()
while read -r kind what; do
  [ "$kind" = cgroup ] && cgroups+=("$what")
done <"$TSN_NODE/created"
# Processes still in the node's cgroups are container processes whose shim
# is gone: nothing else can be in there.
for cg in "${cgroups[@]}"; do
  [ -d "$cg" ] || continue
  pids="$(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)"
  if [ -n "$pids" ]; then
    ts_log "killing $(wc -w <<<"$pids") leftover process(es) in $cg"
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null
    sleep 0.5
  fi
done

# Mounts under the node's state dir (overlay rootfs, shm, volumes, the pods'
# network namespaces), deepest first. Unmounting a network namespace whose
# processes are gone frees it, and with it the pod's end of the veth pair.
awk -v n="$TSN_NODE/" 'index($5, n) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
  while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" || echo "$m"; done >"$TSN_NODE/umount.failed"
[ -s "$TSN_NODE/umount.failed" ] && fail "could not unmount: $(tr '\n' ' ' <"$TSN_NODE/umount.failed")"
rm -f "$TSN_NODE/umount.failed"

for cg in "${cgroups[@]}"; do
  [ -d "$cg" ] || continue
  find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
  [ -d "$cg" ] && fail "could not remove cgroup $cg"
done

# kube-proxy's rules (iptables mode), in IPv4 and IPv6. (The kubelet adds
# none: makeIPTablesUtilChains=false.) The jumps into KUBE-* chains from the
# built-in ones go by rule number, last first: kube-proxy's carry comments,
# so "-D HOOK -j CHAIN" would not match them.
for ipt in iptables ip6tables; do
  command -v "$ipt-save" >/dev/null || continue
  rules="$("$ipt-save" 2>/dev/null)"
  grep -q '^:KUBE-' <<<"$rules" || continue
  for table in filter nat mangle; do
    for hook in INPUT OUTPUT FORWARD PREROUTING POSTROUTING; do
      for n in $("$ipt" -w -t "$table" -L "$hook" -n --line-numbers 2>/dev/null | awk '$2 ~ /^KUBE-/ { print $1 }' | sort -rn); do
        "$ipt" -w -t "$table" -D "$hook" "$n" || fail "could not remove rule $n of $ipt $table $hook"
      done
    done
    chains="$("$ipt" -t "$table" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ { print $2 }')"
    for c in $chains; do "$ipt" -t "$table" -F "$c" 2>/dev/null; done
    for c in $chains; do "$ipt" -t "$table" -X "$c" 2>/dev/null || fail "could not remove $ipt $table $c"; done
    [ -z "$chains" ] || ts_log "removed $ipt $table chains: $(tr '\n' ' ' <<<"$chains")"
  done
done
# kube-proxy's rules (nftables mode): one table per family, all its own.
if command -v nft >/dev/null; then
  for family in ip ip6; do
    nft list table "$family" kube-proxy >/dev/null 2>&1 || continue
    nft delete table "$family" kube-proxy || fail "could not remove nftables table $family kube-proxy"
    ts_log "removed nftables table $family kube-proxy"
  done
fi
# kube-network-policies' table. It deletes it itself on SIGTERM, but one
# left by a killed controller would drop the packets it queues.
if command -v nft >/dev/null && nft list table inet "$TSN_NETPOL_TABLE" >/dev/null 2>&1; then
  nft delete table inet "$TSN_NETPOL_TABLE" || fail "could not remove nftables table inet $TSN_NETPOL_TABLE"
  ts_log "removed nftables table inet $TSN_NETPOL_TABLE"
fi
# What iptables mode left (recorded by up.sh): the nftables tables that
# iptables-nft made, if they hold no rule now, and kube-proxy's counters.
while read -r kind a b; do
  case "$kind" in
    nft-table)
      if ! command -v nft >/dev/null || ! nft list table "$a" "$b" >/dev/null 2>&1; then continue; fi
      if nft list table "$a" "$b" | awk 'NF && $1 != "table" && $1 != "chain" && $1 != "type" && $1 != "}" { found = 1 } END { exit !found }'; then
        ts_log "keeping nftables table $a $b: it holds rules now"
      else
        nft delete table "$a" "$b" || fail "could not remove nftables table $a $b"
      fi
      ;;
    nfacct)
      if ! command -v nfacct >/dev/null || ! nfacct get "$a" >/dev/null 2>&1; then continue; fi
      nfacct delete "$a" >/dev/null 2>&1 || fail "could not remove nfacct counter $a"
      ;;
  esac
done <"$TSN_NODE/created"

if is_created "bridge $TSN_BRIDGE" && ip link show "$TSN_BRIDGE" >/dev/null 2>&1; then
  ip link delete "$TSN_BRIDGE" || fail "could not delete the bridge $TSN_BRIDGE"
fi

# Host directories with fixed paths: the kubelet's symlinks into our pod logs
# go in any case; a directory goes if up.sh saw it appear and it is empty
# (/var/lib/cni only holds the CNI result cache of this node's pods).
if [ -d /var/log/containers ]; then
  find /var/log/containers -maxdepth 1 -type l -lname "$TSN_NODE/*" -delete
fi
is_created "dir /var/lib/cni" && rm -rf /var/lib/cni
if is_created "dir /var/lib/kubelet"; then
  rm -f /var/lib/kubelet/device-plugins/kubelet.sock
  find /var/lib/kubelet -depth -type d -empty -delete 2>/dev/null
fi
if is_created "dir /run/containerd"; then
  # Ours alone, unless a containerd or shim of someone else runs by now.
  if pgrep -x containerd >/dev/null || pgrep -f containerd-shim >/dev/null; then
    find /run/containerd -depth -type d -empty -delete 2>/dev/null
  else
    rm -rf /run/containerd
  fi
fi
is_created "dir /var/log/containers" && [ -d /var/log/containers ] && rmdir /var/log/containers 2>/dev/null

if [ "$api_ok" = 1 ] && kc get node "$TSN_NODE_NAME" >/dev/null 2>&1; then
  kc delete node "$TSN_NODE_NAME" --wait=false >/dev/null 2>&1 || fail "could not delete Node $TSN_NODE_NAME"
fi

# ------------------------------------------- 5. kernel settings, env file
if [ -s "$TSN_NODE/sysctl.saved" ]; then
  while IFS= read -r line; do
    key="${line%% = *}" want="${line#* = }"
    have="$(sysctl -n "$key" 2>/dev/null)"
    [ "$have" = "$want" ] && continue
    sysctl -q -w "$key=$want" >/dev/null || { fail "could not restore $key=$want"; continue; }
    ts_log "restored $key: $have -> $want"
  done <"$TSN_NODE/sysctl.saved"
fi
tsn_env_strip

if [ "$rc" = 0 ]; then
  # Records done with; the big containerd/kubelet trees go too, logs stay.
  rm -f "$TSN_NODE/created" "$TSN_NODE/sysctl.saved"
  rm -rf "$TSN_NODE/containerd/root" "$TSN_NODE/containerd/state" "$TSN_NODE/containerd/runc" "$TSN_NODE/containerd/runc-v1" \
    "$TSN_NODE/kubelet/root" "$TSN_NODE/cni/ipam"
  if [ "${CLEAN:-0}" = 1 ]; then rm -rf "$TSN_NODE"; fi
  ts_log "node stopped in $(ts_since)"
else
  ts_log "node stopped with errors (records kept in $TSN_NODE; run down.sh again)"
fi
exit "$rc"
