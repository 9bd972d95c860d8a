#!/usr/bin/env bash
# Instructions per request: the gateway's own CPU work on one `POST /api/process`, counted by
# valgrind's callgrind (user space: the gateway, libcurl, libc, the Swift runtime), so the
# figure does not move with the machine's load the way times do. `make bench-instructions`.
#
# Starts mock-upstream (no latency) and text-gateway under callgrind with one event loop,
# sends WARMUP requests one at a time on a kept-alive connection, zeroes the counters, sends
# REQUESTS more, dumps, and prints instructions per request with the functions and the
# libraries that take them (self cost, the top TOP).
#
# Settings (environment): REQUESTS=2000 WARMUP=200 TOP=25
#   PROVIDER_HEADERS=1   the mock answers with the 15 header fields a hosted API behind a CDN
#                        sends (`mock-upstream --provider-headers`), not only Content-Type
#   TEXT_REPEAT=1        the 310-character paragraph this many times, joined by spaces (1–38:
#                        38 makes 11,817 characters, under the 12,000 the gateway takes), to
#                        show what the gateway spends per byte of text
#   SWIFT_BUILD_FLAGS="--static-swift-stdlib"   as bench-gateway (what `make release` ships)
#   LOG_LEVEL=warning    the gateway's log level (info: one access-log line a request)
#   POLL_MICROSECONDS=0  EVENT_LOOP_POLL_MICROSECONDS for the gateway: 0 (the default here)
#                        keeps the loop from polling between requests, whose cost depends on
#                        timing, not on the code; empty: the gateway's own default
#   GATEWAY_BIN=         a directory holding another build of text-gateway to count (e.g. an
#                        earlier commit's .build/release); mock-upstream stays this tree's
#   LIBCURL=             a directory holding another build of libcurl.so.4 for the gateway
#                        (LD_LIBRARY_PATH; Benchmarks/curl-head.sh)
#   CALLGRIND_OUT=       a file to keep callgrind's dump in (callgrind_annotate --inclusive=yes)
#   SETTLE_MS=2          the pause after each answer before the next request, as in
#                        Benchmarks/allocations.sh: sent back to back, a request races the end
#                        of the one before (whether curl has let go of the upstream socket,
#                        which the gateway then watches anew), and which side wins moves the
#                        figure by up to 7,000 with the timing, not the code
#   GATEWAY_ENV=         more VAR=VALUE settings for the gateway, space-separated, e.g.
#                        "PRICES=bench-model=1/2 BUDGETS=gateway=1000000/day" (what budgets cost)
# Needs valgrind and python3 (apt-get install -y valgrind python3); installs nothing itself.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh

requests=${REQUESTS:-2000}
warmup=${WARMUP:-200}
top=${TOP:-25}
mock_options=()
case "${PROVIDER_HEADERS:-0}" in
    1) mock_options=(--provider-headers) ;;
    0) ;;
    *) die "PROVIDER_HEADERS must be 0 or 1" ;;
esac
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS---static-swift-stdlib}"
for command in valgrind callgrind_control python3; do
    command -v "$command" >/dev/null || die "needs valgrind and python3: apt-get install -y valgrind python3"
done
repeat=${TEXT_REPEAT:-1}
settle=${SETTLE_MS:-2}
case "$requests$warmup$top$repeat$settle" in *[!0-9]*) die "REQUESTS, WARMUP, TOP, TEXT_REPEAT and SETTLE_MS must be whole numbers" ;; esac
[ "$repeat" -ge 1 ] && [ "$repeat" -le 38 ] || die "TEXT_REPEAT must be 1 to 38 (the gateway takes up to 12,000 characters)"
[ "$requests" -gt 0 ] || die "REQUESTS must be positive"
libcurl=$(libcurl_dir "${LIBCURL:-}")

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-instructions.XXXXXX")
mock_pid=
gateway_pid=
stop_on_exit "$work" gateway_pid mock_pid

say "instructions: building mock-upstream and text-gateway (release)"
build_release mock-upstream text-gateway

mock_key=bench-key  # the mock's key, which the gateway sends upstream
"$bin/mock-upstream" --port 0 --loops 1 --latency-ms 0 --api-key "$mock_key" "${mock_options[@]}" >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || { cat "$work/mock.err" >&2; die "mock-upstream did not start"; }

# valgrind 3.19 cannot read the DWARF that the toolchain writes for some builds (it gives up
# before the gateway starts); a copy without debug sections counts the same instructions, and
# its symbol table still names the functions.
gateway="$work/text-gateway"
cp "${GATEWAY_BIN:-$bin}/text-gateway" "$gateway"
if command -v objcopy >/dev/null; then objcopy --strip-debug "$gateway"; fi

# Under callgrind the gateway starts in seconds, not milliseconds: its own start, polled longer.
port=$(free_port)
mkdir -p "$work/run"
(
    cd "$work/run"
    exec env -i PATH="$PATH" HOME="${HOME:-/tmp}" ${libcurl:+LD_LIBRARY_PATH=$libcurl} DARVAREH_BASE_URL="$mock_url" DARVAREH_API_KEY=$mock_key \
        DARVAREH_MODEL_ID=bench-model LOG_LEVEL="${LOG_LEVEL:-warning}" RATE_LIMITS=off METRICS=off DATABASE_URL=off EVENT_LOOPS=1 \
        EVENT_LOOP_POLL_MICROSECONDS="${POLL_MICROSECONDS-0}" ${GATEWAY_ENV:-} \
        valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
        "$gateway" serve --hostname 127.0.0.1 --port "$port" --env production
) 2>"$work/gateway.log" &
gateway_pid=$!
for _ in $(seq 600); do
    "$bin/text-gateway" healthcheck --port "$port" >/dev/null 2>&1 && break
    kill -0 "$gateway_pid" 2>/dev/null || { cat "$work/gateway.log" >&2; die "text-gateway did not start"; }
    sleep 0.1
done

text='شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی جدید به ناوگان حمل‌ونقل عمومی پایتخت اضافه می‌شود. این اتوبوس‌ها در خطوط پرتردد مرکز شهر به کار گرفته خواهند شد و انتظار می‌رود آلودگی هوا و صدا در این مناطق کاهش یابد. به گفته مسئولان، ایستگاه‌های شارژ سریع نیز در پایانه‌های اصلی نصب شده است.'
paragraph=$text
for _ in $(seq 2 "$repeat"); do text+=" $paragraph"; done
printf '{"task":"summarize","text":"%s"}' "$text" >"$work/body.json"

echo "TextGateway instructions per request — $(date -u '+%Y-%m-%d %H:%M:%S UTC'); $(valgrind --version)"
echo "POST /api/process {\"task\":\"summarize\",\"text\":<${#text} characters>}, one kept-alive connection,"
echo "one request at a time, ${settle} ms apart; $warmup warm-up requests, then $requests counted (EVENT_LOOPS=1, LOG_LEVEL=${LOG_LEVEL:-warning}, EVENT_LOOP_POLL_MICROSECONDS=${POLL_MICROSECONDS-0},"
echo "RATE_LIMITS=off, METRICS=off, DATABASE_URL=off${libcurl:+; libcurl from $libcurl}); the mock's answer carries $([ ${#mock_options[@]} -gt 0 ] && echo "the 15 header fields of a hosted API (PROVIDER_HEADERS=1)" || echo "Content-Type only")."
echo
python3 - "$port" "$warmup" "$requests" "$work/body.json" "$work" "$settle" <<'PY'
import http.client, subprocess, sys, time
port, warmup, count, body_file, work = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
settle = int(sys.argv[6]) / 1000
body = open(body_file, "rb").read()
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
def send(n):
    for _ in range(n):
        connection.request("POST", "/api/process", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = response.read()
        if response.status != 200 or b'"success":true' not in answer:
            sys.exit(f"instructions: the gateway answered {response.status}: {answer[:200]!r}")
        if settle:
            time.sleep(settle)
send(warmup)
subprocess.run(["callgrind_control", "--zero"], check=True, capture_output=True, cwd=work)
send(count)
subprocess.run(["callgrind_control", "--dump"], check=True, capture_output=True, cwd=work)
PY

# The dump taken after the counted requests (the file written at exit is the last one).
dump=$(find "$work" -name 'callgrind.out.*' | sort | head -n 1)
# CALLGRIND_OUT=file keeps the dump, for callgrind_annotate --inclusive=yes.
[ -n "${CALLGRIND_OUT:-}" ] && cp "$dump" "$CALLGRIND_OUT"
[ -n "$dump" ] || die "callgrind wrote no dump"
python3 - "$dump" "$requests" "$top" <<'PY'
import collections, re, sys
path, count, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names, objects = {}, {}
by_function, by_object = collections.Counter(), collections.Counter()
function = obj = None
after_call = False
def lookup(table, text):
    match = re.match(r"\((\d+)\)(?: (.*))?", text)
    if not match:
        return text
    if match.group(2):
        table[match.group(1)] = match.group(2)
    return table.get(match.group(1), match.group(1))
for line in open(path, errors="replace"):
    line = line.rstrip("\n")
    if line.startswith("ob="):
        obj = lookup(objects, line[3:])
    elif line.startswith("cob="):
        lookup(objects, line[4:])
    elif line.startswith("fn="):
        function = lookup(names, line[3:])
    elif line.startswith("cfn="):
        lookup(names, line[4:])
    elif line.startswith("calls="):
        after_call = True
    elif line[:1].isdigit() or line[:1] in "+-*":
        fields = line.split()
        if len(fields) >= 2 and not after_call:  # a call line's cost is the callee's, counted there
            by_function[(function, obj)] += int(fields[1])
            by_object[obj] += int(fields[1])
        after_call = False
total = sum(by_function.values())
print(f"instructions per request: {total // count:,}")
print()
print("| share | per request | library |")
print("|---:|---:|---|")
for name, cost in by_object.most_common(6):
    print(f"| {100 * cost / total:.1f} % | {cost // count:,} | {(name or '?').rsplit('/', 1)[-1]} |")
print()
# Unnamed functions (a stripped library's internals) are shown with their library.
leaders = [((f"{name} in {(obj or '?').rsplit('/', 1)[-1]}" if (name or "").startswith("0x") else name), cost)
           for (name, obj), cost in by_function.most_common(top)]
try:  # Swift symbols in readable form, when the toolchain's demangler is at hand
    import subprocess
    readable = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(n or "?" for n, _ in leaders),
                              capture_output=True, text=True, check=True).stdout.splitlines()
except Exception:
    readable = []
if len(readable) != len(leaders):
    readable = [name or "?" for name, _ in leaders]
print("| share | per request | function (self) |")
print("|---:|---:|---|")
for (name, cost), shown in zip(leaders, readable):
    shown = shown.replace("|", "\\|")
    print(f"| {100 * cost / total:.1f} % | {cost // count:,} | `{shown[:120]}` |")
PY
