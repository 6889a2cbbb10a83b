#!/usr/bin/env bash
# Print the reference of the MPI test image that the current recipe builds,
# localhost/trainsonnet-mpi:<tag>. The tag is a hash of the recipe files
# (build-rootfs.sh, packages, config.json and ../mkimage/main.go), so it
# changes whenever the image would. Needs no build and no running node.
#   --archive  print the cached archive's path instead
#   --rootfs   print the cached root filesystem's path instead
set -euo pipefail
# shellcheck source-path=SCRIPTDIR/.. source=lib.sh
. "$(dirname "$0")/../lib.sh"
case "${1:-}" in
"") tsn_image_ref ;;
--archive) tsn_image_archive ;;
--rootfs) tsn_rootfs_dir ;;
*) echo "usage: $0 [--archive|--rootfs]" >&2; exit 2 ;;
esac
