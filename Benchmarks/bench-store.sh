#!/usr/bin/env bash
# What does the store cost a request? `make bench-store` runs this.
#
# Starts mock-upstream (no latency, one loop) and three gateways in front of it that differ
# only in the store: `off` (DATABASE_URL=off), `fast` and `strict` (LEDGER_DURABILITY, each
# on its own SQLite file in a temporary directory). All three authenticate a caller token (so
# every row also adds to that user's daily usage) and run RATE_LIMITS=off METRICS=off
# LOG_LEVEL=warning. Then wrk runs POST /api/process against each, interleaved (each round
# starts with the next gateway) and repeated, and the script reports medians: requests/s,
# p50, p99, and the ratios and added p50 against `off`. Last, bench-store drives the ledger
# writer alone: the rows per second it commits, and the database's size per million requests.
#
# Settings (environment):
#   ROUNDS=4                  rounds (each gateway once in each place with 3 gateways: 3, 6, …)
#   DURATION=10s              length of one wrk run
#   CONNECTIONS="1 64"        connection counts
#   WARMUP=2s                 one unrecorded run per gateway first (0 to skip)
#   WRITER_ROWS=500000        rows for the writer alone
#   SWIFT_BUILD_FLAGS="--static-swift-stdlib"
#
# Needs wrk, curl and python3 (apt-get install -y wrk curl python3).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh

rounds=${ROUNDS:-4}
duration=${DURATION:-10s}
connections=${CONNECTIONS:-1 64}
warmup=${WARMUP:-2s}
writer_rows=${WRITER_ROWS:-500000}
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS---static-swift-stdlib}"
read -r -a connection_list <<<"$connections"
for tool in wrk curl python3; do command -v "$tool" >/dev/null || die "needs $tool (apt-get install -y wrk curl python3)"; done

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-bench-store.XXXXXX")
mock_pid= off_pid= fast_pid= strict_pid= started_pid=
stop_on_exit "$work" off_pid fast_pid strict_pid started_pid mock_pid

echo "TextGateway store benchmark — $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores, $(cpu_model); $(uname -sr); SQLite $(sqlite3 --version 2>/dev/null | cut -d' ' -f1 || echo '?')"
echo "wrk $(wrk -v 2>&1 | sed -n 's/^wrk \([^ ]*\).*/\1/p' | head -n 1); rounds=$rounds duration=$duration connections=\"${connection_list[*]}\" warmup=$warmup"
echo

say "bench-store: building mock-upstream, text-gateway and bench-store (release)"
build_release mock-upstream text-gateway bench-store

mock_key=bench-key
"$bin/mock-upstream" --port 0 --loops 1 --latency-ms 0 --api-key "$mock_key" >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || mock_url=
[ -n "$mock_url" ] || { cat "$work/mock.err" >&2; die "mock-upstream did not report its address within 10 s"; }

token=bench-caller-token-0123456789
token_hash=$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)
start_gateway() { # NAME VAR=VALUE...
    local name=$1
    shift
    start_text_gateway "$bin" "$work/$name" "$work/$name.log" \
        DARVAREH_BASE_URL="$mock_url" DARVAREH_API_KEY=$mock_key DARVAREH_MODEL_ID=bench-model LOG_LEVEL=warning \
        RATE_LIMITS=off METRICS=off GATEWAY_TOKENS="$token_hash:bench:default" "$@" ||
        { cat "$work/$name.log" >&2; die "text-gateway ($name) did not start"; }
}
start_gateway off DATABASE_URL=off
off_port=$started_port off_pid=$started_pid
start_gateway fast LEDGER_DURABILITY=fast
fast_port=$started_port fast_pid=$started_pid
start_gateway strict LEDGER_DURABILITY=strict
strict_port=$started_port strict_pid=$started_pid

text='شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی جدید به ناوگان حمل‌ونقل عمومی پایتخت اضافه می‌شود. این اتوبوس‌ها در خطوط پرتردد مرکز شهر به کار گرفته خواهند شد و انتظار می‌رود آلودگی هوا و صدا در این مناطق کاهش یابد. به گفته مسئولان، ایستگاه‌های شارژ سریع نیز در پایانه‌های اصلی نصب شده است.'
printf '{"task":"summarize","text":"%s"}' "$text" >"$work/body.json"
port_of() { case "$1" in off) echo "$off_port" ;; fast) echo "$fast_port" ;; strict) echo "$strict_port" ;; esac; }
for target in off fast strict; do
    status=$(curl -sS -o "$work/check.$target.json" -w '%{http_code}' -H 'Content-Type: application/json' \
        -H "Authorization: Bearer $token" --data-binary "@$work/body.json" "http://127.0.0.1:$(port_of $target)/api/process") || status=000
    [ "$status" = 200 ] || die "$target check answered HTTP $status"
done
echo "off:    DATABASE_URL=off"
echo "fast:   sqlite, LEDGER_DURABILITY=fast"
echo "strict: sqlite, LEDGER_DURABILITY=strict"
echo "each:   text-gateway serve, caller token (plan default), RATE_LIMITS=off METRICS=off LOG_LEVEL=warning, EVENT_LOOPS unset"
echo

run_wrk() { # target connections duration output
    local threads=2
    [ "$2" -eq 1 ] && threads=1
    wrk -t"$threads" -c"$2" -d"$3" --latency -s Benchmarks/process.lua "http://127.0.0.1:$(port_of "$1")/api/process" -- \
        "$work/body.json" "$token" >"$4" 2>&1 || { cat "$4" >&2; die "wrk failed against $1"; }
}
if [ "$warmup" != 0 ] && [ "$warmup" != 0s ]; then
    for target in off fast strict; do run_wrk "$target" 64 "$warmup" "$work/warmup.txt"; done
fi

interleaved_rounds "$rounds" run_wrk off fast strict
wrk_run_lines "$work" "" off fast strict >"$work/runs.txt"

echo "medians of $rounds round(s), $duration each:"
echo
connection_csv=$(IFS=,; echo "${connection_list[*]}")
python3 Benchmarks/medians.py "$work/runs.txt" --reference off --column store --targets off,fast,strict \
    --connections "$connection_csv" --ratio fast:64:0.95 --ratio strict:64:0.80 --added-p50 fast:1:0.020
echo
for target in fast strict; do
    rows=$(sqlite3 "$work/$target/data/textgateway.sqlite" 'SELECT count(*) FROM requests' 2>/dev/null || echo "?")
    echo "$target: $rows rows in its store"
done
echo
echo "the ledger writer alone (bench-store --rows $writer_rows --producers 64):"
"$bin/bench-store" --rows "$writer_rows" --producers 64 --directory "$work"
echo
echo "with results kept (HISTORY_STORE_RESULTS=on, an answer of about 600 characters):"
mkdir -p "$work/results"
"$bin/bench-store" --rows "$writer_rows" --producers 64 --results on --directory "$work/results"

