#!/usr/bin/env bash
# The two base images the Dockerfile names, made on this machine for where no container
# registry can be reached: debian:bookworm-slim from debootstrap (Debian's packages), and
# swift:6.3-bookworm as that root file system with the official image's build packages and
# the Swift toolchain installed here (/opt/swift, or the one on PATH). Also writes the podman
# settings a sandboxed machine needs (runc, cgroupfs, the ulimits it may set). Needs root.
#
#   scripts/container-bases.sh          (IMAGES_WORK=<dir> for the root file systems)
#
# Idempotent: an image that already exists is left alone, so only the first run costs time.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "container-bases: needs root (debootstrap, podman's storage)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
if ! { command -v podman && command -v debootstrap && command -v runc; } >/dev/null; then
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends podman debootstrap runc uidmap fuse-overlayfs slirp4netns >/dev/null
fi
if [ ! -f /etc/containers/containers.conf ] || ! grep -q 'cgroup_manager = "cgroupfs"' /etc/containers/containers.conf; then
    mkdir -p /etc/containers
    cat >/etc/containers/containers.conf <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=1000:1000"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
CONF
fi
toolchain=/opt/swift/usr
[ -x "$toolchain/bin/swift" ] || toolchain=$(dirname "$(dirname "$(command -v swift)")")
work=${IMAGES_WORK:-/var/cache/textgateway/images}
mkdir -p "$work"
have() { podman image exists "$1"; }
if ! have docker.io/library/debian:bookworm-slim || ! have docker.io/library/swift:6.3-bookworm; then
    if [ ! -x "$work/rootfs/bin/sh" ]; then
        rm -rf "$work/rootfs"
        debootstrap --variant=minbase bookworm "$work/rootfs" >"$work/debootstrap.log" 2>&1
    fi
fi
if ! have docker.io/library/debian:bookworm-slim; then
    tar -C "$work/rootfs" -c . | podman import - docker.io/library/debian:bookworm-slim >/dev/null
fi
if ! have docker.io/library/swift:6.3-bookworm; then
    rm -rf "$work/swiftroot"
    cp -a "$work/rootfs" "$work/swiftroot"
    cp /etc/resolv.conf "$work/swiftroot/etc/resolv.conf"
    # The packages the official swift:6.3-bookworm image installs beside the toolchain.
    chroot "$work/swiftroot" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends binutils git gnupg2 libc6-dev libcurl4-openssl-dev libedit2 libgcc-12-dev libpython3-dev \
        libsqlite3-0 libstdc++-12-dev libxml2-dev libncurses-dev libz3-dev pkg-config tzdata zip zlib1g-dev ca-certificates \
        && rm -rf /var/lib/apt/lists/*' >"$work/swiftroot-apt.log" 2>&1
    rm -f "$work/swiftroot/etc/resolv.conf"
    cp -a "$toolchain/." "$work/swiftroot/usr/"
    tar -C "$work/swiftroot" -c . | podman import - docker.io/library/swift:6.3-bookworm >/dev/null
    rm -rf "$work/swiftroot"
fi
podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E 'debian:bookworm-slim|swift:6.3-bookworm'
