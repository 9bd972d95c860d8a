#!/usr/bin/env bash
# What does sign-in with the app's JWTs cost? `make bench-jwt` runs this.
#
# First bench-crypto prints what a verification costs on its own: HS256, RS256 and ES256,
# with the signature checked (a token seen for the first time) and from the cache (a
# returning caller), in microseconds. Then the gateway: mock-upstream (no latency, one loop)
# and two gateways in front of it that differ only in how callers sign in — `tokens`
# (GATEWAY_TOKENS, USERS listed tokens) and `jwt` (JWT_JWKS_FILE with one RS256 key, USERS
# users each with a token of their own; the common case of an identity service's access
# tokens). wrk sends POST /api/process with the users' tokens in turn (Benchmarks/callers.lua),
# the two gateways interleaved and repeated; the script reports medians and jwt ÷ tokens.
#
# Settings (environment):
#   ROUNDS=4            rounds (each starting with the next gateway)
#   DURATION=10s        length of one wrk run
#   CONNECTIONS="1 64"  connection counts
#   USERS=100           callers on each side
#   WARMUP=2s           one unrecorded run per gateway first (0 to skip)
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
users=${USERS:-100}
warmup=${WARMUP:-2s}
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS---static-swift-stdlib}"
read -r -a connection_list <<<"$connections"
for tool in wrk curl python3; do command -v "$tool" >/dev/null || die "needs $tool (apt-get install -y wrk curl python3)"; done

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-bench-jwt.XXXXXX")
mock_pid= tokens_pid= jwt_pid= started_pid=
stop_on_exit "$work" tokens_pid jwt_pid started_pid mock_pid

echo "TextGateway sign-in benchmark — $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores, $(cpu_model); $(uname -sr); $(openssl version 2>/dev/null || echo 'OpenSSL ?')"
echo "wrk $(wrk -v 2>&1 | sed -n 's/^wrk \([^ ]*\).*/\1/p' | head -n 1); rounds=$rounds duration=$duration connections=\"${connection_list[*]}\" users=$users warmup=$warmup"
echo

say "bench-jwt: building mock-upstream, text-gateway and bench-crypto (release)"
build_release mock-upstream text-gateway bench-crypto

echo "one verification (bench-crypto jwt):"
"$bin/bench-crypto" jwt
echo

# The callers: USERS RS256 JWTs valid for a day and their key set, and USERS gateway tokens.
"$bin/bench-crypto" mint --users "$users" --directory "$work"

mock_key=bench-key
"$bin/mock-upstream" --port 0 --loops 1 --latency-ms 0 --api-key "$mock_key" >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || mock_url=
[ -n "$mock_url" ] || { cat "$work/mock.err" >&2; die "mock-upstream did not report its address within 10 s"; }

start_gateway() { # NAME VAR=VALUE...
    local name=$1
    shift
    start_text_gateway "$bin" "$work/$name" "$work/$name.log" \
        DARVAREH_BASE_URL="$mock_url" DARVAREH_API_KEY=$mock_key DARVAREH_MODEL_ID=bench-model LOG_LEVEL=warning \
        RATE_LIMITS=off METRICS=off DATABASE_URL=off "$@" ||
        { cat "$work/$name.log" >&2; die "text-gateway ($name) did not start"; }
}
start_gateway tokens GATEWAY_TOKENS="$(cat "$work/gateway-tokens.env")"
tokens_port=$started_port tokens_pid=$started_pid
start_gateway jwt JWT_JWKS_FILE="$work/jwks.json" JWT_ISSUER=https://id.bench.example JWT_AUDIENCE=textgateway
jwt_port=$started_port jwt_pid=$started_pid

text='شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی جدید به ناوگان حمل‌ونقل عمومی پایتخت اضافه می‌شود. این اتوبوس‌ها در خطوط پرتردد مرکز شهر به کار گرفته خواهند شد و انتظار می‌رود آلودگی هوا و صدا در این مناطق کاهش یابد. به گفته مسئولان، ایستگاه‌های شارژ سریع نیز در پایانه‌های اصلی نصب شده است.'
printf '{"task":"summarize","text":"%s"}' "$text" >"$work/body.json"
port_of() { case "$1" in tokens) echo "$tokens_port" ;; jwt) echo "$jwt_port" ;; esac; }
tokens_of() { case "$1" in tokens) echo "$work/gateway-tokens.txt" ;; jwt) echo "$work/jwt-tokens.txt" ;; esac; }
for target in tokens jwt; do
    status=$(curl -sS -o "$work/check.$target.json" -w '%{http_code}' -H 'Content-Type: application/json' \
        -H "Authorization: Bearer $(head -n 1 "$(tokens_of "$target")")" --data-binary "@$work/body.json" \
        "http://127.0.0.1:$(port_of "$target")/api/process") || status=000
    [ "$status" = 200 ] || die "$target check answered HTTP $status"
done
echo "tokens: GATEWAY_TOKENS with $users tokens (each compared in constant time)"
echo "jwt:    JWT_JWKS_FILE, one RS256 key; $users users, a token each (RSA-2048)"
echo "each:   text-gateway serve, DATABASE_URL=off RATE_LIMITS=off METRICS=off LOG_LEVEL=warning, EVENT_LOOPS unset"
echo

run_wrk() { # target connections duration output
    local threads=2
    [ "$2" -eq 1 ] && threads=1
    wrk -t"$threads" -c"$2" -d"$3" --latency -s Benchmarks/callers.lua "http://127.0.0.1:$(port_of "$1")/api/process" -- \
        "$work/body.json" "$(tokens_of "$1")" >"$4" 2>&1 || { cat "$4" >&2; die "wrk failed against $1"; }
}
if [ "$warmup" != 0 ] && [ "$warmup" != 0s ]; then
    for target in tokens jwt; do run_wrk "$target" 64 "$warmup" "$work/warmup.txt"; done
fi

interleaved_rounds "$rounds" run_wrk tokens jwt
wrk_run_lines "$work" "" tokens jwt >"$work/runs.txt"

echo "medians of $rounds round(s), $duration each:"
echo
connection_csv=$(IFS=,; echo "${connection_list[*]}")
python3 Benchmarks/medians.py "$work/runs.txt" --reference tokens --column callers --targets tokens,jwt \
    --connections "$connection_csv" --ratio jwt:64:0.95

