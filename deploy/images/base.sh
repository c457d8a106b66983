#!/usr/bin/env bash
# The Debian bookworm root file system every SRM image starts from, as the image
# srm/debian:bookworm. No registry is reachable from these machines, so it is made
# here: debootstrap (minbase, about 20 s) into a scratch folder, then `docker import`.
# Idempotent: an existing image is kept (--rebuild makes it again).
set -euo pipefail

image=${SRM_ROOTFS_IMAGE:-srm/debian:bookworm}
scratch=${SRM_CACHE_DIR:-.cache}/images

if [[ ${1:-} != --rebuild ]] && docker image inspect "$image" >/dev/null 2>&1; then
    echo "$image: present (deploy/images/base.sh --rebuild makes it again)"
    exit 0
fi
if ! command -v debootstrap >/dev/null; then
    if [[ $(id -u) -ne 0 ]]; then
        echo "debootstrap is missing: sudo apt-get install debootstrap, then retry" >&2
        exit 1
    fi
    echo "debootstrap is missing: installing it with apt-get..."
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null
fi
if [[ $(id -u) -ne 0 ]]; then
    echo "debootstrap needs root to make $image; run make images as root once" >&2
    exit 1
fi

mkdir -p "$scratch"
rootfs=$(mktemp -d "$scratch/rootfs.XXXXXX")
trap 'rm -rf "$rootfs"' EXIT
echo "$image: debootstrap --variant=minbase bookworm (first build only)..."
started=$SECONDS
nice -n 10 debootstrap --variant=minbase bookworm "$rootfs" >"$scratch/debootstrap.log" 2>&1 || {
    echo "debootstrap failed; last lines of $scratch/debootstrap.log:" >&2
    tail -n 20 "$scratch/debootstrap.log" >&2
    exit 1
}
# Caches a container never needs; apt fills them again when an image installs packages.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
tar -C "$rootfs" -c . | docker import --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "  $image made in $((SECONDS - started)) s"
