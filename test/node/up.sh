#!/usr/bin/env bash
# Turn this machine into one real Kubernetes node of the control plane that
# test/cluster/up.sh runs from $TRAINSONNET_STATE:
#
#   bridge ts0 with the node IP 10.244.0.1/24; pods get 10.244.0.0/24 from the
#            CNI bridge plugin, reach each other and the node IP, nothing else
#   containerd  Debian's, with root, state and socket under $STATE/node, the
#            pause and MPI test images imported from the cache (no registry)
#   CoreDNS  a host process on the node IP, answering only the cluster zones
#   kubelet  cgroupfs, cgroups under /trainsonnet-node, static client cert
#   kube-proxy  nftables mode, a host process like the kubelet: ClusterIP
#            and NodePort Services route, from pods and from this machine
#   kube-network-policies  a host process too: NetworkPolicies are enforced
#            (nftables + NFQUEUE), for traffic between pods on the bridge too
#
# and wait until the Node is Ready, kube-proxy has written its rules and
# kube-network-policies reads its queue.
# Then append to $STATE/env:
#   TRAINSONNET_E2E_NODE=1, TRAINSONNET_NODE_NAME, TRAINSONNET_NODE_IP,
#   TRAINSONNET_TEST_IMAGE (localhost/trainsonnet-mpi:<recipe hash>)
#
# Everything it starts or changes is recorded under $STATE/node (pids/,
# created, sysctl.saved) for test/node/down.sh. If start-up fails half-way,
# down.sh runs at once.
#
# Needs: root, the cached binaries and images (test/cluster/build.sh,
# test/node/build.sh) and a running control plane (test/cluster/up.sh).
# Environment (defaults in lib.sh):
#   TRAINSONNET_STATE, TRAINSONNET_CACHE (the API server is the one of
#   $TRAINSONNET_STATE/kubeconfig)
#   TRAINSONNET_NODE_NAME (trainsonnet-node), TRAINSONNET_NODE_BRIDGE (ts0),
#   TRAINSONNET_NODE_IP (10.244.0.1), TRAINSONNET_POD_SUBNET (10.244.0.0/24),
#   TRAINSONNET_KUBELET_PORT (10250), TRAINSONNET_KUBELET_HEALTHZ_PORT (10248),
#   TRAINSONNET_DNS_READY_PORT (8181), TRAINSONNET_NODE_CGROUP_ROOT
#   (/trainsonnet-node), TRAINSONNET_NODE_WAIT (180 s per step),
#   TRAINSONNET_KUBELET_VERBOSITY (1), TRAINSONNET_PROXY_MODE (nftables),
#   TRAINSONNET_PROXY_HEALTHZ_PORT (10256), TRAINSONNET_PROXY_METRICS_PORT
#   (10249), TRAINSONNET_PROXY_VERBOSITY (1), TRAINSONNET_SERVICE_CIDR (the
#   API server's ServiceCIDR "kubernetes"), TRAINSONNET_NETPOL (1; 0: no
#   NetworkPolicy enforcement), TRAINSONNET_NETPOL_TABLE
#   (trainsonnet-netpol), TRAINSONNET_NETPOL_QUEUE (100),
#   TRAINSONNET_NETPOL_METRICS_PORT (9080), TRAINSONNET_NETPOL_VERBOSITY (1)
set -euo pipefail
TS_NAME="test/node/up.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# ------------------------------------------------------------ preconditions
[ "$(id -u)" = 0 ] || ts_die "must run as root"
for tool in containerd ctr runc ip openssl flock; do
  command -v "$tool" >/dev/null || ts_die "$tool missing; run test/node/build.sh"
done
for plugin in bridge host-local loopback; do
  [ -x "$TSN_CNI_BIN_DIR/$plugin" ] || ts_die "CNI plugin $plugin missing in $TSN_CNI_BIN_DIR; run test/node/build.sh"
done
KUBELET="$TS_K8S_BIN/kubelet"
KUBE_PROXY="$TS_K8S_BIN/kube-proxy"
KUBECTL="$TS_K8S_BIN/kubectl"
PAUSE_ARCHIVE="$(tsn_pause_archive)"
IMAGE_ARCHIVE="$(tsn_image_archive)"
PAUSE_IMAGE="$(tsn_pause_ref)"
TEST_IMAGE="$(tsn_image_ref)"
ENTRYPOINT_IMAGE="$(tsn_entrypoint_ref)"
case "$TSN_PROXY_MODE" in
  iptables) proxy_tools=(iptables iptables-restore ip6tables ip6tables-restore) ;;
  nftables) proxy_tools=(nft) ;;
  *) ts_die "TRAINSONNET_PROXY_MODE must be iptables or nftables, not '$TSN_PROXY_MODE'" ;;
esac
# kube-network-policies needs nft only to be removed (down.sh), and a
# bridge that hands its IPv4 frames to netfilter (br_netfilter), so that
# traffic between two pods on it passes the controller's postrouting hook.
if [ "$TSN_NETPOL" = 1 ]; then
  proxy_tools+=(nft)
  [ -x "$TSN_NETPOL_BIN" ] || ts_die "missing $TSN_NETPOL_BIN; run test/node/build.sh"
  if [ ! -d /proc/sys/net/bridge ]; then
    modprobe br_netfilter 2>/dev/null || true
    [ -d /proc/sys/net/bridge ] ||
      ts_die "br_netfilter is not loaded (NetworkPolicy enforcement between pods on one bridge needs it); load it or set TRAINSONNET_NETPOL=0"
  fi
fi
for tool in "${proxy_tools[@]}"; do
  command -v "$tool" >/dev/null || ts_die "$tool missing (kube-proxy's $TSN_PROXY_MODE mode); run test/node/build.sh"
done
for f in "$KUBELET" "$KUBE_PROXY" "$KUBECTL" "$TSN_COREDNS_BIN"; do
  [ -x "$f" ] || ts_die "missing $f; run test/cluster/build.sh and test/node/build.sh"
done
for f in "$PAUSE_ARCHIVE" "$IMAGE_ARCHIVE"; do
  [ -f "$f" ] || ts_die "missing $f; run test/node/build.sh (the image recipe changed?)"
done

[ -d "$TS_STATE" ] || ts_die "no control plane state in $TS_STATE; run test/cluster/up.sh first"
TS_STATE="$(cd "$TS_STATE" && pwd -P)"
TSN_NODE="$TS_STATE/node"
PKI="$TS_STATE/pki"
ADMIN_KUBECONFIG="$TS_STATE/kubeconfig"
for f in "$PKI/ca.crt" "$PKI/ca.key" "$ADMIN_KUBECONFIG" "$TS_STATE/env"; do
  [ -s "$f" ] || ts_die "missing $f; run test/cluster/up.sh first"
done
# Each request bounded, never so short that a loaded machine's API server
# misses it; what must succeed is tried again (ts_retry, wait_for).
kc() { "$KUBECTL" --kubeconfig="$ADMIN_KUBECONFIG" --request-timeout=30s "$@"; }
ts_retry "$TSN_WAIT" "the API server of $ADMIN_KUBECONFIG is not ready (run test/cluster/up.sh)" kc get --raw=/readyz >/dev/null
# The kubelet talks to the API server that the admin kubeconfig names.
APISERVER="$(kc config view --minify -o 'jsonpath={.clusters[0].cluster.server}')"
[ -n "$APISERVER" ] || ts_die "no server URL in $ADMIN_KUBECONFIG"
# The ClusterIP range: pods get a route for it, kube-proxy DNATs it. The
# API server makes its default ServiceCIDR object shortly after it starts.
SERVICE_CIDR="$TSN_SERVICE_CIDR"
cidr_deadline=$(($(date +%s) + TSN_WAIT))
while [ -z "$SERVICE_CIDR" ] && [ "$(date +%s)" -lt "$cidr_deadline" ]; do
  SERVICE_CIDR="$(kc get servicecidr kubernetes -o 'jsonpath={range .spec.cidrs[*]}{@}{"\n"}{end}' 2>/dev/null | grep -m1 -F . || true)"
  [ -n "$SERVICE_CIDR" ] || sleep 0.2
done
[[ "$SERVICE_CIDR" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+/[0-9]+$ ]] ||
  ts_die "no IPv4 service CIDR (ServiceCIDR 'kubernetes' of the API server: '$SERVICE_CIDR'); set TRAINSONNET_SERVICE_CIDR"

# Serialise with test/cluster/up.sh/down.sh and other node up/down runs on
# this state dir. Every daemon started below gets the lock fd closed (8>&-),
# so the lock ends with this script.
exec 8>"$TS_STATE/.lock"
flock -w 120 8 || ts_die "could not lock $TS_STATE within 120s (another up.sh/down.sh?)"

mkdir -p "$TSN_NODE/pids"
running=()
for name in "${TSN_DAEMONS[@]}"; do
  if pid="$(ts_recorded_pid "$name")"; then running+=("$name=$pid"); fi
done
[ "${#running[@]}" -eq 0 ] || ts_die "a node from $TSN_NODE is running (${running[*]}); run test/node/down.sh first"
if [ -s "$TSN_NODE/created" ] || [ -s "$TSN_NODE/sysctl.saved" ]; then
  ts_log "leftovers of an earlier node found; cleaning up with down.sh first"
  flock -u 8
  bash "$TSN_DIR/down.sh"
  flock -w 120 8 || ts_die "could not lock $TS_STATE within 120s"
fi

if ip link show "$TSN_BRIDGE" >/dev/null 2>&1; then
  ts_die "network interface $TSN_BRIDGE exists already; remove it or set TRAINSONNET_NODE_BRIDGE"
fi
if ip -o -4 addr show | awk -v ip="$TSN_NODE_IP" 'index($4, ip "/") == 1 { found = 1 } END { exit !found }'; then
  ts_die "$TSN_NODE_IP is in use on this machine; set TRAINSONNET_NODE_IP and TRAINSONNET_POD_SUBNET"
fi
if [ -n "$(ip -4 route show "$TSN_POD_SUBNET" 2>/dev/null)" ]; then
  ts_die "a route for $TSN_POD_SUBNET exists; set TRAINSONNET_NODE_IP and TRAINSONNET_POD_SUBNET"
fi
if [ -n "$(ip -4 route show "$SERVICE_CIDR" 2>/dev/null)" ]; then
  ts_die "a route for the service CIDR $SERVICE_CIDR exists; remove it or use another cluster's range"
fi

# CAP_SYS_RESOURCE (bit 24) missing from the bounding set: nothing here may
# lower an oom_score_adj, and runc dies setting the CRI's -998 on a sandbox.
capbnd="$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)"
if (((16#$capbnd >> 24) & 1)); then restrict_oom=false; else restrict_oom=true; fi

# From here on a failure tears down whatever was set up.
on_exit() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    ts_log "start-up failed (rc=$rc); tearing down (logs: $TSN_NODE/logs)"
    flock -u 8 || true
    bash "$TSN_DIR/down.sh" || true
  fi
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Never rm -rf across a mount (an overlay rootfs would lose its files).
if awk -v n="$TSN_NODE/" 'index($5, n) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
  ts_die "mounts left under $TSN_NODE; run test/node/down.sh"
fi
rm -rf "$TSN_NODE"/{logs,pki,cni,containerd,coredns,kubelet,kube-proxy,netpol,pod-logs}
mkdir -p "$TSN_NODE"/{logs,pki,cni/net.d,cni/ipam,containerd,coredns,kubelet,kube-proxy,netpol,pod-logs}
: >"$TSN_NODE/created"
# created: one line per thing up.sh made outside $TSN_NODE, for down.sh.
created() { printf '%s\n' "$*" >>"$TSN_NODE/created"; }

# start NAME EXE ARGS...: runs a daemon in its own session (a Ctrl-C on the
# terminal must not reach it: down.sh stops things in order), logs to
# logs/NAME.log, records it.
start() {
  local name="$1" exe pid
  exe="$(readlink -f "$2")"
  shift 2
  setsid "$exe" "$@" </dev/null >"$TSN_NODE/logs/$name.log" 2>&1 8>&- &
  pid=$!
  ts_record "$name" "$pid" "$exe" || ts_die "$name exited at once: $(tail -n 5 "$TSN_NODE/logs/$name.log")"
  # The record names the daemon's binary; wait for setsid to exec it.
  for _ in $(seq 50); do
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" != "$exe" ] || return 0
    sleep 0.02
  done
  ts_die "$name: pid $pid did not become $exe: $(tail -n 5 "$TSN_NODE/logs/$name.log")"
}

# wait_for NAME WHAT CMD...: polls CMD until it succeeds; fails early if NAME died.
wait_for() {
  local name="$1" what="$2" deadline t0
  shift 2
  t0=$(date +%s.%N)
  deadline=$(($(date +%s) + TSN_WAIT))
  until "$@" >/dev/null 2>&1; do
    if ! ts_recorded_pid "$name" >/dev/null; then
      tail -n 20 "$TSN_NODE/logs/$name.log" >&2
      ts_die "$name exited; log: $TSN_NODE/logs/$name.log"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      tail -n 20 "$TSN_NODE/logs/$name.log" >&2
      ts_die "timed out after ${TSN_WAIT}s waiting for $what; log: $TSN_NODE/logs/$name.log"
    fi
    sleep 0.1
  done
  ts_log "$what: ready in $(ts_since "$t0") (total $(ts_since))"
}

# ---------------------------------------------------------------------- PKI
# client_cert NAME SUBJECT: pki/NAME.{crt,key}, a client certificate signed
# by the cluster's CA. Signed on every start, so it always matches the
# cluster's current CA.
client_cert() (
  umask 077
  k="$TSN_NODE/pki/$1"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "$2" -keyout "$k.key" -out "$k.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
    "extendedKeyUsage=clientAuth" >"$k.ext"
  openssl x509 -req -in "$k.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 365 -extfile "$k.ext" -out "$k.crt" 2>/dev/null
  rm -f "$k.csr" "$k.ext"
)
# The kubelet: the Node authorizer and NodeRestriction accept
# CN=system:node:<name>, O=system:nodes; no TLS bootstrap needed.
client_cert kubelet "/O=system:nodes/CN=system:node:$TSN_NODE_NAME"
# kube-proxy: the default ClusterRoleBinding system:node-proxier grants the
# user system:kube-proxy what it needs (Services, EndpointSlices, Nodes,
# Events).
client_cert kube-proxy "/CN=system:kube-proxy"

# kubeconfig FILE USER: a kubeconfig for the API server with pki/USER.*.
kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: trainsonnet
  cluster:
    server: $APISERVER
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user:
    client-certificate: $TSN_NODE/pki/$2.crt
    client-key: $TSN_NODE/pki/$2.key
contexts:
- name: $2
  context: {cluster: trainsonnet, user: $2}
current-context: $2
EOF
}

# ------------------------------------------------------- host state records
# The kubelet rewrites these kernel settings; down.sh puts them back.
sysctl -e "${TSN_SYSCTLS[@]}" >"$TSN_NODE/sysctl.saved"
# Host directories that the kubelet, containerd or CNI create whatever their
# configuration says (the paths are fixed in their code): /var/log/containers
# (kubelet's log symlinks), /var/lib/kubelet/device-plugins (kubelet's device
# manager socket), /var/lib/cni (CNI result cache), /run/containerd/s (shim
# sockets). down.sh removes them again if they did not exist before.
for d in /var/log/containers /var/lib/kubelet /var/lib/cni /run/containerd; do
  [ -e "$d" ] || created "dir $d"
done

# ------------------------------------------------------------------ network
# One Linux bridge holds the node IP. The CNI bridge plugin attaches each pod
# with a veth pair. isGateway=false and ipMasq=false: the plugin then neither
# turns on net.ipv4.ip_forward nor adds NAT rules, and pods get the on-link
# route plus one for the service CIDR via the node IP: they reach each
# other, the node IP (DNS, kubelet), ClusterIPs, and nothing beyond this
# machine.
#
# A ClusterIP packet from a pod arrives on the bridge, kube-proxy's DNAT
# turns it into one for a pod on the same bridge, and the node routes it
# back out there. That needs forwarding on the bridge alone (where
# br_netfilter's bridge-nf-call-iptables is on, as here, the kernel sends
# such "bridged DNAT" packets on without it, but not elsewhere). The
# global net.ipv4.ip_forward stays as it is, so nothing arriving on another
# interface is forwarded. The service CIDR's route on the bridge sends the
# node's own ClusterIP traffic there too, and keeps a packet to a ClusterIP
# without a Service from leaving the machine. Route and setting go with the
# bridge.
#
# nf_call_iptables on the bridge (not the global bridge-nf-call-iptables
# sysctl, which is every bridge's): IPv4 frames between two pods on it go
# through netfilter's hooks, kube-network-policies' postrouting chain
# included. Without it, NetworkPolicies would only hold for traffic the
# node routes, and pods on one bridge would reach each other regardless.
bridge_opts=()
if [ "$TSN_NETPOL" = 1 ]; then bridge_opts=(nf_call_iptables 1); fi
ip link add "$TSN_BRIDGE" type bridge "${bridge_opts[@]}"
created "bridge $TSN_BRIDGE"
# Its MAC address, pinned: a bridge whose address was never set takes the
# lowest of its ports', so it changed whenever a pod's veth came or went.
# Running pods kept the old one for the node IP in their ARP cache for
# ~30 s, and their frames to it (DNS to CoreDNS) went to a veth or nowhere:
# a launcher could not resolve its workers to tell them to stop once
# other pods had ended (TestOpenMPI: 3 of 7 runs under CPU load).
ip link set "$TSN_BRIDGE" address "$(cat "/sys/class/net/$TSN_BRIDGE/address")"
ip addr add "$TSN_NODE_IP/${TSN_POD_SUBNET#*/}" dev "$TSN_BRIDGE"
ip link set "$TSN_BRIDGE" up
ip route add "$SERVICE_CIDR" dev "$TSN_BRIDGE" src "$TSN_NODE_IP"
sysctl -q -w "net.ipv4.conf.$TSN_BRIDGE.forwarding=1"
cat >"$TSN_NODE/cni/net.d/10-trainsonnet.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "trainsonnet",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$TSN_BRIDGE",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$TSN_NODE/cni/ipam",
        "ranges": [[{ "subnet": "$TSN_POD_SUBNET", "gateway": "$TSN_NODE_IP" }]],
        "routes": [{ "dst": "$SERVICE_CIDR", "gw": "$TSN_NODE_IP" }]
      }
    }
  ]
}
EOF

# ------------------------------------------------------------------ cgroups
# The kubelet puts kubepods/ under cgroupRoot and requires it to exist in
# every v1 hierarchy; runc also uses it in the v2 hierarchy of a hybrid
# host (/sys/fs/cgroup/unified). Make it in all of them, so that down.sh
# knows every cgroup of this node. A fresh v1 cpuset cgroup has empty
# cpus/mems; copy them from the parent. (A pure cgroup v2 host has one
# hierarchy, /sys/fs/cgroup itself; not tested.)
if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
  hierarchies=(/sys/fs/cgroup)
else
  hierarchies=()
  for h in /sys/fs/cgroup/*/; do
    case "$(stat -f -c %T "$h")" in cgroupfs | cgroup2fs) hierarchies+=("${h%/}") ;; esac
  done
fi
for h in "${hierarchies[@]}"; do
  mkdir -p "$h$TSN_CGROUP_ROOT"   # -p: adopt a leftover of a lost earlier run
  created "cgroup $h$TSN_CGROUP_ROOT"
  if [ -f "$h/cpuset.cpus" ] && [ ! -f "$h/cgroup.controllers" ]; then
    cat "$h/cpuset.cpus" >"$h$TSN_CGROUP_ROOT/cpuset.cpus"
    cat "$h/cpuset.mems" >"$h$TSN_CGROUP_ROOT/cpuset.mems"
  fi
done

# --------------------------------------------------------------- containerd
SOCK="$TSN_NODE/containerd/containerd.sock"
cat >"$TSN_NODE/containerd/config.toml" <<EOF
version = 2
root = "$TSN_NODE/containerd/root"
state = "$TSN_NODE/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$SOCK"

[plugins."io.containerd.internal.v1.opt"]
  path = "$TSN_NODE/containerd/opt"

# Unused (the CRI runs runc through io.containerd.runc.v2), but the tasks
# service needs it loaded; keep its runc state out of /run/containerd too.
[plugins."io.containerd.runtime.v1.linux"]
  runtime_root = "$TSN_NODE/containerd/runc-v1"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # true only where CAP_SYS_RESOURCE is missing: clamps every container's
  # oom_score_adj to containerd's own instead of the CRI's -998, which no
  # process may set without that capability (runc: "can't get final child's
  # PID from pipe: EOF").
  restrict_oom_score_adj = $restrict_oom
  # Pod network namespaces under our state dir, not in /run/netns: there
  # anyone's "ip netns add" bind-mounts /run/netns over itself, which
  # hides the mounts containerd made and makes their removal fail with
  # EBUSY (pods then hang in Terminating).
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # No systemd: cgroupfs, like the kubelet's cgroupDriver.
        SystemdCgroup = false
        # runc's state next to ours, not in /run/containerd/runc.
        Root = "$TSN_NODE/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$TSN_CNI_BIN_DIR"
    conf_dir = "$TSN_NODE/cni/net.d"
    max_conf_num = 1
EOF
t_node=$(date +%s.%N)
start containerd "$(command -v containerd)" --config "$TSN_NODE/containerd/config.toml"
wait_for containerd "containerd" ctr --address "$SOCK" version

ctr_k8s=(ctr --address "$SOCK" --namespace k8s.io)
for archive in "$PAUSE_ARCHIVE" "$IMAGE_ARCHIVE"; do
  t=$(date +%s.%N)
  "${ctr_k8s[@]}" images import --snapshotter overlayfs "$archive" >/dev/null
  ts_log "imported $(cat "$(dirname "$archive")/ref") ($(du -h "$archive" | cut -f1)) in $(ts_since "$t")"
done
images="$("${ctr_k8s[@]}" images ls -q)"
for ref in "$PAUSE_IMAGE" "$TEST_IMAGE" "$ENTRYPOINT_IMAGE"; do
  grep -qxF "$ref" <<<"$images" || ts_die "image $ref missing after the import"
done

# ------------------------------------------------------------------ CoreDNS
# A host process on the node IP instead of a Deployment: no image, and no
# Service IP, which only kube-proxy (not run here) would route. It answers
# <pod>.<service>.<namespace>.svc.cluster.local from the EndpointSlices.
# Only the cluster zones: names outside get REFUSED at once (a "." zone
# without a forward plugin answers SERVFAIL, which resolvers retry, and ssh
# then fails with "Temporary failure in name resolution").
cat >"$TSN_NODE/coredns/Corefile" <<EOF
cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
    bind $TSN_NODE_IP
    ready $TSN_NODE_IP:$TSN_DNS_READY_PORT
    errors
    log . "{remote} {type} {name} {rcode} {duration}"
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $ADMIN_KUBECONFIG
        pods insecure
        ttl 5
    }
}
EOF
start coredns "$TSN_COREDNS_BIN" -conf "$TSN_NODE/coredns/Corefile"
wait_for coredns "CoreDNS ($TSN_NODE_IP:53)" tsn_http_ok "$TSN_NODE_IP" "$TSN_DNS_READY_PORT" /ready

# ------------------------------------------------------------------ kubelet
kubeconfig "$TSN_NODE/kubelet/kubeconfig" kubelet
if [ "$restrict_oom" = true ]; then oom_score_adj=0; else oom_score_adj=-999; fi
cat >"$TSN_NODE/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$SOCK
# No systemd on the machine: cgroupfs, like containerd's SystemdCgroup=false.
# (containerd 1.6 lacks the RuntimeConfig RPC, so they are matched by hand.)
cgroupDriver: cgroupfs
cgroupRoot: $TSN_CGROUP_ROOT
failCgroupV1: false
failSwapOn: false
# -999 needs CAP_SYS_RESOURCE.
oomScoreAdj: $oom_score_adj
address: $TSN_NODE_IP
port: $TSN_KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: $TSN_NODE_IP
healthzPort: $TSN_KUBELET_HEALTHZ_PORT
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
rotateCertificates: false
serverTLSBootstrap: false
clusterDomain: cluster.local
clusterDNS: [$TSN_NODE_IP]
# Pods never see the host's resolvers.
resolvConf: ""
# Otherwise the kubelet adds KUBE-FIREWALL (with a DROP rule for 127.0.0.0/8
# from elsewhere), KUBE-KUBELET-CANARY and KUBE-IPTABLES-HINT to the host.
makeIPTablesUtilChains: false
podLogsDir: $TSN_NODE/pod-logs
volumePluginDir: $TSN_NODE/kubelet/volume-plugins
# Never delete the imported images (they cannot be pulled again).
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1%}
serializeImagePulls: false
EOF
start kubelet "$KUBELET" \
  --config="$TSN_NODE/kubelet/config.yaml" \
  --kubeconfig="$TSN_NODE/kubelet/kubeconfig" \
  --root-dir="$TSN_NODE/kubelet/root" \
  --cert-dir="$TSN_NODE/kubelet/pki" \
  --hostname-override="$TSN_NODE_NAME" \
  --node-ip="$TSN_NODE_IP" \
  --v="${TRAINSONNET_KUBELET_VERBOSITY:-1}"
t_kubelet=$(date +%s.%N)
wait_for kubelet "kubelet healthz" tsn_http_ok "$TSN_NODE_IP" "$TSN_KUBELET_HEALTHZ_PORT" /healthz
node_ready() {
  [ "$(kc get node "$TSN_NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
wait_for kubelet "node $TSN_NODE_NAME Ready" node_ready
ts_log "kubelet start -> Ready: $(ts_since "$t_kubelet"); node (containerd -> Ready): $(ts_since "$t_node")"

# --------------------------------------------------------------- kube-proxy
# A host process like the kubelet, started once the Node exists (it reads
# its Node). The flags keep it off what is not its to change on a shared
# machine:
#   --bind-address       the node's primary IP (it binds nothing there)
#   --cluster-cidr       the pod range: traffic from elsewhere is "external"
#   --masquerade-all     SNAT every ClusterIP connection to the node IP, so
#                        that the backend pod answers through the node, which
#                        undoes the DNAT. Without it a pod that reaches a pod
#                        on the same bridge gets the reply straight from the
#                        pod IP and drops it, unless br_netfilter is on.
#   --nodeport-addresses NodePorts on the node IP only: not on the machine's
#                        other addresses, and not on 127.0.0.1, for which it
#                        would set net.ipv4.conf.all.route_localnet=1
#   --conntrack-*=0      leave the host's nf_conntrack_max and TCP timeouts
#                        as they are (by default it lowers or raises them)
#   --oom-score-adj      -999 needs CAP_SYS_RESOURCE (as for the kubelet)
#   --healthz/metrics-bind-address  on the node IP, not 0.0.0.0
kubeconfig "$TSN_NODE/kube-proxy/kubeconfig" kube-proxy
# nftables mode: kube-proxy's rules live in its tables "ip kube-proxy" and
# "ip6 kube-proxy", and nothing else is touched. iptables mode also leaves
# behind the nftables tables iptables-nft made for it (ip/ip6 filter, nat,
# mangle; empty once down.sh has removed the KUBE-* chains) and two nfacct
# counters. Record those that do not exist yet, for down.sh (which needs
# nft and nfacct to remove them).
if [ "$TSN_PROXY_MODE" = iptables ]; then
  if command -v nft >/dev/null; then
    for family in ip ip6; do
      for table in filter nat mangle; do
        nft list table "$family" "$table" >/dev/null 2>&1 || created "nft-table $family $table"
      done
    done
  fi
  if command -v nfacct >/dev/null; then
    for counter in ct_state_invalid_dropped_pkts localhost_nps_accepted_pkts; do
      nfacct get "$counter" >/dev/null 2>&1 || created "nfacct $counter"
    done
  fi
fi
t_proxy=$(date +%s.%N)
start kube-proxy "$KUBE_PROXY" \
  --kubeconfig="$TSN_NODE/kube-proxy/kubeconfig" \
  --hostname-override="$TSN_NODE_NAME" \
  --bind-address="$TSN_NODE_IP" \
  --proxy-mode="$TSN_PROXY_MODE" \
  --cluster-cidr="$TSN_POD_SUBNET" \
  --masquerade-all \
  --nodeport-addresses="$TSN_NODE_IP/32" \
  --conntrack-max-per-core=0 \
  --conntrack-tcp-timeout-established=0 \
  --conntrack-tcp-timeout-close-wait=0 \
  --oom-score-adj="$oom_score_adj" \
  --healthz-bind-address="$TSN_NODE_IP:$TSN_PROXY_HEALTHZ_PORT" \
  --metrics-bind-address="$TSN_NODE_IP:$TSN_PROXY_METRICS_PORT" \
  --v="${TRAINSONNET_PROXY_VERBOSITY:-1}"
# /healthz answers 200 before the first sync; this metric appears with it.
# (grep without -q reads to the end: with pipefail, an early exit would fail
# the pipeline through the writer's SIGPIPE.)
proxy_synced() {
  tsn_http_get "$TSN_NODE_IP" "$TSN_PROXY_METRICS_PORT" /metrics |
    grep '^kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} [1-9]' >/dev/null
}
wait_for kube-proxy "kube-proxy ($TSN_PROXY_MODE mode) rules synced" proxy_synced
wait_for kube-proxy "kube-proxy healthz" tsn_http_ok "$TSN_NODE_IP" "$TSN_PROXY_HEALTHZ_PORT" /healthz
ts_log "kube-proxy start -> synced: $(ts_since "$t_proxy")"

# ---------------------------------------------------- kube-network-policies
# NetworkPolicy enforcement, as in kind: for the pods of this node that a
# NetworkPolicy selects, the controller's nftables table (inet
# $TSN_NETPOL_TABLE, a postrouting chain) sends each new connection's first
# packet to NFQUEUE $TSN_NETPOL_QUEUE; the controller accepts or drops it by
# the policies. Packets from the node's root processes (the kubelet's
# probes, CoreDNS's answers) and of established connections pass unqueued.
# Not fail-open: while the table exists and nothing reads the queue, those
# packets are dropped, so down.sh deletes the table in any case. Its client
# is the admin kubeconfig, as CoreDNS's (it reads Pods, Namespaces and
# NetworkPolicies, and writes Events).
if [ "$TSN_NETPOL" = 1 ]; then
  t_netpol=$(date +%s.%N)
  start kube-network-policies "$TSN_NETPOL_BIN" \
    --kubeconfig="$ADMIN_KUBECONFIG" \
    --hostname-override="$TSN_NODE_NAME" \
    --nftables-table="$TSN_NETPOL_TABLE" \
    --nfqueue-id="$TSN_NETPOL_QUEUE" \
    --metrics-bind-address="$TSN_NODE_IP:$TSN_NETPOL_METRICS_PORT" \
    --v="${TRAINSONNET_NETPOL_VERBOSITY:-1}"
  # The table appears once its informers have synced; the queue is bound
  # right after (a line for it in nfnetlink_queue, whose 2nd field is the
  # reader's port id).
  netpol_ready() {
    nft list table inet "$TSN_NETPOL_TABLE" >/dev/null 2>&1 &&
      awk -v q="$TSN_NETPOL_QUEUE" '$1 == q && $2 != 0 { found = 1 } END { exit !found }' /proc/net/netfilter/nfnetlink_queue 2>/dev/null
  }
  wait_for kube-network-policies "kube-network-policies: table inet $TSN_NETPOL_TABLE, queue $TSN_NETPOL_QUEUE read" netpol_ready
  ts_log "kube-network-policies start -> ready: $(ts_since "$t_netpol")"
fi

# ----------------------------------------------------------------- env file
tsn_env_strip
{
  printf '%s\n' "$TSN_ENV_BEGIN"
  printf 'export TRAINSONNET_E2E_NODE=1\n'
  printf 'export TRAINSONNET_NODE_NAME=%q\n' "$TSN_NODE_NAME"
  printf 'export TRAINSONNET_NODE_IP=%q\n' "$TSN_NODE_IP"
  printf 'export TRAINSONNET_NODE_BRIDGE=%q\n' "$TSN_BRIDGE"
  printf 'export TRAINSONNET_TEST_IMAGE=%q\n' "$TEST_IMAGE"
  # the test image with python3 /training/train.py as its ENTRYPOINT
  printf 'export TRAINSONNET_ENTRYPOINT_IMAGE=%q\n' "$ENTRYPOINT_IMAGE"
  printf 'export TRAINSONNET_PAUSE_IMAGE=%q\n' "$PAUSE_IMAGE"
  printf 'export TRAINSONNET_NODE_STATE=%q\n' "$TSN_NODE"
  # 1: NetworkPolicies are enforced (kube-network-policies runs).
  printf 'export TRAINSONNET_NODE_NETPOL=%q\n' "$TSN_NETPOL"
  # Differs on every start; node.FromEnv reads it, so `go test` never
  # answers from its test cache for a node it did not run against.
  printf 'export TRAINSONNET_NODE_UP_ID=%q\n' "$(date +%s.%N)-$$"
  printf '%s\n' "$TSN_ENV_END"
} >>"$TS_STATE/env"

started=()
for name in "${TSN_DAEMONS[@]}"; do
  if pid="$(ts_recorded_pid "$name")"; then started+=("$name=$pid"); fi
done
ts_log "node $TSN_NODE_NAME up in $(ts_since): ${started[*]}"
ts_log "test image: $TEST_IMAGE"
