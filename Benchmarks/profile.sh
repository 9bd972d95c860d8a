#!/usr/bin/env bash
# Where the release gateway spends its CPU under load, as a flame graph (SVG). `make profile`.
#
# Builds mock-upstream and text-gateway (release), starts the mock (no latency, one loop) and the
# gateway as shipped: its defaults (the SQLite store in its own run directory, LOG_LEVEL=info: an
# access-log line a request, to a file here; metrics, event loops and the rest as they come) with
# only the upstream set and RATE_LIMITS=off. Warms up with wrk for 2 s, then drives
# POST /api/process {"task":"summarize", ...} with wrk while `perf record` samples the gateway
# process alone (all its threads, user and kernel stacks) for DURATION seconds. Folds the stacks
# (scripts/flamegraph.py --fold: Swift symbols demangled, inlined frames kept), draws the flame
# graph (scripts/flamegraph.py) and prints the requests/s wrk measured, the samples, and the top
# functions by self and by inclusive time as markdown tables.
#
# Settings (environment):
#   DURATION=10        seconds recorded; wrk runs a second longer on each side
#   CONNECTIONS=64     wrk connections (2 threads; 1 for 1 connection)
#   FREQUENCY=499      perf samples a second on each running thread
#   OUT=flamegraph.svg   where the flame graph goes (beside BENCHMARKS.md)
#   FOLDED=            a file to keep the folded stacks in (one frame kind tag each), e.g. to
#                      compare two builds; none unless set
#   THREADS=0          1: a bottom frame per thread (loop-0, loop-1, store-0, …), 0: threads merged
#                      (the summary counts samples by thread either way)
#   TOP=15             rows of each table
#   GATEWAY_ENV=       more VAR=VALUE settings for the gateway, space-separated
#   SWIFT_BUILD_FLAGS="--static-swift-stdlib"   as bench-gateway (what `make release` ships)
#
# Call graphs: DWARF (perf copies 16 KB of each sampled thread's stack and unwinds it afterwards
# with the binaries' unwind tables), not frame pointers (-g): the Swift code keeps its frame
# pointers, but Debian's libc and libcurl are built without them, so with -g a sample in malloc,
# send or libcurl loses all its callers. Measured on this gateway: 98 % of DWARF stacks reach the
# thread's start (clone3), 43 % of frame-pointer ones. The price: about 17 KB a sample (some
# 70 MB for 10 s at 499 Hz with both event loops busy, in the work directory, removed at exit) and a
# slower `perf script`, which also names the Swift functions inlined into each frame.
#
# Needs perf, wrk, curl and python3 (apt-get install -y linux-perf wrk curl python3), and the right to
# profile another process (root, or kernel.perf_event_paranoid <= 1); installs nothing itself.
# Exits 1 when wrk saw an answer other than 2xx or 3xx, or the gateway died.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh

duration=${DURATION:-10}
connections=${CONNECTIONS:-64}
frequency=${FREQUENCY:-499}
out=${OUT:-flamegraph.svg}
folded_copy=${FOLDED:-}
top=${TOP:-15}
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS---static-swift-stdlib}"
read -r -a gateway_env <<<"${GATEWAY_ENV:-}"
for value in "$duration" "$connections" "$frequency" "$top"; do
    case "$value" in '' | *[!0-9]* | 0) die "DURATION, CONNECTIONS, FREQUENCY and TOP must be positive numbers" ;; esac
done
case "${THREADS:-0}" in
    0) merge=(--merge-threads) ;;
    1) merge=() ;;
    *) die "THREADS must be 0 or 1" ;;
esac
missing=()
for command in perf wrk curl python3; do command -v "$command" >/dev/null || missing+=("$command"); done
[ ${#missing[@]} -eq 0 ] || die "needs ${missing[*]}: apt-get install -y ${missing[*]/perf/linux-perf}"
if [ "$(id -u)" != 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
    die "perf may not profile other processes: run as root or sysctl kernel.perf_event_paranoid=1"
fi
mkdir -p "$(dirname "$out")"

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-profile.XXXXXX")
mock_pid=
gateway_pid=
wrk_pid=
stop_on_exit "$work" wrk_pid gateway_pid mock_pid

say "profile: building mock-upstream and text-gateway (release)"
build_release mock-upstream text-gateway

mock_key=bench-key  # the mock's key, which the gateway sends upstream
"$bin/mock-upstream" --port 0 --loops 1 --latency-ms 0 --api-key "$mock_key" >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") ||
    { cat "$work/mock.err" >&2; die "mock-upstream did not start"; }

start_text_gateway "$bin" "$work/gateway" "$work/gateway.log" DARVAREH_BASE_URL="$mock_url" \
    DARVAREH_API_KEY=$mock_key DARVAREH_MODEL_ID=bench-model RATE_LIMITS=off ${gateway_env[@]+"${gateway_env[@]}"} ||
    { tail -n 20 "$work/gateway.log" >&2; die "text-gateway did not start"; }
gateway_pid=$started_pid
url="http://127.0.0.1:$started_port/api/process"

# The body bench-gateway sends: the summarize task on a 310-character paragraph.
text='شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی جدید'
text+=' به ناوگان حمل‌ونقل عمومی پایتخت اضافه می‌شود.'
text+=' این اتوبوس‌ها در خطوط پرتردد مرکز شهر به کار گرفته خواهند شد'
text+=' و انتظار می‌رود آلودگی هوا و صدا در این مناطق کاهش یابد.'
text+=' به گفته مسئولان، ایستگاه‌های شارژ سریع نیز در پایانه‌های اصلی نصب شده است.'
printf '{"task":"summarize","text":"%s"}' "$text" >"$work/body.json"
status=$(curl -sS -o "$work/check.json" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "@$work/body.json" "$url") || status=000
if [ "$status" != 200 ] || ! grep -q '"success":true' "$work/check.json"; then
    die "the gateway answered HTTP $status: $(head -c 300 "$work/check.json" 2>/dev/null)"
fi

threads=2
[ "$connections" -eq 1 ] && threads=1
run_wrk() { # seconds output
    wrk -t"$threads" -c"$connections" -d"$1"s -s Benchmarks/process.lua "$url" -- "$work/body.json" >"$2" 2>&1
}
no_2xx() { # output: says what wrk saw other than 2xx/3xx, and fails, when it did
    if grep -q 'Non-2xx' "$1"; then say "profile: $(grep 'Non-2xx' "$1")"; return 0; fi
    return 1
}
say "profile: warm-up, 2 s"
run_wrk 2 "$work/warmup.txt" || { cat "$work/warmup.txt" >&2; die "wrk failed"; }
no_2xx "$work/warmup.txt" && { tail -n 5 "$work/gateway.log" >&2; die "the warm-up saw non-2xx answers"; }

say "profile: recording ${duration} s at $frequency Hz under $connections connections"
run_wrk $((duration + 2)) "$work/wrk.txt" &
wrk_pid=$!
sleep 1
# --no-buildid-cache: each build's 40 MB executable would otherwise be copied into ~/.debug.
perf record -F "$frequency" --call-graph dwarf,16384 --no-buildid-cache -p "$gateway_pid" \
    -o "$work/perf.data" -- sleep "$duration" >"$work/perf-record.log" 2>&1 ||
    { cat "$work/perf-record.log" >&2; die "perf record failed"; }
wait "$wrk_pid" || { cat "$work/wrk.txt" >&2; die "wrk failed"; }
wrk_pid=
kill -0 "$gateway_pid" 2>/dev/null || { tail -n 20 "$work/gateway.log" >&2; die "the gateway died under load"; }
no_2xx "$work/wrk.txt" && { tail -n 5 "$work/gateway.log" >&2; die "wrk saw non-2xx answers: not the real path"; }
grep -q 'Socket errors' "$work/wrk.txt" && say "profile: $(grep 'Socket errors' "$work/wrk.txt")"
rps=$(awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$work/wrk.txt")
recorded=$(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' "$work/perf-record.log")
event=$(perf evlist -i "$work/perf.data" 2>/dev/null | head -n 1)

say "profile: folding the stacks (perf script)"
perf script -i "$work/perf.data" 2>"$work/perf-script.log" |
    python3 scripts/flamegraph.py --fold --threads >"$work/stacks.folded"
grep -i 'lost' "$work/perf-script.log" >&2 || true
samples=$(awk '{ n += $NF } END { print n + 0 }' "$work/stacks.folded")
[ "$samples" -gt 0 ] || die "perf recorded no samples of the gateway"
[ -n "$folded_copy" ] && cp "$work/stacks.folded" "$folded_copy"

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- Sources Package.swift 2>/dev/null || commit+=" + uncommitted changes"
when=$(date -u '+%Y-%m-%d %H:%M UTC')
settings="DURATION=$duration CONNECTIONS=$connections FREQUENCY=$frequency${GATEWAY_ENV:+ GATEWAY_ENV=\"$GATEWAY_ENV\"}"
rps_shown=$(printf "%'d" "$rps")
python3 scripts/flamegraph.py "${merge[@]+"${merge[@]}"}" -o "$out" \
    --title "text-gateway (release, as shipped): POST /api/process under wrk, $connections connections" \
    --subtitle "$when · $commit · $settings · $rps_shown requests/s · $samples samples (perf, DWARF stacks)" \
    "$work/stacks.folded"

echo "TextGateway profile — $when; commit $commit; $(nproc) cores, $(cpu_model); $(uname -sr)"
echo "text-gateway as shipped (the default SQLite store, LOG_LEVEL=info to a file," \
    "RATE_LIMITS=off${GATEWAY_ENV:+, $GATEWAY_ENV})"
echo "in front of mock-upstream (no latency); wrk -t$threads -c$connections POST /api/process" \
    "{\"task\":\"summarize\",…} ($(wc -c <"$work/body.json") bytes)"
echo "perf record -F $frequency --call-graph dwarf,16384 -p <gateway>:" \
    "$duration s in the middle of $((duration + 2)) s of wrk"
echo
echo "requests/s (wrk, under perf): $rps_shown"
echo "samples: $samples folded (perf wrote ${recorded:-?}), event ${event:-?}; each ≈ $((1000 / frequency)) ms" \
    "of one thread's CPU"
if [ "${event%%:*}" = cpu-clock ]; then
    echo "(cpu-clock: no hardware counters here, a timer samples instead; it cannot fire while interrupts are off,"
    echo "so that time shows where they come back on: _raw_spin_unlock_irqrestore and the like in the kernel)"
fi
echo
python3 scripts/flamegraph.py --top "$top" "$work/stacks.folded"
echo
echo "flame graph: $out ($(wc -c <"$out") bytes)"
