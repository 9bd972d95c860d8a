#!/usr/bin/env bash
# The README's Quick start on a bare machine: runs its demo command, exactly as the README
# writes it (the first command of the Quick start section's first code block), in a container
# of the bare Swift image (swift:6.3-bookworm: Debian 12 and the toolchain, nothing else) on a
# copy of this repository's tracked files — with DEMO_ONCE=1, the demo's checking mode, which
# runs every curl it prints. So the README cannot drift from what works on a new machine.
#
#   scripts/bare-check.sh          the demo command (make bare-check; CI)
#   scripts/bare-check.sh test     the test command too (the second command of that block; long)
#   BARE_LOG=<file>                keeps the whole output there (the last lines are printed)
#
# The container shares the host's network namespace (apt-get reaches Debian's mirrors; the demo
# listens on a free loopback port) and has the engine's default capabilities, as a Swift dev
# container or a CI job in that image has.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh
which=${1:-demo}
case "$which" in demo) line=1 ;; test) line=2 ;; *) die "usage: scripts/bare-check.sh [demo|test]" ;; esac

# The Quick start's first code block, comments and blank lines dropped.
command=$(awk '
    /^## / { in_section = ($0 == "## Quick start") ; next }
    in_section && /^```/ { if (in_block) exit; in_block = 1; next }
    in_section && in_block { sub(/[[:space:]]+#.*$/, ""); if ($0 != "" && $0 !~ /^#/) print }
' README.md | sed -n "${line}p")
[ -n "$command" ] || die "README.md has no command $line in its Quick start's first code block"

pick_container_engine
image=docker.io/library/swift:6.3-bookworm
work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-bare-check.XXXXXX")
name=textgateway-bare-check-$$-$RANDOM
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    "$engine" rm -f "$name" >/dev/null 2>&1 || true
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# What a clone holds: the tracked files as they are in the working tree.
mkdir "$work/src"
git ls-files -z | while IFS= read -r -d '' file; do [ -e "$file" ] && printf '%s\0' "$file"; done |
    tar --null -T - -cf - | tar -C "$work/src" -xf -

port=$(free_port)
say "bare-check: \`$command\` in $image ($engine), as root, nothing installed"
started=$(now)
status=0
"$engine" run --name "$name" --network host -v "$work/src:/src" -w /src \
    -e DEMO_ONCE=1 -e DEMO_PORT="$port" "$image" bash -c "$command" >"$work/output.log" 2>&1 || status=$?
elapsed=$(since "$started")
if [ -n "${BARE_LOG:-}" ]; then cp "$work/output.log" "$BARE_LOG"; fi
# What the newcomer would see at the end, and what was installed on the way.
grep -E '^setup: installing' "$work/output.log" || true
tail -n "${BARE_TAIL_LINES:-12}" "$work/output.log"
if [ "$status" -eq 0 ]; then
    echo "PASS  bare-check: \`$command\` on $image in $elapsed"
else
    echo "FAIL  bare-check: \`$command\` on $image exited $status after $elapsed"
    exit 1
fi
