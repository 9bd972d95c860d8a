#!/usr/bin/env bash
# Installs the Debian packages TextGateway needs (scripts/packages) when they are missing, so
# the README's Quick start works on a machine that has only the Swift toolchain.
#
#   scripts/setup.sh build    what the build and the demo need
#   scripts/setup.sh test     that and what the tests and checks need
#
# As root it runs apt-get itself; otherwise through sudo (which may ask for a password);
# when neither can install, it names the packages to install and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
want=${1:-build}
case "$want" in build | test) ;; *) echo "usage: scripts/setup.sh build|test" >&2; exit 2 ;; esac

command -v swift >/dev/null || [ -x /opt/swift/usr/bin/swift ] || {
    echo "setup: no Swift toolchain on PATH; install Swift 6.3 (swift.org/install) first." >&2
    exit 1
}

missing=()
while read -r package when _; do
    case "$package" in '' | '#'*) continue ;; esac
    [ "$want" = test ] || [ "$when" = build ] || continue
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done <scripts/packages
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
    echo "setup: this is not a Debian-based system; install the equivalents of: ${missing[*]}" >&2
    exit 1
fi
if [ "$(id -u)" = 0 ]; then
    as_root=()
elif command -v sudo >/dev/null; then
    as_root=(sudo)
else
    echo "setup: these Debian packages are missing and neither root nor sudo is available to install them:" >&2
    echo "    apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 || {
    echo "setup: apt-get could not install: ${missing[*]}" >&2
    exit 1
}
