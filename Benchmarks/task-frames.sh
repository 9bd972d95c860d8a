#!/usr/bin/env bash
# A request's async frames: what one `POST /api/process` takes from its task's allocator.
# `make bench-frames`.
#
# Each await's frame comes from the request task's allocator, a stack of slabs: a frame that
# does not fit the slab after the last one frees every slab after it and mallocs a new one.
# Those frames are the memory a request in flight holds, and a slab taken and freed per
# request is a malloc and a free that no instruction count of the gateway's own code shows.
#
# Starts mock-upstream (no latency) and text-gateway (one event loop, no store, no limits, no
# metrics), answers WARMUP requests on one kept-alive connection, then attaches gdb, which
# logs every swift_task_alloc and swift_task_dealloc and every malloc the task allocator makes
# for a slab, during one more request on that connection (until its task's frames are all
# given back). Prints the counts, the deepest stack of frames and the widest frames.
#
# Settings (environment): WARMUP=20 TOP=12
#   SEQUENCE=1     also print every allocation, free and slab in order, with the stack's depth
#   GATEWAY_BIN=   a directory holding another build of text-gateway (an earlier commit's
#                  .build/release); mock-upstream stays this tree's
#   SWIFT_BUILD_FLAGS="--static-swift-stdlib"   as bench-gateway
# Needs gdb and python3 (apt-get install -y gdb python3); installs nothing itself. Reads the
# function names from the binary's symbol table, so a stripped binary names none.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh

warmup=${WARMUP:-20}
top=${TOP:-12}
case "$warmup$top" in *[!0-9]*) die "WARMUP and TOP must be whole numbers" ;; esac
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS---static-swift-stdlib}"
for command in gdb python3; do
    command -v "$command" >/dev/null || die "needs gdb and python3: apt-get install -y gdb python3"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-frames.XXXXXX")
mock_pid=
gateway_pid=
client_pid=
gdb_pid=
stop_on_exit "$work" gdb_pid client_pid gateway_pid mock_pid

say "frames: building mock-upstream and text-gateway (release)"
build_release mock-upstream text-gateway
gateway="${GATEWAY_BIN:-$bin}/text-gateway"
[ -x "$gateway" ] || die "no text-gateway in ${GATEWAY_BIN:-$bin}"

"$bin/mock-upstream" --port 0 --loops 1 --latency-ms 0 --api-key bench-key >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || { cat "$work/mock.err" >&2; die "mock-upstream did not start"; }

start_text_gateway "$(dirname "$gateway")" "$work/run" "$work/gateway.log" DARVAREH_BASE_URL="$mock_url" \
    DARVAREH_API_KEY=bench-key DARVAREH_MODEL_ID=bench-model LOG_LEVEL=warning RATE_LIMITS=off METRICS=off \
    DATABASE_URL=off EVENT_LOOPS=1 || { cat "$work/gateway.log" >&2; die "text-gateway did not start"; }
gateway_pid=$started_pid
port=$started_port

# The client: the warm-up, then (once told, by a file) the request whose frames are counted.
python3 - "$port" "$warmup" "$work" <<'PY' &
import http.client, os, sys, time
port, warmup, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
body = ('{"task":"summarize","text":"شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی '
        'جدید به ناوگان حمل‌ونقل عمومی پایتخت اضافه می‌شود."}').encode()
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
def send():
    connection.request("POST", "/api/process", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    answer = response.read()
    if response.status != 200:
        sys.exit(f"frames: the gateway answered {response.status}: {answer[:200]!r}")
for _ in range(warmup):
    send()
open(os.path.join(work, "warmed"), "w").close()
deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(work, "go")):
    if time.monotonic() > deadline:
        sys.exit("frames: gdb did not attach within 60 s")
    time.sleep(0.05)
send()
open(os.path.join(work, "sent"), "w").close()
PY
client_pid=$!

await_file() { # FILE SECONDS WHAT
    local deadline=$((SECONDS + $2))
    until [ -e "$1" ]; do
        [ $SECONDS -lt $deadline ] || die "frames: $3"
        sleep 0.05
    done
}
await_file "$work/warmed" 60 "the warm-up did not finish within 60 s"

# The slabs: the task allocator's own call to malloc (a breakpoint on malloc conditioned on
# its caller misses some: the caller is not always known at malloc's first instruction).
allocator=$(nm -C "$gateway" | grep -m 1 ' swift::StackAllocator<.*TaskAllocatorSlabMetadata.*>::alloc(unsigned long)$' |
    sed 's/^[0-9a-f]* [tT] //' || true)
start=$(nm "$gateway" | grep -m 1 'StackAllocator.*TaskAllocatorSlabMetadata.*5alloc' | cut -d' ' -f1 || true)
[ -n "$allocator" ] && [ -n "$start" ] || die "no task allocator's alloc in $gateway's symbols"
call=$(objdump -d --no-show-raw-insn --start-address=0x"$start" --stop-address=$((0x$start + 1024)) "$gateway" |
    grep -m 1 'call.*<malloc@plt>' | sed 's/^ *\([0-9a-f]*\):.*/\1/' || true)
[ -n "$call" ] || die "no call to malloc in $allocator"
slab_break="break *('$allocator' + $((0x$call - 0x$start)))"
cat >"$work/gdb.commands" <<GDB
set pagination off
set confirm off
break swift_task_alloc
commands
silent
printf "ALLOC %lu\n", \$rdi
bt 2
continue
end
break swift_task_dealloc
commands
silent
printf "FREE\n"
bt 2
continue
end
$slab_break
commands
silent
printf "SLAB %lu\n", \$rdi
continue
end
echo ATTACHED\n
continue
GDB
gdb -p "$gateway_pid" -batch -x "$work/gdb.commands" >"$work/gdb.out" 2>"$work/gdb.err" &
gdb_pid=$!
deadline=$((SECONDS + 60))
until grep -q '^ATTACHED' "$work/gdb.out" 2>/dev/null; do
    kill -0 "$gdb_pid" 2>/dev/null || { cat "$work/gdb.err" >&2; die "gdb did not attach (ptrace may be refused here)"; }
    [ $SECONDS -lt $deadline ] || die "gdb did not attach within 60 s"
    sleep 0.1
done
touch "$work/go"
await_file "$work/sent" 120 "the counted request was not answered within 120 s"
# The request ends after its answer is sent (the finisher's hook): wait until every frame
# taken has been given back.
deadline=$((SECONDS + 60))
while :; do
    allocs=$(grep -c '^ALLOC' "$work/gdb.out" || true)
    frees=$(grep -c '^FREE' "$work/gdb.out" || true)
    [ "$allocs" -gt 0 ] && [ "$allocs" -eq "$frees" ] && break
    [ $SECONDS -lt $deadline ] || die "the request's frames were not all given back within 60 s ($allocs taken, $frees given back)"
    sleep 0.1
done
kill -INT "$gdb_pid" 2>/dev/null || true
wait "$gdb_pid" 2>/dev/null || true
gdb_pid=

echo "TextGateway's async frames for one request — $(date -u '+%Y-%m-%d %H:%M:%S UTC'); $(gdb --version | head -n 1)"
echo "POST /api/process {\"task\":\"summarize\",\"text\":<121 characters>} on a kept-alive connection after $warmup others"
echo "(EVENT_LOOPS=1, RATE_LIMITS=off, METRICS=off, DATABASE_URL=off); $gateway"
echo
python3 - "$work/gdb.out" "$top" "${SEQUENCE:-0}" <<'PY'
import re, subprocess, sys
lines = open(sys.argv[1], errors="replace").read().split("\n")
top = int(sys.argv[2])
sequence = sys.argv[3] == "1"
log = []
def function(line):
    line = re.sub(r"^#1\s+(0x[0-9a-f]+ in )?", "", line)
    return re.sub(r" \(.*", "", line).strip()
stack, events, slabs, slab_bytes = [], [], 0, 0
depth = deepest = 0
index = 0
while index < len(lines):
    line = lines[index]
    if line.startswith("ALLOC ") or line == "FREE":
        caller = function(lines[index + 2]) if index + 2 < len(lines) else "?"
        if line == "FREE":
            depth -= stack.pop() if stack else 0
            log.append(f"free  {depth:>7,}")
        else:
            size = int(line.split()[1])
            stack.append(size)
            depth += size
            deepest = max(deepest, depth)
            events.append((size, caller))
            log.append(f"alloc {depth:>7,} {size:>6,} {caller}")
        index += 3
        continue
    if line.startswith("SLAB "):
        slabs += 1
        slab_bytes += int(line.split()[1])
        log.append(f"slab  {int(line.split()[1]):>7,}")
    index += 1
names = sorted({name for _, name in events if name.startswith("$s")})
demangled = dict(names and zip(names, subprocess.run(
    ["swift", "demangle", "--simplified", "--compact"], input="\n".join(names), capture_output=True, text=True
).stdout.split("\n")) or [])
if sequence:
    # Each event in order: the stack's depth after it, a frame's size and the function it is for.
    for entry in log:
        print(re.sub(r"\$s\S+", lambda match: demangled.get(match.group(0), match.group(0))[:110], entry))
    print()
print(f"| task allocations | slabs malloc'd (bytes) | deepest stack of frames (bytes) |")
print(f"|---:|---:|---:|")
print(f"| {len(events)} | {slabs} ({slab_bytes:,}) | {deepest:,} |")
print()
print("| bytes | function whose frame it is |")
print("|---:|---|")
for size, name in sorted(events, key=lambda event: -event[0])[:top]:
    shown = demangled.get(name, name) or name
    print(f"| {size:,} | `{shown[:150]}` |")
PY
