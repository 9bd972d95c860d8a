#!/usr/bin/env bash
# What does a device caller cost beside a store-token caller? `make bench-devices`
# runs this.
#
# First bench-crypto prints what one registration and one session cost on their own, for an
# iPhone (the attestation's chain, nonce and key checks; the assertion's signature) and for an
# Android phone (the chain walked to Google's root, the extension; the session's signature),
# in microseconds.
# Then the gateway: mock-upstream (no latency, one loop) and two gateways configured alike
# (a SQLite store, APP_ATTEST_APP_IDS set, RATE_LIMITS=off METRICS=off) that differ only in
# their callers: `tokens` has USERS store tokens (`text-gateway tokens create`) and `devices`
# USERS device sessions (`tgd_…`, written into its store as a session route writes them, so
# each is read from the store at its first use and from memory after). wrk sends
# POST /api/process with the callers' tokens in turn (Benchmarks/callers.lua), the two
# gateways interleaved and repeated; the script reports medians and devices ÷ tokens.
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
case "$users" in '' | *[!0-9]* | 0) die "USERS must be a positive whole number" ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-bench-devices.XXXXXX")
mock_pid= tokens_pid= devices_pid= started_pid=
stop_on_exit "$work" tokens_pid devices_pid started_pid mock_pid

echo "TextGateway device-caller benchmark — $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores, $(cpu_model); $(uname -sr); $(openssl version 2>/dev/null || echo 'OpenSSL ?')"
echo "wrk $(wrk -v 2>&1 | sed -n 's/^wrk \([^ ]*\).*/\1/p' | head -n 1); rounds=$rounds duration=$duration connections=\"${connection_list[*]}\" users=$users warmup=$warmup"
echo

say "bench-devices: building mock-upstream, text-gateway and bench-crypto (release)"
build_release mock-upstream text-gateway bench-crypto

echo "one registration and one session (bench-crypto attest):"
"$bin/bench-crypto" attest
echo

mock_key=bench-key
"$bin/mock-upstream" --port 0 --loops 1 --latency-ms 0 --api-key "$mock_key" >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || mock_url=
[ -n "$mock_url" ] || { cat "$work/mock.err" >&2; die "mock-upstream did not report its address within 10 s"; }

settings=(DARVAREH_BASE_URL="$mock_url" DARVAREH_API_KEY=$mock_key DARVAREH_MODEL_ID=bench-model LOG_LEVEL=warning
    RATE_LIMITS=off METRICS=off DATABASE_URL=sqlite:data/textgateway.sqlite APP_ATTEST_APP_IDS=ABCDE12345.example.bench)
start_gateway() { # NAME
    start_text_gateway "$bin" "$work/$1" "$work/$1.log" "${settings[@]}" ||
        { cat "$work/$1.log" >&2; die "text-gateway ($1) did not start"; }
}
start_gateway tokens
tokens_port=$started_port tokens_pid=$started_pid
start_gateway devices
devices_port=$started_port devices_pid=$started_pid

# The store tokens, made as an operator makes them.
for i in $(seq "$users"); do
    (cd "$work/tokens" && env -i PATH="$PATH" DATABASE_URL=sqlite:data/textgateway.sqlite \
        "$bin/text-gateway" tokens create --user "bench$i" 2>/dev/null) >>"$work/tokens.txt"
done
# The device sessions: a device and a session row each, as POST /api/attest/session leaves them.
python3 - "$work/devices/data/textgateway.sqlite" "$users" "$work/devices.txt" <<'PY'
import base64, hashlib, os, sqlite3, sys, time
path, users, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
now = int(time.time() * 1000)
db = sqlite3.connect(path, timeout=10)
tokens = []
with db:
    for i in range(users):
        key = os.urandom(65)
        device = "dev_bench%d" % i
        db.execute("INSERT INTO devices (id, platform, key_id, public_key, counter, app_id, environment, receipt,"
                   " created_at, last_seen_at) VALUES (?, 'ios', ?, ?, 1, 'ABCDE12345.example.bench', 'production', x'', ?, ?)",
                   (device, hashlib.sha256(key).digest(), b"\x04" + key[1:], now, now))
        token = "tgd_" + base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
        db.execute("INSERT INTO device_sessions (digest, device_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                   (hashlib.sha256(token.encode()).digest(), device, now, now + 86_400_000))
        tokens.append(token)
open(out, "w").write("\n".join(tokens) + "\n")
PY
[ "$(grep -c . "$work/tokens.txt")" = "$users" ] || die "tokens create did not make $users tokens"

text='شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی جدید به ناوگان حمل‌ونقل عمومی پایتخت اضافه می‌شود. این اتوبوس‌ها در خطوط پرتردد مرکز شهر به کار گرفته خواهند شد و انتظار می‌رود آلودگی هوا و صدا در این مناطق کاهش یابد. به گفته مسئولان، ایستگاه‌های شارژ سریع نیز در پایانه‌های اصلی نصب شده است.'
printf '{"task":"summarize","text":"%s"}' "$text" >"$work/body.json"
port_of() { case "$1" in tokens) echo "$tokens_port" ;; devices) echo "$devices_port" ;; esac; }
# The token poll (1 s) must have loaded the store tokens before the check.
for target in tokens devices; do
    status=000
    for _ in $(seq 50); do
        status=$(curl -sS -o "$work/check.$target.json" -w '%{http_code}' -H 'Content-Type: application/json' \
            -H "Authorization: Bearer $(head -n 1 "$work/$target.txt")" --data-binary "@$work/body.json" \
            "http://127.0.0.1:$(port_of "$target")/api/process") || status=000
        [ "$status" = 200 ] && break
        sleep 0.1
    done
    [ "$status" = 200 ] || die "$target check answered HTTP $status"
done
echo "tokens:  $users store tokens (text-gateway tokens create), looked up by SHA-256 in memory"
echo "devices: $users device sessions (tgd_), read from the store at first use, from memory after"
echo "each:    text-gateway serve, DATABASE_URL=sqlite APP_ATTEST_APP_IDS=… RATE_LIMITS=off METRICS=off LOG_LEVEL=warning"
echo

run_wrk() { # target connections duration output
    local threads=2
    [ "$2" -eq 1 ] && threads=1
    wrk -t"$threads" -c"$2" -d"$3" --latency -s Benchmarks/callers.lua "http://127.0.0.1:$(port_of "$1")/api/process" -- \
        "$work/body.json" "$work/$1.txt" >"$4" 2>&1 || { cat "$4" >&2; die "wrk failed against $1"; }
}
if [ "$warmup" != 0 ] && [ "$warmup" != 0s ]; then
    for target in tokens devices; do run_wrk "$target" 64 "$warmup" "$work/warmup.txt"; done
fi

interleaved_rounds "$rounds" run_wrk tokens devices
wrk_run_lines "$work" "" tokens devices >"$work/runs.txt"

echo "medians of $rounds round(s), $duration each:"
echo
connection_csv=$(IFS=,; echo "${connection_list[*]}")
python3 Benchmarks/medians.py "$work/runs.txt" --reference tokens --column callers --targets tokens,devices \
    --connections "$connection_csv" --ratio devices:64:0.98
