#!/usr/bin/env bash
# Allocations per request: the heap allocations the release gateway makes on one request, counted
# (as SwiftNIO's allocation-counter tests do), so a change that adds some shows in CI whatever
# the machine's load. `Benchmarks/allocations.sh [--write | --check]`.
#
# Builds Benchmarks/alloc-counter.c into an LD_PRELOAD library that counts every call of malloc,
# calloc, realloc, reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc and
# free in the gateway into a file mapped shared (the Swift runtime's swift_slowAlloc, libcurl
# and OpenSSL all allocate through malloc; realloc(p, n) counts as one allocation and one free).
# Starts mock-upstream (no latency), then for each request a text-gateway of its own (so one
# request's leftovers, e.g. a stream's timers, do not land in another's figure) with one event
# loop and neither store, log, rate limits nor metrics (the gateway's own request path, as
# Benchmarks/instructions.sh):
#   plain:   POST /api/process {"task":"summarize","text":<the paragraph of instructions.sh>}
#   stream:  the same with "stream":true, an event stream read to its `done` event
#   v1:      POST /v1/chat/completions {"model":"default","messages":[{"role":"user",…}]}
#            (`default`: the alias the gateway gives DARVAREH_MODEL_ID when GATEWAY_MODELS is unset)
# It opens one kept-alive connection, sends WARMUP requests one at a time, reads the counters,
# sends REQUESTS more (each answer checked: 200 and well formed), and reads them again: the
# difference over REQUESTS is a batch's figure. plain and v1 count BATCHES batches in a row and
# keep the median one (a batch's figure moves by up to 1 % with what else the machine does, the
# median of 5 by a quarter of that); stream counts one (a minute long, it moves by 0.05 %).
# Each request is sent SETTLE_MS after the answer before it. Sent back to back, a request races
# the end of the one before (whether curl has forgotten the upstream socket, which the gateway
# then watches anew: 5 allocations; which thread resumes a task), and how often each side wins
# moves the figures by 1 % from run to run; 2 ms later the gateway has settled and each request
# starts from the same state. The idle gateway allocates too (its timers; after streams, also
# their 30 s timers running out): after the batches its allocations are counted over as long as
# a batch (at most 10 s) and shown, not subtracted (hundredths of an allocation a request, below
# the one decimal the figures keep); the script dies when they reach 1 % of a request's own
# figure (a tenth of the check's allowance), which would make the figures depend on the
# machine's speed. The stream takes a minute of the run's two:
# the mock sends its 5 pieces 10 ms apart.
#
#   (none)    prints the table: allocations, bytes asked for and frees a request
#   --write   also writes the figures to Benchmarks/allocations.json, the committed reference
#   --check   also compares them with Benchmarks/allocations.json: exits 1, naming the request
#             and both figures, when a request's allocations exceed the reference's by more than
#             ALLOWANCE %; a figure that fell by more than ALLOWANCE % is reported (update the
#             reference with --write) without failing
#
# Settings (environment): REQUESTS=1000 WARMUP=200 ALLOWANCE=10
#   BATCHES=5            batches of REQUESTS counted for plain and v1, the median kept (odd)
#   SETTLE_MS=2          the pause before each request (0: back to back, see above)
#   SWIFT_BUILD_FLAGS="--static-swift-stdlib"   as bench-gateway (what `make release` ships)
#   GATEWAY_ENV=         more VAR=VALUE settings for the gateways, space-separated, e.g.
#                        "PRICES=bench-model=1/2 BUDGETS=gateway=1000000/day"
# Needs cc and python3 (apt-get install -y gcc python3); installs nothing itself.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh

mode=report
case "${1:-}" in
    '') ;;
    --write) mode='write' ;;
    --check) mode='check' ;;
    *) die "usage: Benchmarks/allocations.sh [--write | --check]" ;;
esac
[ $# -le 1 ] || die "usage: Benchmarks/allocations.sh [--write | --check]"
requests=${REQUESTS:-1000}
warmup=${WARMUP:-200}
allowance=${ALLOWANCE:-10}
settle=${SETTLE_MS:-2}
batches=${BATCHES:-5}
case "$requests$warmup$allowance$settle$batches" in
    *[!0-9]*) die "REQUESTS, WARMUP, ALLOWANCE, SETTLE_MS and BATCHES must be whole numbers" ;;
esac
[ "$requests" -gt 0 ] || die "REQUESTS must be positive"
[ $((batches % 2)) = 1 ] || die "BATCHES must be odd (the median batch is kept)"
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS---static-swift-stdlib}"
read -r -a gateway_env <<<"${GATEWAY_ENV:-}"
for command in cc python3; do
    command -v "$command" >/dev/null || die "needs cc and python3: apt-get install -y gcc python3"
done
reference=Benchmarks/allocations.json
[ "$mode" != check ] || [ -f "$reference" ] || die "no $reference to check against (make one with --write)"

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-allocations.XXXXXX")
mock_pid=
gateway_pid=
stop_on_exit "$work" gateway_pid mock_pid

cc -O2 -shared -fPIC -o "$work/alloc-counter.so" Benchmarks/alloc-counter.c -ldl
say "allocations: building mock-upstream and text-gateway (release)"
build_release mock-upstream text-gateway

mock_key=bench-key  # the mock's key, which the gateway sends upstream
"$bin/mock-upstream" --port 0 --loops 1 --latency-ms 0 --api-key "$mock_key" \
    >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") ||
    { cat "$work/mock.err" >&2; die "mock-upstream did not start"; }

# The paragraph Benchmarks/instructions.sh sends, taken from there so the two count the same request.
text=$(sed -n "s/^text='\(.*\)'$/\1/p" Benchmarks/instructions.sh)
[ -n "$text" ] || die "no text='…' line in Benchmarks/instructions.sh"
printf '%s' "$text" >"$work/text.txt"

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
# The measured code differs from the commit: say so in the figures' commit.
git diff --quiet HEAD -- Sources Package.swift Package.resolved 2>/dev/null || commit+=-dirty

# One request's figures on the gateway at a port whose counters are in a file: a JSON line.
cat >"$work/measure.py" <<'PY'
import http.client, json, os, struct, sys, time
name, port, warmup, count, settle, batches = sys.argv[1], *(int(a) for a in sys.argv[2:7])
counter_file, text = sys.argv[7], open(sys.argv[8], encoding="utf-8").read()

def counters():
    """(allocations, frees, bytes) now: the gateway's counters, read from the shared file."""
    fd = os.open(counter_file, os.O_RDONLY)
    try:
        allocations, frees, size, _ = struct.unpack("<4Q", os.pread(fd, 32, 0))
    finally:
        os.close(fd)
    return allocations, frees, size

def fail(message):
    sys.exit(f"allocations: {name}: {message}")

def check_plain(response, answer):
    data = json.loads(answer)
    if data.get("success") is not True or not data.get("result"):
        fail(f"not a successful answer: {answer[:200]!r}")

def check_stream(response, answer):
    if not response.getheader("Content-Type", "").startswith("text/event-stream"):
        fail(f"not an event stream: {response.getheader('Content-Type')}")
    events = [line[7:] for line in answer.decode().split("\n") if line.startswith("event: ")]
    if not events or events[0] != "start" or events[-1] != "done" or "delta" not in events:
        fail(f"not a stream from start through deltas to done: {events}")

def check_v1(response, answer):
    data = json.loads(answer)
    if data.get("object") != "chat.completion" or not data["choices"][0]["message"]["content"]:
        fail(f"not a chat completion: {answer[:200]!r}")

process = {"task": "summarize", "text": text}
path, body, check = {
    "plain": ("/api/process", process, check_plain),
    "stream": ("/api/process", dict(process, stream=True), check_stream),
    "v1": ("/v1/chat/completions", {"model": "default", "messages": [{"role": "user", "content": text}]}, check_v1),
}[name]
body = json.dumps(body, ensure_ascii=False).encode()
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

def send(n):
    for _ in range(n):
        if settle:
            time.sleep(settle / 1000)
        connection.request("POST", path, body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = response.read()
        if response.status != 200:
            fail(f"the gateway answered {response.status}: {answer[:200]!r}")
        check(response, answer)

send(warmup)
figures = []  # (allocations, frees, bytes) a request, seconds, of each batch
for _ in range(batches):
    before, start = counters(), time.monotonic()
    send(count)
    after, duration = counters(), time.monotonic() - start
    figures.append((*((a - b) / count for a, b in zip(after, before)), duration))
# The idle gateway's own allocations (its timers), over as long as a batch took (at most 10 s), on
# the connection kept open (its close is not idle work).
idle_seconds = min(duration, 10.0)
idle_before = counters()
time.sleep(idle_seconds)
idle = counters()[0] - idle_before[0]
connection.close()
allocations, frees, size, seconds = sorted(figures)[len(figures) // 2]
print(json.dumps({"name": name, "allocations": allocations, "frees": frees, "bytes": size, "seconds": seconds,
                  "idle": idle, "idle_seconds": idle_seconds, "batches": [round(f[0], 2) for f in figures]}))
PY

echo "TextGateway allocations per request — $(date -u '+%Y-%m-%d %H:%M:%S UTC'); commit $commit"
echo "a gateway and one kept-alive connection a request, one request at a time, each ${settle} ms after the"
echo "answer before it; $warmup warm-up requests, then $requests counted (EVENT_LOOPS=1,"
echo "EVENT_LOOP_POLL_MICROSECONDS=0, LOG_LEVEL=warning, RATE_LIMITS=off, METRICS=off,"
echo "DATABASE_URL=off${GATEWAY_ENV:+, $GATEWAY_ENV}); SWIFT_BUILD_FLAGS=\"${build_flags[*]}\"."
echo
for name in plain stream v1; do
    say "allocations: $name"
    start_text_gateway "$bin" "$work/$name" "$work/$name.log" \
        LD_PRELOAD="$work/alloc-counter.so" ALLOC_COUNTER_FILE="$work/$name.counters" \
        DARVAREH_BASE_URL="$mock_url" DARVAREH_API_KEY=$mock_key DARVAREH_MODEL_ID=bench-model \
        RATE_LIMITS=off METRICS=off DATABASE_URL=off LOG_LEVEL=warning EVENT_LOOPS=1 EVENT_LOOP_POLL_MICROSECONDS=0 \
        ${gateway_env[@]+"${gateway_env[@]}"} ||
        { cat "$work/$name.log" >&2; die "text-gateway did not start"; }
    gateway_pid=$started_pid
    # The library makes the counters' file when the gateway starts (Benchmarks/alloc-counter.c).
    [ -s "$work/$name.counters" ] || die "the gateway did not map its counters: was the library preloaded?"
    rounds=$batches
    [ "$name" != stream ] || rounds=1
    python3 "$work/measure.py" "$name" "$started_port" "$warmup" "$requests" "$settle" "$rounds" \
        "$work/$name.counters" "$work/text.txt" >>"$work/figures.jsonl"
    stop "$gateway_pid"
    gateway_pid=
done

python3 - "$work/figures.jsonl" "$work/figures.json" "$commit" "$requests" "$warmup" "$settle" <<'PY'
import json, sys, time
rows = [json.loads(line) for line in open(sys.argv[1])]
out, commit, count, warmup, settle = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
print("| request | allocations a request | bytes a request | frees a request | batches (allocations) |")
print("|---|---:|---:|---:|---|")
for row in rows:
    print(f"| {row['name']} | {row['allocations']:.1f} | {row['bytes']:,.0f} | {row['frees']:.1f} | "
          + " ".join(f"{b:.2f}" for b in row["batches"]) + " |")
print()
# The idle gateway's allocations at the rate measured, over the time the counted requests took.
idle = {row["name"]: row["idle"] / row["idle_seconds"] * row["seconds"] / count for row in rows}
print("the idle gateway, over as long as a batch took, a request (in the figures above, not "
      "subtracted): " + ", ".join(f"{row['name']} {idle[row['name']]:.3f} ({row['idle']} allocations in "
                                  f"{row['idle_seconds']:.1f} s; a batch {row['seconds']:.1f} s)" for row in rows))
# Up to 1 % of a request's own figure (a tenth of the check's 10 % allowance) the idle share
# moves the figure by less than the allowance could notice, however slow the machine; a stream
# (186 allocations) allows more than a plain request (40).
rows_by_name = {row["name"]: row for row in rows}
noisy = [name for name, share in idle.items() if share >= 0.01 * rows_by_name[name]["allocations"]]
if noisy:
    sys.exit(f"allocations: the idle gateway allocated 1 % or more of a request's figure in a request's time for "
             f"{', '.join(noisy)}: the figures would depend on the machine's speed")
json.dump({
    "date": time.strftime("%Y-%m-%d", time.gmtime()),
    "commit": commit,
    "counted": count,
    "warmup": warmup,
    "settle_ms": settle,
    "batches": {row["name"]: row["batches"] for row in rows},
    "requests": {row["name"]: round(row["allocations"], 1) for row in rows},
    "bytes": {row["name"]: round(row["bytes"]) for row in rows},
    "frees": {row["name"]: round(row["frees"], 1) for row in rows},
}, open(out, "w"), indent=2)
PY

case "$mode" in
    write)
        cp "$work/figures.json" "$reference"
        printf '\n' >>"$reference"
        echo
        echo "wrote $reference"
        ;;
    check)
        echo
        python3 - "$reference" "$work/figures.json" "$allowance" <<'PY'
import json, sys
path, allowance = sys.argv[1], int(sys.argv[3])
reference, current = json.load(open(path)), json.load(open(sys.argv[2]))
over = []
for name, now in current["requests"].items():
    was = reference["requests"].get(name)
    if was is None:
        print(f"allocations: {name}: {now:.1f} a request, not in {path} (add it with --write)")
        continue
    change = 100 * (now - was) / was if was else 0.0
    line = (f"{name}: {now:.1f} allocations a request, the reference ({path}, commit "
            f"{reference.get('commit', '?')}) {was:.1f}: {change:+.1f} %")
    if now > was * (1 + allowance / 100):
        over.append(name)
        print(f"allocations: FAILED: {line}, over the {allowance} % allowance")
    elif now < was * (1 - allowance / 100):
        print(f"allocations: {line}, fewer by more than {allowance} %: update the reference "
              "(Benchmarks/allocations.sh --write)")
    else:
        print(f"allocations: {line}, within {allowance} %")
sys.exit(1 if over else 0)
PY
        ;;
esac
