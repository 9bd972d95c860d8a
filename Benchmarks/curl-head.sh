#!/usr/bin/env bash
# What libcurl's byte-at-a-time request head costs the gateway, and what writing it in one
# piece would be worth at 16 connections. An experiment: the product uses Debian's libcurl,
# and nothing here changes that.
#
# libcurl 7.88.1 (Debian bookworm) writes every request head through its own printf, which
# appends one byte at a time to a growing buffer. This script builds that source twice with
# the same configuration, as released and with Benchmarks/curl-head.patch (its printf appends
# literal text and `%s` arguments in one piece), then runs the same gateway binary on each:
#   1. instructions per `POST /api/process` (Benchmarks/instructions.sh with LIBCURL=);
#   2. Benchmarks/bench-gateway.sh at 16 connections with the gateway on the patched build and
#      the controls twin, at the gateway's settings, on the plain one; nginx and the mock
#      direct as always (GATEWAY_LIBCURL=, CONTROLS_LIBCURL=).
#
# Settings (environment): STEPS="instructions gateway"; ROUNDS=4 DURATION=8s CONNECTIONS=16
# for step 2; REQUESTS=1000 for step 1.
# Downloads the source from deb.debian.org (checked against its SHA-256) into
# .build/curl-head/ and builds there; a second run reuses both builds.
# Needs build tools and libcurl's build dependencies besides what the two benchmarks need:
#   apt-get install -y build-essential libssl-dev libnghttp2-dev zlib1g-dev valgrind wrk nginx-light curl
# Installs nothing itself.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh

version=7.88.1
sha256=cdb38b72e36bc5d33d5b8810f8018ece1baa29a8f215b4495e495ded82bbf3c7
steps=${STEPS:-instructions gateway}

for command in gcc make patch curl sha256sum pkg-config; do
    command -v "$command" >/dev/null ||
        die "needs $command: apt-get install -y build-essential libssl-dev libnghttp2-dev zlib1g-dev curl pkg-config"
done
for library in openssl libnghttp2 zlib; do
    pkg-config --exists "$library" ||
        die "needs the $library headers: apt-get install -y libssl-dev libnghttp2-dev zlib1g-dev"
done
installed=$(pkg-config --modversion libcurl 2>/dev/null || true)
[ "$installed" = "$version" ] ||
    die "written for libcurl $version (Debian bookworm); this machine's libcurl is ${installed:-not installed}"

root=$PWD/.build/curl-head
tarball=$root/curl_$version.orig.tar.gz
mkdir -p "$root"
if ! echo "$sha256  $tarball" | sha256sum --check --status 2>/dev/null; then
    say "curl-head: downloading curl $version from deb.debian.org"
    curl -fsSL -o "$tarball.part" "http://deb.debian.org/debian/pool/main/c/curl/curl_$version.orig.tar.gz"
    echo "$sha256  $tarball.part" | sha256sum --check --status || die "the download's SHA-256 is not $sha256"
    mv "$tarball.part" "$tarball"
fi

build() { # plain|patched
    local dir=$root/$1
    [ -e "$dir/curl-$version/lib/.libs/libcurl.so.4" ] && return 0
    say "curl-head: building libcurl $version ($1), a few minutes"
    rm -rf "$dir"
    mkdir -p "$dir"
    tar -xzf "$tarball" -C "$dir"
    if [ "$1" = patched ]; then
        patch -d "$dir/curl-$version" -p1 --quiet <Benchmarks/curl-head.patch
    fi
    (
        cd "$dir/curl-$version"
        # HTTP/2 and versioned symbols as Debian builds it: the gateway asks for HTTP/2 over
        # TLS and links against the CURL_OPENSSL_4 symbols.
        ./configure --with-openssl --with-nghttp2 --enable-versioned-symbols --disable-static \
            --disable-ldap --disable-manual --without-librtmp --without-libssh2 --without-brotli \
            --without-zstd --without-libidn2 --without-libpsl CFLAGS="-O2 -g" >"$dir/configure.log" 2>&1 ||
            { tail -n 20 "$dir/configure.log" >&2; exit 1; }
        make -j"$(nproc)" -C lib >"$dir/make.log" 2>&1 || { tail -n 20 "$dir/make.log" >&2; exit 1; }
    ) || die "building libcurl ($1) failed; logs in $dir"
}
build plain
build patched
plain=$root/plain/curl-$version/lib/.libs
patched=$root/patched/curl-$version/lib/.libs

echo "TextGateway: libcurl's request head, written a byte at a time (plain) or in pieces (patched)"
echo "libcurl $version from deb.debian.org, both built here with the same configuration; the patch:"
echo "Benchmarks/curl-head.patch"
echo
for step in $steps; do
    case "$step" in
        instructions)
            for build in plain patched; do
                dir=$plain
                [ "$build" = patched ] && dir=$patched
                echo "== instructions per request, libcurl $build"
                LIBCURL=$dir REQUESTS=${REQUESTS:-1000} TOP=${TOP:-12} Benchmarks/instructions.sh
                echo
            done
            ;;
        gateway)
            echo "== bench-gateway: gateway on the patched libcurl, controls on the plain one"
            GATEWAY_LIBCURL=$patched CONTROLS_LIBCURL=$plain ROUNDS=${ROUNDS:-4} DURATION=${DURATION:-8s} \
                CONNECTIONS=${CONNECTIONS:-16} Benchmarks/bench-gateway.sh
            ;;
        *) die "unknown step: $step (STEPS takes instructions and gateway)" ;;
    esac
done
