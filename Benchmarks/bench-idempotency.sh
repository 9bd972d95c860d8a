#!/usr/bin/env bash
# What does Idempotency-Key cost? `make bench-idempotency` runs this.
#
# mock-upstream (no latency, one loop) and three gateways configured alike (a SQLite store,
# RATE_LIMITS=off METRICS=off LOG_LEVEL=warning), interleaved and repeated:
#   before:  BEFORE_BIN's text-gateway (an earlier commit's .build/release), no key; left
#            out without BEFORE_BIN (then keyed is compared with plain)
#   plain:   this build, no key: the cost of the feature to a request that does not use it
#   keyed:   this build, a fresh Idempotency-Key on every request (Benchmarks/idempotency.lua):
#            every request a first one, recorded as running and then kept in the store
# wrk formats every request in Lua for all of them (only the field differs); the script
# reports medians and each ÷ the first, and fails when plain < 0.98× before or keyed < 0.90×
# at 64 connections.
#
# Settings (environment):
#   BEFORE_BIN=        a directory holding an earlier build of text-gateway
#   ROUNDS=4           rounds (each starting with the next gateway)
#   DURATION=10s       length of one wrk run
#   CONNECTIONS="1 64" connection counts
#   WARMUP=2s          one unrecorded run per gateway first (0 to skip)
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
before_bin=${BEFORE_BIN:-}
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS---static-swift-stdlib}"
read -r -a connection_list <<<"$connections"
for tool in wrk curl python3; do command -v "$tool" >/dev/null || die "needs $tool (apt-get install -y wrk curl python3)"; done
[ -z "$before_bin" ] || [ -x "$before_bin/text-gateway" ] || die "BEFORE_BIN must name a directory holding an earlier build's text-gateway"
targets=(plain keyed)
[ -n "$before_bin" ] && targets=(before plain keyed)

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-bench-idempotency.XXXXXX")
mock_pid= before_pid= plain_pid= keyed_pid= started_pid=
stop_on_exit "$work" before_pid plain_pid keyed_pid started_pid mock_pid

echo "TextGateway Idempotency-Key benchmark — $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores, $(cpu_model); $(uname -sr)"
echo "wrk $(wrk -v 2>&1 | sed -n 's/^wrk \([^ ]*\).*/\1/p' | head -n 1); rounds=$rounds duration=$duration connections=\"${connection_list[*]}\" warmup=$warmup"
echo "before: ${before_bin:-(none: BEFORE_BIN unset)}"
echo

say "bench-idempotency: building mock-upstream and text-gateway (release)"
build_release mock-upstream text-gateway

mock_key=bench-key
"$bin/mock-upstream" --port 0 --loops 1 --latency-ms 0 --api-key "$mock_key" >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || mock_url=
[ -n "$mock_url" ] || { cat "$work/mock.err" >&2; die "mock-upstream did not report its address within 10 s"; }

settings=(DARVAREH_BASE_URL="$mock_url" DARVAREH_API_KEY=$mock_key DARVAREH_MODEL_ID=bench-model LOG_LEVEL=warning
    RATE_LIMITS=off METRICS=off DATABASE_URL=sqlite:data/textgateway.sqlite)
start_gateway() { # NAME BIN
    start_text_gateway "$2" "$work/$1" "$work/$1.log" "${settings[@]}" ||
        { cat "$work/$1.log" >&2; die "text-gateway ($1) did not start"; }
}
if [ -n "$before_bin" ]; then
    start_gateway before "$before_bin"
    before_port=$started_port before_pid=$started_pid
fi
start_gateway plain "$bin"
plain_port=$started_port plain_pid=$started_pid
start_gateway keyed "$bin"
keyed_port=$started_port keyed_pid=$started_pid

text='شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی جدید به ناوگان حمل‌ونقل عمومی پایتخت اضافه می‌شود. این اتوبوس‌ها در خطوط پرتردد مرکز شهر به کار گرفته خواهند شد و انتظار می‌رود آلودگی هوا و صدا در این مناطق کاهش یابد. به گفته مسئولان، ایستگاه‌های شارژ سریع نیز در پایانه‌های اصلی نصب شده است.'
printf '{"task":"summarize","text":"%s"}' "$text" >"$work/body.json"
port_of() { case "$1" in before) echo "$before_port" ;; plain) echo "$plain_port" ;; keyed) echo "$keyed_port" ;; esac; }
mode_of() { [ "$1" = keyed ] && echo keyed || echo plain; }
# Each answers, and the keyed one keeps its answer: a second request with the key is a replay.
for target in "${targets[@]}"; do
    status=$(curl -sS -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "@$work/body.json" \
        "http://127.0.0.1:$(port_of "$target")/api/process") || status=000
    [ "$status" = 200 ] || die "$target check answered HTTP $status"
done
for _ in 1 2; do
    curl -sS -D "$work/check.headers" -o /dev/null -H 'Content-Type: application/json' -H 'Idempotency-Key: bench-check' \
        --data-binary "@$work/body.json" "http://127.0.0.1:$keyed_port/api/process"
done
grep -qi '^idempotent-replayed: true' "$work/check.headers" || die "the keyed gateway did not replay a kept answer"
echo "each: text-gateway serve, DATABASE_URL=sqlite RATE_LIMITS=off METRICS=off LOG_LEVEL=warning"
echo

mock_requests() { curl -sS "${mock_url%/v1}/mock/stats" | python3 -c 'import json, sys; print(json.load(sys.stdin)["requests"])'; }
run_wrk() { # target connections duration output
    local threads=2 before answered called
    [ "$2" -eq 1 ] && threads=1
    before=$(mock_requests)
    wrk -t"$threads" -c"$2" -d"$3" --latency -s Benchmarks/idempotency.lua "http://127.0.0.1:$(port_of "$1")/api/process" -- \
        "$work/body.json" "$(mode_of "$1")" >"$4" 2>&1 || { cat "$4" >&2; die "wrk failed against $1"; }
    # Every keyed request must be a first one: a replayed or joined key would skip the upstream.
    answered=$(sed -n 's/^ *\([0-9][0-9]*\) requests in.*/\1/p' "$4")
    called=$(($(mock_requests) - before))
    [ "$called" -ge "$answered" ] || die "$1: $answered requests answered but only $called upstream calls: keys were repeated"
}
if [ "$warmup" != 0 ] && [ "$warmup" != 0s ]; then
    for target in "${targets[@]}"; do run_wrk "$target" 64 "$warmup" "$work/warmup.txt"; done
fi

interleaved_rounds "$rounds" run_wrk "${targets[@]}"
wrk_run_lines "$work" "" "${targets[@]}" >"$work/runs.txt"

echo "medians of $rounds round(s), $duration each:"
echo
connection_csv=$(IFS=,; echo "${connection_list[*]}")
target_csv=$(IFS=,; echo "${targets[*]}")
if [ -n "$before_bin" ]; then
    python3 Benchmarks/medians.py "$work/runs.txt" --reference before --column build --targets "$target_csv" \
        --connections "$connection_csv" --ratio plain:64:0.98 --ratio keyed:64:0.90
else
    python3 Benchmarks/medians.py "$work/runs.txt" --reference plain --column build --targets "$target_csv" \
        --connections "$connection_csv" --ratio keyed:64:0.90
fi
