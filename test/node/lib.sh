# shellcheck shell=bash disable=SC2034  # the settings are used by the scripts that source this
# Shared settings and helpers for the scripts in test/node/. Sourced, never
# executed. Every setting can be overridden through the environment.
#
# The node sits on top of the control plane of test/cluster/: it shares its
# binary cache ($TRAINSONNET_CACHE) and its state directory
# ($TRAINSONNET_STATE), and keeps its own state in $TRAINSONNET_STATE/node.

TSN_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TSN_REPO="$(cd "$TSN_DIR/../.." && pwd)"

# The control plane's settings: its pinned versions (which kubelet and
# kubectl the node uses), the binary cache (TS_CACHE, TS_K8S_BIN) and the
# state directory (TS_STATE), and the harness's shell library (../lib.sh).
# shellcheck source-path=SCRIPTDIR source=../cluster/common.sh
. "$TSN_REPO/test/cluster/common.sh"
# CoreDNS v1.14.7 is the last release on client-go 0.34 (v1.15 needs 0.37).
TRAINSONNET_COREDNS_VERSION="${TRAINSONNET_COREDNS_VERSION:-v1.14.7}"
# kube-network-policies (NetworkPolicy enforcement, kind's choice): v0.7.0 is
# the last release without NRI, which Debian's containerd 1.6 lacks (v0.8.0
# falls back to the API server, but a controller built with NRI off
# dereferences its missing NRI plugin on any packet of an unknown address).
TRAINSONNET_NETPOL_VERSION="${TRAINSONNET_NETPOL_VERSION:-v0.7.0}"
TRAINSONNET_NETPOL_NFTABLES_VERSION="${TRAINSONNET_NETPOL_NFTABLES_VERSION:-v0.3.0}"

TSN_COREDNS_BIN="$TS_CACHE/coredns-$TRAINSONNET_COREDNS_VERSION/coredns"
TSN_NETPOL_BIN="$TS_CACHE/kube-network-policies-$TRAINSONNET_NETPOL_VERSION/kube-network-policies"
TSN_NODE="$TS_STATE/node"

# The node. The bridge holds the node IP, which is also the kubelet's
# address and the pods' DNS server; pods get addresses from POD_SUBNET.
TSN_NODE_NAME="${TRAINSONNET_NODE_NAME:-trainsonnet-node}"
TSN_BRIDGE="${TRAINSONNET_NODE_BRIDGE:-ts0}"
TSN_NODE_IP="${TRAINSONNET_NODE_IP:-10.244.0.1}"
TSN_POD_SUBNET="${TRAINSONNET_POD_SUBNET:-10.244.0.0/24}"
TSN_KUBELET_PORT="${TRAINSONNET_KUBELET_PORT:-10250}"
TSN_KUBELET_HEALTHZ_PORT="${TRAINSONNET_KUBELET_HEALTHZ_PORT:-10248}"
TSN_DNS_READY_PORT="${TRAINSONNET_DNS_READY_PORT:-8181}"
# kube-proxy: its health and metrics servers, on the node IP.
TSN_PROXY_HEALTHZ_PORT="${TRAINSONNET_PROXY_HEALTHZ_PORT:-10256}"
TSN_PROXY_METRICS_PORT="${TRAINSONNET_PROXY_METRICS_PORT:-10249}"
# nftables: kube-proxy keeps its rules in tables of its own, which down.sh
# deletes whole. iptables works too, but leaves more behind (see up.sh).
TSN_PROXY_MODE="${TRAINSONNET_PROXY_MODE:-nftables}"
# kube-network-policies: its nftables table (family inet, deleted whole by
# down.sh), its NFQUEUE number and its metrics server (on the node IP).
TSN_NETPOL="${TRAINSONNET_NETPOL:-1}"
TSN_NETPOL_TABLE="${TRAINSONNET_NETPOL_TABLE:-trainsonnet-netpol}"
TSN_NETPOL_QUEUE="${TRAINSONNET_NETPOL_QUEUE:-100}"
TSN_NETPOL_METRICS_PORT="${TRAINSONNET_NETPOL_METRICS_PORT:-9080}"
# The ClusterIP range; empty: the one the API server allocates from (its
# ServiceCIDR "kubernetes").
TSN_SERVICE_CIDR="${TRAINSONNET_SERVICE_CIDR:-}"
# The kubelet's cgroups live under this cgroup (every v1 hierarchy), so the
# teardown removes exactly this node's cgroups and nothing else's.
TSN_CGROUP_ROOT="${TRAINSONNET_NODE_CGROUP_ROOT:-/trainsonnet-node}"
TSN_CNI_BIN_DIR="${TRAINSONNET_CNI_BIN_DIR:-/usr/lib/cni}"   # Debian's path
TSN_WAIT="${TRAINSONNET_NODE_WAIT:-180}"

# The kernel settings the kubelet rewrites (protectKernelDefaults=false),
# and those kube-proxy would (up.sh's flags keep it from doing so: localhost
# NodePorts set route_localnet, its conntrack defaults the rest); up.sh
# saves them, down.sh restores any that changed.
TSN_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward
  net.ipv4.conf.all.route_localnet net.netfilter.nf_conntrack_max
  net.netfilter.nf_conntrack_tcp_timeout_established net.netfilter.nf_conntrack_tcp_timeout_close_wait)

# Debian packages the node needs on the host (nftables: kube-proxy's nft).
TSN_APT_PACKAGES=(containerd runc containernetworking-plugins debootstrap iptables iproute2 nftables)

# The daemons up.sh starts, in order (each recorded in $TSN_NODE/pids/).
TSN_DAEMONS=(containerd coredns kubelet kube-proxy kube-network-policies)

# Images. The tag of each is a hash of its recipe: change a file of the
# recipe and the tag, the cache keys and the imported reference all change.
TSN_IMAGE_REPO="${TRAINSONNET_IMAGE_REPO:-localhost/trainsonnet-mpi}"
TSN_PAUSE_REPO="localhost/trainsonnet-pause"
# The same image with the training program as its ENTRYPOINT
# (image/entrypoint.json: python3 /training/train.py, the program the jobs
# mount there), as an image built for its job is: what an operator's job
# whose container gives only args runs. One more manifest in the archive.
TSN_ENTRYPOINT_REPO="localhost/trainsonnet-entrypoint"

TS_NAME="${TS_NAME:-test/node}"
TS_PIDS="$TSN_NODE/pids"

# tsn_hash FILE... prints a 12-hex-digit hash of the files' names (relative
# to the repository) and contents.
tsn_hash() {
  local f
  for f in "$@"; do
    printf '%s\n' "${f#"$TSN_REPO"/}"
    cat "$f"
  done | sha256sum | cut -c1-12
}

# Recipes. The rootfs depends on the rootfs script and package list only; the
# image tag also on the archive writer (its output format and image config).
tsn_rootfs_key() { tsn_hash "$TSN_DIR/image/build-rootfs.sh" "$TSN_DIR/image/packages"; }
tsn_image_tag() {
  tsn_hash "$TSN_DIR/image/build-rootfs.sh" "$TSN_DIR/image/packages" \
    "$TSN_DIR/image/config.json" "$TSN_DIR/image/entrypoint.json" "$TSN_DIR/mkimage/main.go"
}
tsn_pause_tag() { tsn_hash "$TSN_DIR/pause/main.go" "$TSN_DIR/pause/config.json" "$TSN_DIR/mkimage/main.go"; }
tsn_tools_key() { tsn_hash "$TSN_DIR/pause/main.go" "$TSN_DIR/mkimage/main.go"; }

tsn_image_ref() { printf '%s:%s\n' "$TSN_IMAGE_REPO" "$(tsn_image_tag)"; }
tsn_entrypoint_ref() { printf '%s:%s\n' "$TSN_ENTRYPOINT_REPO" "$(tsn_image_tag)"; }
tsn_pause_ref() { printf '%s:%s\n' "$TSN_PAUSE_REPO" "$(tsn_pause_tag)"; }
tsn_rootfs_dir() { printf '%s\n' "$TS_CACHE/mpi-rootfs-$(tsn_rootfs_key)"; }
tsn_image_archive() { printf '%s\n' "$TS_CACHE/mpi-image-$(tsn_image_tag)/image.tar"; }
tsn_pause_archive() { printf '%s\n' "$TS_CACHE/pause-image-$(tsn_pause_tag)/image.tar"; }
tsn_tools_dir() { printf '%s\n' "$TS_CACHE/node-tools-$(tsn_tools_key)"; }

# Process records: ts_record, ts_recorded_pid and ts_stop of ../lib.sh, in
# $TSN_NODE/pids.

# tsn_http_get HOST PORT PATH: prints the whole HTTP/1.0 response to GET
# PATH, status line and headers included (no curl needed).
tsn_http_get() {
  # shellcheck disable=SC2016  # expanded by the inner bash
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2" &&
    printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$3" "$1" >&3 && cat <&3' _ "$@" 2>/dev/null
}

# tsn_http_ok HOST PORT PATH: succeeds if GET PATH answers 200 (no curl needed).
tsn_http_ok() {
  local resp
  # shellcheck disable=SC2016  # expanded by the inner bash
  resp="$(timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2" &&
    printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$3" "$1" >&3 && head -n1 <&3' _ "$@" 2>/dev/null)" || return 1
  [[ "$resp" == "HTTP/1."[01]" 200"* ]]
}

# The env file block that up.sh appends and down.sh removes.
TSN_ENV_BEGIN="# >>> test/node/up.sh (down.sh removes this block)"
TSN_ENV_END="# <<< test/node/up.sh"
tsn_env_strip() {
  local env="$TS_STATE/env"
  [ -f "$env" ] || return 0
  awk -v b="$TSN_ENV_BEGIN" -v e="$TSN_ENV_END" '$0 == b { skip = 1 } !skip { print } $0 == e { skip = 0 }' \
    "$env" >"$env.node-tmp" && mv -f "$env.node-tmp" "$env"
}
