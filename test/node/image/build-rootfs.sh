#!/usr/bin/env bash
# Build the root filesystem of the MPI test image from Debian packages:
# debootstrap bookworm (minbase variant) plus the packages listed in
# ./packages, a non-root user and nothing else.
#
#   build-rootfs.sh DIR
#
# DIR must not exist; the tree is assembled in DIR.partial and renamed at the
# end, so DIR exists only when complete. build.sh calls this with a cache
# directory named after the hash of this file and ./packages.
#
# The image stays VANILLA on purpose: no ssh configuration, no ssh keys (the
# host keys the openssh-server package generates are removed), no changed
# defaults. The project's prototypes ship their own sshd/ssh configuration
# and generate host keys when the container starts; a test must not pass
# only because the image happens to be configured for it.
#
# What is added:
#   - user mpiuser, uid/gid 1000, home /home/mpiuser, shell /bin/sh, for the
#     non-root tests. Its password field is "*" (no password can match)
#     instead of useradd's "!" (locked): sshd without PAM refuses every login,
#     key logins included, to a locked account.
#   - /run/sshd, sshd's privilege-separation directory (Debian's init
#     scripts would create it at boot; containers have no boot).
# What is removed: apt caches and lists, documentation, man pages and
# locales, the files of the packages torch pulls in that nothing loads
# (below), the ssh host keys, and the files the
# container runtime provides (/etc/hostname, /etc/resolv.conf; /etc/hosts
# is left empty).
#
# env: TRAINSONNET_DEBIAN_MIRROR (default: the host's first apt source),
#      TRAINSONNET_DEBIAN_SUITE (bookworm)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
dest="$1"
work="$dest.partial"
suite="${TRAINSONNET_DEBIAN_SUITE:-bookworm}"
log() { printf 'build-rootfs: %s\n' "$*" >&2; }

mirror="${TRAINSONNET_DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  mirror="$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -v -- -security | head -n1 || true)"
fi
if [ -z "$mirror" ]; then
  mirror="$(awk '$1 == "deb" && $0 !~ /security/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)"
fi
mirror="${mirror:-http://deb.debian.org/debian}"

packages="$(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$here/packages" | grep -v '^$' | paste -sd, -)"
[ -e "$dest" ] && { echo "build-rootfs: $dest already exists" >&2; exit 1; }

# debootstrap mounts /proc and /sys inside the target while it installs; if
# it dies half-way they stay mounted. Unmount whatever is left under $work.
unmount_work() {
  awk -v w="$work/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
    while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
}
trap unmount_work EXIT
unmount_work
rm -rf "$work"
mkdir -p "$work"

t0=$(date +%s)
log "debootstrap --variant=minbase $suite + $packages from $mirror"
if ! debootstrap --variant=minbase --include="$packages" "$suite" "$work" "$mirror" >"$work.log" 2>&1; then
  tail -n 30 "$work.log" >&2
  exit 1
fi
log "debootstrap took $(($(date +%s) - t0))s"

in_root() { chroot "$work" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

# The non-root user.
in_root groupadd --gid 1000 mpiuser
in_root useradd --uid 1000 --gid 1000 --create-home --home-dir /home/mpiuser --shell /bin/sh mpiuser
in_root usermod --password '*' mpiuser

# Vanilla ssh: the package's generated host keys go (every pod would share
# them); configuration is left as Debian ships it.
rm -f "$work"/etc/ssh/ssh_host_*
mkdir -p "$work/run/sshd"
chmod 0755 "$work/run/sshd"

# Trim what an image does not need.
rm -rf "$work"/var/cache/apt/archives/*.deb "$work"/var/cache/apt/*.bin "$work"/var/lib/apt/lists/* \
  "$work"/usr/share/doc/* "$work"/usr/share/man/* "$work"/usr/share/info/* \
  "$work"/var/log/*.log "$work"/var/log/apt/* "$work"/var/cache/debconf/*-old "$work"/var/lib/dpkg/*-old
find "$work/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
# The files of packages that python3-torch pulls in and nothing here loads
# (about 280 MB): libtorch links OpenCV, whose GUI and codecs bring Mesa's
# GL drivers and the LLVM they compile shaders with, and GDAL with its PROJ
# data; libtorch-test and torch/bin hold PyTorch's C++ test programs
# (torch_shm_manager stays: torch.multiprocessing runs it). dpkg keeps its
# record of them; the checks below import torch afterwards.
for pkg in libgl1-mesa-dri libllvm15 libz3-4 libtorch-test proj-data iso-codes; do
  in_root dpkg-query -L "$pkg" 2>/dev/null | while IFS= read -r f; do
    if [ -f "$work$f" ] || [ -L "$work$f" ]; then rm -f "$work$f"; fi
  done
done
# And the toolchain python3-xgboost pulls in through python3-scipy's
# python3-pythran (about 470 MB): gcc, g++, binutils, Boost's and
# OpenBLAS's headers and static libraries, Python's headers. Nothing here
# compiles; the checks below import scipy and xgboost afterwards.
for pkg in libboost1.74-dev gcc-12 g++-12 cpp-12 libstdc++-12-dev libgcc-12-dev libc6-dev linux-libc-dev \
  binutils binutils-common binutils-x86-64-linux-gnu libbinutils libgprofng0 libctf0 libctf-nobfd0 \
  libasan8 libtsan2 liblsan0 libubsan1 libitm1 libcc1-0 libisl23 \
  libpython3.11-dev python3.11-dev libopenblas-pthread-dev libopenblas-dev libxsimd-dev \
  zlib1g-dev libexpat1-dev libtirpc-dev libnsl-dev libcrypt-dev; do
  in_root dpkg-query -L "$pkg" 2>/dev/null | while IFS= read -r f; do
    if [ -f "$work$f" ] || [ -L "$work$f" ]; then rm -f "$work$f"; fi
  done
done
if [ -d "$work/usr/lib/python3/dist-packages/torch/bin" ]; then
  find "$work/usr/lib/python3/dist-packages/torch/bin" -type f ! -name torch_shm_manager -delete
fi
rm -f "$work/etc/hostname" "$work/etc/resolv.conf"
: >"$work/etc/hosts"
find "$work/tmp" "$work/run" -mindepth 1 -maxdepth 1 ! -name sshd -exec rm -rf {} +
chmod 1777 "$work/tmp"

# Check what the tests rely on. (Ask dpkg and the chroot, not the host:
# /usr/bin/mpirun is an absolute symlink into /etc/alternatives.)
while IFS= read -r pkg; do
  # shellcheck disable=SC2016  # ${Status} is dpkg-query's format, not a shell variable
  in_root dpkg-query -W -f='${Status}\n' "$pkg" | grep -qx 'install ok installed' ||
    { echo "build-rootfs: package $pkg is not installed" >&2; exit 1; }
done < <(tr ',' '\n' <<<"$packages")
for cmd in sh bash timeout getent ps hostname mpirun orted sshd ssh ssh-keygen torchrun; do
  in_root sh -c "command -v $cmd" >/dev/null || { echo "build-rootfs: $cmd missing" >&2; exit 1; }
done
# What the training tests import, after the trim: PyTorch with gloo.
# (-B: no bytecode files written into the image.)
in_root python3 -B -c 'import torch, torch.distributed as d; assert d.is_gloo_available()' ||
  { echo "build-rootfs: python3 cannot import torch with gloo" >&2; exit 1; }
in_root python3 -B -c 'import scipy.sparse, numpy, xgboost; from xgboost import collective, tracker' ||
  { echo "build-rootfs: python3 cannot import xgboost's collective and tracker" >&2; exit 1; }
[ "$(in_root getent passwd mpiuser)" = "mpiuser:x:1000:1000::/home/mpiuser:/bin/sh" ] ||
  { echo "build-rootfs: mpiuser is not as expected: $(in_root getent passwd mpiuser)" >&2; exit 1; }

trap - EXIT
unmount_work
mv "$work.log" "$dest.debootstrap.log"
mv "$work" "$dest"
log "$dest ready: $(du -sh "$dest" | cut -f1) in $(($(date +%s) - t0))s"
