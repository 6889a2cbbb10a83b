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
#
# and wait until the Node is Ready. Then append to $STATE/env:
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
#   (/trainsonnet-node), TRAINSONNET_NODE_WAIT (120 s per step),
#   TRAINSONNET_KUBELET_VERBOSITY (1)
set -euo pipefail
TSN_NAME="test/node/up.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# ------------------------------------------------------------ preconditions
[ "$(id -u)" = 0 ] || tsn_die "must run as root"
for tool in containerd ctr runc ip openssl flock; do
  command -v "$tool" >/dev/null || tsn_die "$tool missing; run test/node/build.sh"
done
for plugin in bridge host-local loopback; do
  [ -x "$TSN_CNI_BIN_DIR/$plugin" ] || tsn_die "CNI plugin $plugin missing in $TSN_CNI_BIN_DIR; run test/node/build.sh"
done
KUBELET="$TSN_K8S_BIN/kubelet"
KUBECTL="$TSN_K8S_BIN/kubectl"
PAUSE_ARCHIVE="$(tsn_pause_archive)"
IMAGE_ARCHIVE="$(tsn_image_archive)"
PAUSE_IMAGE="$(tsn_pause_ref)"
TEST_IMAGE="$(tsn_image_ref)"
for f in "$KUBELET" "$KUBECTL" "$TSN_COREDNS_BIN"; do
  [ -x "$f" ] || tsn_die "missing $f; run test/cluster/build.sh and test/node/build.sh"
done
for f in "$PAUSE_ARCHIVE" "$IMAGE_ARCHIVE"; do
  [ -f "$f" ] || tsn_die "missing $f; run test/node/build.sh (the image recipe changed?)"
done

[ -d "$TSN_STATE" ] || tsn_die "no control plane state in $TSN_STATE; run test/cluster/up.sh first"
TSN_STATE="$(cd "$TSN_STATE" && pwd -P)"
TSN_NODE="$TSN_STATE/node"
PKI="$TSN_STATE/pki"
ADMIN_KUBECONFIG="$TSN_STATE/kubeconfig"
for f in "$PKI/ca.crt" "$PKI/ca.key" "$ADMIN_KUBECONFIG" "$TSN_STATE/env"; do
  [ -s "$f" ] || tsn_die "missing $f; run test/cluster/up.sh first"
done
kc() { "$KUBECTL" --kubeconfig="$ADMIN_KUBECONFIG" --request-timeout=5s "$@"; }
kc get --raw=/readyz >/dev/null 2>&1 || tsn_die "the API server of $ADMIN_KUBECONFIG is not ready; run test/cluster/up.sh"
# The kubelet talks to the API server that the admin kubeconfig names.
APISERVER="$(kc config view --minify -o 'jsonpath={.clusters[0].cluster.server}')"
[ -n "$APISERVER" ] || tsn_die "no server URL in $ADMIN_KUBECONFIG"

# Serialise with test/cluster/up.sh/down.sh and other node up/down runs on
# this state dir. Every daemon started below gets the lock fd closed (8>&-),
# so the lock ends with this script.
exec 8>"$TSN_STATE/.lock"
flock -w 120 8 || tsn_die "could not lock $TSN_STATE within 120s (another up.sh/down.sh?)"

mkdir -p "$TSN_NODE/pids"
running=()
for name in containerd coredns kubelet; do
  if pid="$(tsn_pid "$name")"; then running+=("$name=$pid"); fi
done
[ "${#running[@]}" -eq 0 ] || tsn_die "a node from $TSN_NODE is running (${running[*]}); run test/node/down.sh first"
if [ -s "$TSN_NODE/created" ] || [ -s "$TSN_NODE/sysctl.saved" ]; then
  tsn_log "leftovers of an earlier node found; cleaning up with down.sh first"
  flock -u 8
  bash "$TSN_DIR/down.sh"
  flock -w 120 8 || tsn_die "could not lock $TSN_STATE within 120s"
fi

if ip link show "$TSN_BRIDGE" >/dev/null 2>&1; then
  tsn_die "network interface $TSN_BRIDGE exists already; remove it or set TRAINSONNET_NODE_BRIDGE"
fi
if ip -o -4 addr show | awk -v ip="$TSN_NODE_IP" 'index($4, ip "/") == 1 { found = 1 } END { exit !found }'; then
  tsn_die "$TSN_NODE_IP is in use on this machine; set TRAINSONNET_NODE_IP and TRAINSONNET_POD_SUBNET"
fi
if [ -n "$(ip -4 route show "$TSN_POD_SUBNET" 2>/dev/null)" ]; then
  tsn_die "a route for $TSN_POD_SUBNET exists; set TRAINSONNET_NODE_IP and TRAINSONNET_POD_SUBNET"
fi

# CAP_SYS_RESOURCE (bit 24) missing from the bounding set: nothing here may
# lower an oom_score_adj, and runc dies setting the CRI's -998 on a sandbox.
capbnd="$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)"
if (((16#$capbnd >> 24) & 1)); then restrict_oom=false; else restrict_oom=true; fi

# From here on a failure tears down whatever was set up.
on_exit() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    tsn_log "start-up failed (rc=$rc); tearing down (logs: $TSN_NODE/logs)"
    flock -u 8 || true
    bash "$TSN_DIR/down.sh" || true
  fi
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Never rm -rf across a mount (an overlay rootfs would lose its files).
if awk -v n="$TSN_NODE/" 'index($5, n) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
  tsn_die "mounts left under $TSN_NODE; run test/node/down.sh"
fi
rm -rf "$TSN_NODE"/{logs,pki,cni,containerd,coredns,kubelet,pod-logs}
mkdir -p "$TSN_NODE"/{logs,pki,cni/net.d,cni/ipam,containerd,coredns,kubelet,pod-logs}
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
  tsn_record "$name" "$pid" "$exe" || tsn_die "$name exited at once: $(tail -n 5 "$TSN_NODE/logs/$name.log")"
  # The record names the daemon's binary; wait for setsid to exec it.
  for _ in $(seq 50); do
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" != "$exe" ] || return 0
    sleep 0.02
  done
  tsn_die "$name: pid $pid did not become $exe: $(tail -n 5 "$TSN_NODE/logs/$name.log")"
}

# wait_for NAME WHAT CMD...: polls CMD until it succeeds; fails early if NAME died.
wait_for() {
  local name="$1" what="$2" deadline t0
  shift 2
  t0=$(date +%s.%N)
  deadline=$(($(date +%s) + TSN_WAIT))
  until "$@" >/dev/null 2>&1; do
    if ! tsn_pid "$name" >/dev/null; then
      tail -n 20 "$TSN_NODE/logs/$name.log" >&2
      tsn_die "$name exited; log: $TSN_NODE/logs/$name.log"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      tail -n 20 "$TSN_NODE/logs/$name.log" >&2
      tsn_die "timed out after ${TSN_WAIT}s waiting for $what; log: $TSN_NODE/logs/$name.log"
    fi
    sleep 0.1
  done
  tsn_log "$what: ready in $(tsn_since "$t0") (total $(tsn_since))"
}

# ---------------------------------------------------------------------- PKI
# The kubelet's client identity: the Node authorizer and NodeRestriction
# accept CN=system:node:<name>, O=system:nodes; no TLS bootstrap needed.
# Signed on every start, so it always matches the cluster's current CA.
(
  umask 077
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/O=system:nodes/CN=system:node:$TSN_NODE_NAME" \
    -keyout "$TSN_NODE/pki/kubelet.key" -out "$TSN_NODE/pki/kubelet.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
    "extendedKeyUsage=clientAuth" >"$TSN_NODE/pki/kubelet.ext"
  openssl x509 -req -in "$TSN_NODE/pki/kubelet.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 365 -extfile "$TSN_NODE/pki/kubelet.ext" \
    -out "$TSN_NODE/pki/kubelet.crt" 2>/dev/null
  rm -f "$TSN_NODE/pki/kubelet.csr" "$TSN_NODE/pki/kubelet.ext"
)

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
# turns on net.ipv4.ip_forward nor adds NAT rules, and pods get only the
# on-link route: they reach each other, the node IP (DNS, kubelet) and
# nothing beyond this machine.
ip link add "$TSN_BRIDGE" type bridge
created "bridge $TSN_BRIDGE"
ip addr add "$TSN_NODE_IP/${TSN_POD_SUBNET#*/}" dev "$TSN_BRIDGE"
ip link set "$TSN_BRIDGE" up
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
        "ranges": [[{ "subnet": "$TSN_POD_SUBNET", "gateway": "$TSN_NODE_IP" }]]
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
  tsn_log "imported $(cat "$(dirname "$archive")/ref") ($(du -h "$archive" | cut -f1)) in $(tsn_since "$t")"
done
images="$("${ctr_k8s[@]}" images ls -q)"
for ref in "$PAUSE_IMAGE" "$TEST_IMAGE"; do
  grep -qxF "$ref" <<<"$images" || tsn_die "image $ref missing after the import"
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
cat >"$TSN_NODE/kubelet/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: trainsonnet
  cluster:
    server: $APISERVER
    certificate-authority: $PKI/ca.crt
users:
- name: kubelet
  user:
    client-certificate: $TSN_NODE/pki/kubelet.crt
    client-key: $TSN_NODE/pki/kubelet.key
contexts:
- name: kubelet
  context: {cluster: trainsonnet, user: kubelet}
current-context: kubelet
EOF
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
tsn_log "kubelet start -> Ready: $(tsn_since "$t_kubelet"); node (containerd -> Ready): $(tsn_since "$t_node")"

# ----------------------------------------------------------------- env file
tsn_env_strip
{
  printf '%s\n' "$TSN_ENV_BEGIN"
  printf 'export TRAINSONNET_E2E_NODE=1\n'
  printf 'export TRAINSONNET_NODE_NAME=%q\n' "$TSN_NODE_NAME"
  printf 'export TRAINSONNET_NODE_IP=%q\n' "$TSN_NODE_IP"
  printf 'export TRAINSONNET_TEST_IMAGE=%q\n' "$TEST_IMAGE"
  printf 'export TRAINSONNET_PAUSE_IMAGE=%q\n' "$PAUSE_IMAGE"
  printf 'export TRAINSONNET_NODE_STATE=%q\n' "$TSN_NODE"
  # Differs on every start; node.FromEnv reads it, so `go test` never
  # answers from its test cache for a node it did not run against.
  printf 'export TRAINSONNET_NODE_UP_ID=%q\n' "$(date +%s.%N)-$$"
  printf '%s\n' "$TSN_ENV_END"
} >>"$TSN_STATE/env"

started=()
for name in containerd coredns kubelet; do started+=("$name=$(tsn_pid "$name")"); done
tsn_log "node $TSN_NODE_NAME up in $(tsn_since): ${started[*]}"
tsn_log "test image: $TEST_IMAGE"
