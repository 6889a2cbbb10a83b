#!/usr/bin/env bash
# Build and cache everything the test node needs that test/cluster/build.sh
# does not (that one builds kubelet, kube-proxy and kubectl with the
# control plane):
#
#   packages  Debian packages on the host (containerd, runc, CNI plugins,
#             debootstrap, iptables, iproute2, nftables), installed only if
#             missing
#   coredns   a slim CoreDNS    $CACHE/coredns-<version>/coredns
#   netpol    kube-network-policies (NetworkPolicy enforcement)
#                               $CACHE/kube-network-policies-<version>/
#   tools     mkimage + pause   $CACHE/node-tools-<hash>/
#   images    the pause image   $CACHE/pause-image-<hash>/image.tar
#             the MPI rootfs    $CACHE/mpi-rootfs-<hash>/
#             the MPI image     $CACHE/mpi-image-<tag>/image.tar
#
#   build.sh [STEP...]          default: all steps, in the order above
#   build.sh prune              remove cached images/rootfs/tools of other
#                               recipe versions
#
# Every step skips what is already cached; cache keys are versions or hashes
# of the recipe files, so a changed recipe builds anew and an unchanged one
# costs nothing. A lock per step makes concurrent builds of one step wait
# for each other, while different steps run side by side (test/e2e.sh
# builds the image, which mostly waits on the network, beside the others).
# env: TRAINSONNET_CACHE (/var/cache/trainsonnet), GOCACHE/GOMODCACHE (go's
#      defaults; keep them at fixed paths between runs, see README.md)
set -euo pipefail
TS_NAME="test/node/build.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# The builds here are of wrapper modules under the cache, and of the test
# module's own tools (test/go.mod, which needs no workspace): never let a
# go.work take them over. Only the builds: the commands with-node.sh runs
# keep the workspace.
export GOWORK=off

[ "$(id -u)" = 0 ] || ts_die "must run as root (apt-get, debootstrap)"
mkdir -p "$TS_CACHE"

# locked STEP: runs step_STEP holding that step's lock.
locked() {
  (
    flock 9
    "step_$1"
  ) 9>"$TS_CACHE/.node-build-$1.lock"
}

step_packages() {
  local missing=() p
  for p in "${TSN_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -qx 'install ok installed' || missing+=("$p")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    ts_log "packages: all present"
    return
  fi
  local t0; t0=$(date +%s.%N)
  ts_log "packages: installing ${missing[*]}"
  # Try the existing package lists first; refresh them only if that fails.
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; then
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  fi
  ts_log "packages: installed in $(ts_since "$t0")"
}

step_coredns() {
  local src="$TSN_DIR/coredns/main.go" out="$TSN_COREDNS_BIN"
  local key; key="$(tsn_hash "$src")"
  if [ -x "$out" ] && [ "$(cat "$out.src" 2>/dev/null)" = "$key" ]; then
    ts_log "coredns: $out present"
    return
  fi
  local t0; t0=$(date +%s.%N)
  local mod="$TS_CACHE/build/coredns-$TRAINSONNET_COREDNS_VERSION"
  mkdir -p "$mod" "$(dirname "$out")"
  cp "$src" "$mod/main.go"
  if [ ! -f "$mod/go.mod" ]; then
    (cd "$mod" && go mod init trainsonnet.local/coredns-slim >/dev/null 2>&1 &&
      go mod edit -require="github.com/coredns/coredns@$TRAINSONNET_COREDNS_VERSION")
  fi
  # Only a require line and -mod=mod: go then fetches just the modules the
  # six plugins import. `go get` or `go mod tidy` of github.com/coredns/coredns
  # would download every plugin's dependencies (1.6-1.7 GB of modules).
  ts_log "coredns: building $TRAINSONNET_COREDNS_VERSION in $mod"
  (cd "$mod" && CGO_ENABLED=0 go build -mod=mod -tags trainsonnet_coredns -ldflags "-s -w" -o "$out.partial" .)
  mv "$out.partial" "$out"
  printf '%s\n' "$key" >"$out.src"
  ts_log "coredns: $("$out" -version | head -n1) built in $(ts_since "$t0")"
}

# kube-network-policies, with our main (netpol/main.go: a kubeconfig instead
# of upstream's in-cluster config), built like CoreDNS in a wrapper module
# under the cache that has only require lines, and one change to the
# controller (netpol/patch/nfqueue_xt.go: the xtables NFQUEUE target instead
# of nftables' queue expression, which needs a kernel module that not every
# kernel has). The module's source is copied out of the module cache,
# patched, and used through a replace directive. The checksum database has
# no record of sigs.k8s.io/kube-network-policies: GONOSUMDB for that one
# module's download.
step_netpol() {
  local main="$TSN_DIR/netpol/main.go" patch="$TSN_DIR/netpol/patch/nfqueue_xt.go" out="$TSN_NETPOL_BIN"
  local key; key="$(tsn_hash "$main" "$patch")"
  if [ -x "$out" ] && [ "$(cat "$out.src" 2>/dev/null)" = "$key" ]; then
    ts_log "kube-network-policies: $out present"
    return
  fi
  local t0; t0=$(date +%s.%N)
  local mod="$TS_CACHE/build/kube-network-policies-$TRAINSONNET_NETPOL_VERSION"
  local upstream="sigs.k8s.io/kube-network-policies@$TRAINSONNET_NETPOL_VERSION"
  local nosumdb="sigs.k8s.io/kube-network-policies${GONOSUMDB:+,$GONOSUMDB}"
  mkdir -p "$mod" "$(dirname "$out")"
  ts_log "kube-network-policies: building $TRAINSONNET_NETPOL_VERSION in $mod"
  local src
  src="$(GONOSUMDB="$nosumdb" GOFLAGS=-mod=mod go mod download -json "$upstream" |
    awk -F'"' '$2 == "Dir" { print $4 }')"
  [ -d "$src/pkg/networkpolicy" ] || ts_die "kube-network-policies: no source of $upstream in the module cache"
  rm -rf "$mod/src"
  cp -r "$src" "$mod/src"
  chmod -R u+w "$mod/src"
  local ctl="$mod/src/pkg/networkpolicy/controller.go"
  cp "$patch" "$mod/src/pkg/networkpolicy/nfqueue_xt.go"
  sed -i -e 's/^\(\t*\)queue := &expr.Queue{Num: uint16(c.config.QueueID)}$/\1queue := xtQueue(uint16(c.config.QueueID), c.config.FailOpen)/' \
    -e 's/^\(\t*\)queue.Flag = expr.QueueFlagBypass$/\1\/\/ the bypass flag: set by xtQueue/' "$ctl"
  if grep -q 'expr\.Queue' "$ctl" || [ "$(grep -c 'xtQueue(' "$ctl")" != 2 ]; then
    ts_die "kube-network-policies: $ctl does not have the two queue rules netpol/patch/ expects"
  fi
  cp "$main" "$mod/main.go"
  if [ ! -f "$mod/go.mod" ]; then
    (cd "$mod" && go mod init trainsonnet.local/kube-network-policies >/dev/null 2>&1)
  fi
  # v0.7.0 requires a pseudo-version of github.com/google/nftables that the
  # checksum database (as the proxy serves it) has no record of either; its
  # next release, v0.3.0, has one and builds the controller unchanged.
  (cd "$mod" && go mod edit -require="$upstream" -replace=sigs.k8s.io/kube-network-policies=./src \
    -require="github.com/google/nftables@$TRAINSONNET_NETPOL_NFTABLES_VERSION")
  (cd "$mod" && CGO_ENABLED=0 go build -mod=mod -tags trainsonnet_netpol -ldflags "-s -w" -o "$out.partial" .)
  mv "$out.partial" "$out"
  printf '%s\n' "$key" >"$out.src"
  ts_log "kube-network-policies: $TRAINSONNET_NETPOL_VERSION built in $(ts_since "$t0")"
}

step_tools() {
  local dir; dir="$(tsn_tools_dir)"
  if [ -x "$dir/mkimage" ] && [ -x "$dir/pause" ]; then
    ts_log "tools: $dir present"
    return
  fi
  local t0; t0=$(date +%s.%N)
  rm -rf "$dir.partial"
  mkdir -p "$dir.partial"
  (cd "$TSN_REPO/test" &&
    CGO_ENABLED=0 go build -o "$dir.partial/mkimage" ./node/mkimage &&
    CGO_ENABLED=0 go build -ldflags "-s -w" -o "$dir.partial/pause" ./node/pause)
  rm -rf "$dir"
  mv "$dir.partial" "$dir"
  ts_log "tools: built in $(ts_since "$t0")"
}

# make_archive ROOTFS REF CONFIG ARCHIVE [-also REF=CONFIG]...
make_archive() {
  local t0; t0=$(date +%s.%N)
  mkdir -p "$(dirname "$4")"
  "$(tsn_tools_dir)/mkimage" -rootfs "$1" -ref "$2" -config "$3" -out "$4" "${@:5}" >/dev/null
  printf '%s\n' "$2" >"$(dirname "$4")/ref"
  ts_log "images: $2 archived ($(du -h "$4" | cut -f1)) in $(ts_since "$t0")"
}

step_images() {
  locked tools
  local archive ref rootfs
  archive="$(tsn_pause_archive)"
  ref="$(tsn_pause_ref)"
  if [ -f "$archive" ]; then
    ts_log "images: $ref present"
  else
    local root; root="$(mktemp -d)"
    install -m 0755 "$(tsn_tools_dir)/pause" "$root/pause"
    touch -h -d @0 "$root/pause" "$root"   # reproducible archive
    make_archive "$root" "$ref" "$TSN_DIR/pause/config.json" "$archive"
    rm -rf "$root"
  fi

  rootfs="$(tsn_rootfs_dir)"
  if [ -d "$rootfs" ]; then
    ts_log "images: rootfs $rootfs present"
  else
    command -v debootstrap >/dev/null || ts_die "debootstrap missing: run $0 packages"
    bash "$TSN_DIR/image/build-rootfs.sh" "$rootfs"
  fi
  archive="$(tsn_image_archive)"
  ref="$(tsn_image_ref)"
  if [ -f "$archive" ]; then
    ts_log "images: $ref present"
  else
    make_archive "$rootfs" "$ref" "$TSN_DIR/image/config.json" "$archive" \
      -also "$(tsn_entrypoint_ref)=$TSN_DIR/image/entrypoint.json"
  fi
}

# Remove the cached images, rootfs trees and tools of other recipe versions
# (each image version costs about 310 MB). Not a default step: worktrees
# with different recipes may share one cache.
step_prune() {
  local keep=("$(tsn_tools_dir)" "$(dirname "$(tsn_pause_archive)")" "$(tsn_rootfs_dir)"
    "$(dirname "$(tsn_image_archive)")") d k
  for d in "$TS_CACHE"/node-tools-* "$TS_CACHE"/pause-image-* "$TS_CACHE"/mpi-rootfs-* "$TS_CACHE"/mpi-image-*; do
    [ -e "$d" ] || continue
    for k in "${keep[@]}"; do [ "${d%.debootstrap.log}" != "$k" ] || continue 2; done
    ts_log "prune: removing $d"
    rm -rf "$d"
  done
}

steps=("$@")
[ "${#steps[@]}" -gt 0 ] || steps=(packages coredns netpol images)
for s in "${steps[@]}"; do
  case "$s" in
  packages | coredns | netpol | tools | images) locked "$s" ;;
  prune) (flock 9 && locked prune) 9>"$TS_CACHE/.node-build-images.lock" ;;
  *) ts_die "unknown step $s (packages, coredns, netpol, tools, images, prune)" ;;
  esac
done
if [ ! -x "$TS_K8S_BIN/kubelet" ]; then
  ts_log "note: $TS_K8S_BIN/kubelet is not built yet (test/cluster/build.sh builds it)"
fi
ts_log "done in $(ts_since); test image $(tsn_image_ref)"
