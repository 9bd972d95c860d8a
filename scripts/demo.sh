#!/usr/bin/env bash
# TextGateway demo: the gateway in front of mock-upstream, with ready-to-paste curl commands.
#
#   scripts/demo.sh                 # (make demo) runs until Ctrl-C
#
# On a machine with only the Swift toolchain it first installs the Debian packages the build
# needs (scripts/setup.sh build: libcurl, SQLite, OpenSSL, hiredis and libpq headers, curl).
# It builds debug: half the time of a release build on a new machine, and a demo's few
# requests do not need the optimiser (`make run` and `make release` build release).
#   DEMO_ONCE=1 scripts/demo.sh     # runs every printed curl itself, checks it, stops (CI)
#
# Settings (environment):
#   DEMO_PORT=8080          port of the gateway on 127.0.0.1
#   DEMO_ONCE=1             check mode: exit 0 only when every request answers 200 success:true
#   SWIFT_BUILD_FLAGS=...   extra `swift build` flags, e.g. "--scratch-path /tmp/build"
#
# The gateway runs with `env -i` from a temporary directory, so neither your shell's
# variables nor a .env file in the repository can change what the demo does.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh

scripts/setup.sh build
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"

port=${DEMO_PORT:-8080}
once=${DEMO_ONCE:-0}
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS:-}"


case "$port" in '' | *[!0-9]*) die "DEMO_PORT must be a port number, not '$port'" ;; esac
[ "$port" -ge 1 ] && [ "$port" -le 65535 ] || die "DEMO_PORT must be in 1...65535, not $port"

# Something already accepting connections on the port (on 127.0.0.1 or on all addresses)?
port_taken_message() {
    say "demo: port $port on 127.0.0.1 is already in use."
    say "      stop whatever listens there, or choose another port: DEMO_PORT=8081 make demo"
}
if port_in_use "$port"; then port_taken_message; exit 1; fi

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-demo.XXXXXX")
mock_pid=
gateway_pid=
tail_pid=
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [ -n "$gateway_pid$mock_pid" ]; then say "demo: stopping text-gateway and mock-upstream"; fi
    stop "$gateway_pid"
    stop "$mock_pid"
    stop "$tail_pid"
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "demo: building mock-upstream and text-gateway (debug)"
build_products debug mock-upstream text-gateway

# The mock upstream, on a port the kernel picks; its first stdout line tells the URL.
"$bin/mock-upstream" --port 0 --api-key demo-key >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || mock_url=
if [ -z "$mock_url" ]; then
    cat "$work/mock.err" >&2
    die "mock-upstream did not report its address within 10 s"
fi

# The gateway: a clean environment and an empty working directory (so no .env is read).
(
    cd "$work"
    exec env -i PATH="$PATH" HOME="${HOME:-/tmp}" \
        DARVAREH_BASE_URL="$mock_url" DARVAREH_API_KEY=demo-key DARVAREH_MODEL_ID=demo-model \
        "$bin/text-gateway" serve --hostname 127.0.0.1 --port "$port" --env development
) 2>"$work/gateway.log" &
gateway_pid=$!
healthy=0
for _ in $(seq 100); do # up to 10 s
    kill -0 "$gateway_pid" 2>/dev/null || break
    if "$bin/text-gateway" healthcheck --port "$port" >/dev/null 2>&1; then healthy=1; break; fi
    sleep 0.1
done
if [ "$healthy" != 1 ]; then
    if grep -q 'Address already in use' "$work/gateway.log"; then
        port_taken_message
    else
        cat "$work/gateway.log" >&2
        say "demo: text-gateway did not become healthy on 127.0.0.1:$port within 10 s"
    fi
    exit 1
fi

# Sample texts: no single quotes (the JSON goes inside '...') and no double quotes.
news='شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی جدید به ناوگان حمل‌ونقل عمومی پایتخت اضافه می‌شود. این اتوبوس‌ها در خطوط پرتردد مرکز شهر به کار گرفته خواهند شد و انتظار می‌رود آلودگی هوا و صدا در این مناطق کاهش یابد. به گفته مسئولان، ایستگاه‌های شارژ سریع نیز در پایانه‌های اصلی نصب شده است. کارشناسان محیط زیست این اقدام را گامی مثبت می‌دانند، اما تأکید می‌کنند که برای بهبود پایدار کیفیت هوا، توسعه مترو و نوسازی خودروهای فرسوده نیز ضروری است.'
note='سلام بچه‌ها، خواستم بگم جلسه فردا که قرار بود ساعت ده باشه افتاده به ساعت دوازده، چون مدیر پروژه دیرتر می‌رسه. لطفا گزارش‌های هفتگی رو تا قبل از جلسه آماده کنید و برای همه بفرستید. اگه کسی نمی‌تونه بیاد زودتر خبر بده که برنامه رو عوض کنیم.'

names=(summarize rewrite key-points titles rewrite+formal)
bodies=(
    "{\"task\":\"summarize\",\"text\":\"$news\"}"
    "{\"task\":\"rewrite\",\"text\":\"$note\"}"
    "{\"task\":\"key-points\",\"text\":\"$news\"}"
    "{\"task\":\"titles\",\"text\":\"$news\"}"
    "{\"task\":\"rewrite\",\"text\":\"$note\",\"tone\":\"formal\"}"
)
commands=()
for body in "${bodies[@]}"; do
    commands+=("curl -sS http://127.0.0.1:$port/api/process -H 'Content-Type: application/json' --data '$body'")
done

cat <<EOF

TextGateway is running on http://127.0.0.1:$port (pid $gateway_pid)
  upstream: mock-upstream at $mock_url (pid $mock_pid), model demo-model
  health:   curl -sS http://127.0.0.1:$port/api/health

Try the four tasks (paste any line into bash):

EOF
for i in "${!names[@]}"; do
    printf '# %s\n%s\n\n' "${names[$i]}" "${commands[$i]}"
done

if [ "$once" = 1 ]; then
    # Check mode: run each printed command exactly as printed, through bash.
    failures=0
    for i in "${!names[@]}"; do
        out="$work/response.$i.json"
        status=$(bash -c "${commands[$i]} -o '$out' -w '%{http_code}'" 2>"$work/curl.err") || status="curl-failed"
        if [ "$status" = 200 ] && grep -Eq '"success"[[:space:]]*:[[:space:]]*true' "$out"; then
            printf 'PASS  %-15s HTTP %s  %s\n' "${names[$i]}" "$status" "$(head -c 160 "$out")"
        else
            failures=$((failures + 1))
            printf 'FAIL  %-15s HTTP %s  %s %s\n' "${names[$i]}" "$status" "$(head -c 300 "$out" 2>/dev/null)" "$(cat "$work/curl.err")"
        fi
    done
    total=${#names[@]}
    echo
    echo "demo: $((total - failures)) passed, $failures failed"
    if [ "$failures" -ne 0 ]; then
        say "demo: gateway log:"
        cat "$work/gateway.log" >&2
        exit 1
    fi
    exit 0
fi

echo "Gateway log follows. Press Ctrl-C to stop both servers."
echo
tail -n +1 -f "$work/gateway.log" &
tail_pid=$!
# Wait in the foreground; a signal runs the trap, which stops both servers.
while kill -0 "$gateway_pid" 2>/dev/null; do
    wait "$gateway_pid" 2>/dev/null || true
done
gateway_pid=
die "text-gateway exited unexpectedly"
