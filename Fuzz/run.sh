#!/usr/bin/env bash
# Builds and runs a libFuzzer target.
#
#   Fuzz/run.sh RequestParser [seconds=60] [extra libFuzzer args...]
#
# Compiles the target's sources with `-sanitize=fuzzer,address` (one flag: two separate
# -sanitize flags build a fuzzer without coverage), copies the seed corpus
# Fuzz/corpus/<Target> into the work corpus Fuzz/corpus-work/<Target> (gitignored, kept
# between runs), and fuzzes for the given time. Crash inputs go to Fuzz/artifacts/<Target>/.
# Exits non-zero on a crash, leak or timeout; prints libFuzzer's final "Done N runs" line.
set -euo pipefail

cd "$(dirname "$0")/.."
target=${1:?usage: Fuzz/run.sh RequestParser|JSONValue [seconds=60] [extra libFuzzer args...]}
shift
seconds=${1:-60}
[ $# -gt 0 ] && shift

case "$target" in
    RequestParser) sources=(Sources/HTTP1/*.swift) ;;
    JSONValue) sources=(Sources/ChatAPI/JSONValue.swift) ;;
    *) echo "unknown fuzz target: $target" >&2; exit 2 ;;
esac

binary="Fuzz/.build/${target}Fuzz"
work="Fuzz/corpus-work/$target"
artifacts="Fuzz/artifacts/$target"
log="Fuzz/.build/$target.log"
mkdir -p Fuzz/.build "$work" "$artifacts"

echo "building $binary"
swiftc -O -sanitize=fuzzer,address -parse-as-library -use-ld=lld \
    -module-name "${target}Fuzz" \
    "${sources[@]}" "Fuzz/${target}Fuzz/main.swift" \
    -o "$binary"

for seed in "Fuzz/corpus/$target"/*; do
    [ -e "$work/$(basename "$seed")" ] || cp "$seed" "$work/"
done

dict=()
[ -f "Fuzz/$target.dict" ] && dict=("-dict=Fuzz/$target.dict")

echo "fuzzing $target for ${seconds}s"
set +e
SWIFT_BACKTRACE=enable=no "$binary" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 \
    "${dict[@]}" "$@" "$work" >"$log" 2>&1
status=$?
set -e

tail -n 40 "$log"
echo "----"
grep -E "^Done [0-9]+ runs" "$log" || echo "no final 'Done N runs' line (see $log)"
if [ "$status" -ne 0 ]; then
    echo "fuzzer failed with status $status; inputs in $artifacts/" >&2
fi
exit "$status"
