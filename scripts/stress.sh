#!/usr/bin/env bash
# The Swift suite, run again and again with every core kept busy (make stress): a test that
# fails here once is a defect to fix at its cause, whatever the other rounds said.
#
#   scripts/stress.sh [ROUNDS=10] [swift test arguments...]
#
# Each round runs `swift test --skip-build` beside stress-ng (Debian's, one CPU hog per core at
# full load, started and stopped by this script by its pid). Each round's output goes to
# .build/stress/round-N.log; the failed tests of each round are printed as they end, then one
# line per round and "ROUNDS rounds, F failed". Exits 1 when any round failed.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
[ $# -gt 0 ] && shift
case "$rounds" in '' | *[!0-9]*) echo "usage: scripts/stress.sh [ROUNDS] [swift test arguments...]" >&2; exit 2 ;; esac
scripts/setup.sh test
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"
if ! command -v stress-ng >/dev/null; then
    echo "stress: installing stress-ng" >&2
    if [ "$(id -u)" = 0 ]; then as_root=(); else as_root=(sudo); fi
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends stress-ng >&2
fi

swift build --build-tests -Xswiftc -warnings-as-errors
out=.build/stress
rm -rf "$out"
mkdir -p "$out"

hog=
stop_hog() {
    [ -n "$hog" ] || return 0
    kill "$hog" 2>/dev/null || true
    wait "$hog" 2>/dev/null || true
    hog=
}
trap stop_hog EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

failed_rounds=0
summary=()
for round in $(seq 1 "$rounds"); do
    stress-ng --cpu "$(nproc)" --cpu-load 100 --quiet >/dev/null 2>&1 &
    hog=$!
    started=$(date +%s)
    status=0
    swift test --skip-build "$@" >"$out/round-$round.log" 2>&1 || status=$?
    stop_hog
    took=$(($(date +%s) - started))
    # Swift Testing marks a failed test with ✘ and XCTest says "failed"; the counts are the
    # runners' own closing lines.
    failures=$(grep -E '✘ Test .* (failed|recorded an issue)|error: -\[|Test Case .* failed' "$out/round-$round.log" |
        grep -vE '✘ Test run with' | sed -E 's/^.*(✘ Test|Test Case) //' | sort -u || true)
    closing=$(grep -E '(✔|✘) Test run with' "$out/round-$round.log" | tr '\n' ' ' || true)
    if [ "$status" -ne 0 ]; then
        failed_rounds=$((failed_rounds + 1))
        summary+=("round $round: FAILED in $took s: $closing")
        echo "round $round failed ($took s):"
        printf '    %s\n' "${failures:-(no failed test named: see $out/round-$round.log)}"
    else
        summary+=("round $round: passed in $took s: $closing")
        echo "round $round passed ($took s)"
    fi
done
echo "----"
printf '%s\n' "${summary[@]}"
echo "$rounds rounds, $failed_rounds failed"
[ "$failed_rounds" -eq 0 ]
