#!/usr/bin/env bash
# The operator console (/admin) in a real browser against the real gateway: `make console-check`.
#
# Builds mock-upstream and text-gateway, starts the mock (a port the kernel picks) and the
# gateway (clean environment, a temporary directory with its own SQLite store, a free port,
# ADMIN_TOKEN set), makes two caller tokens with `text-gateway tokens create`, sends a known
# number of /api/process requests as alice, bob and guests (some refused with 400), then runs
# Tests/python/console_check.py: headless Chromium driven over the DevTools protocol (standard
# library only) logs in, checks the totals, languages, ranges, makes and revokes a token from
# the page, sees a refused form shown with the gateway's own message and code, exports the
# callers CSV, checks the cost (in all, per caller, per model) and the budgets' state, and takes
# screenshots into .build/console-artefacts/.
#
# Installs Debian's chromium when missing (scripts/setup.sh test). Stops only what it started.
#   CONSOLE_TIMEOUT=30      seconds the page may take to show the requests sent
#   SWIFT_BUILD_FLAGS=...   extra `swift build` flags
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh

[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS:-}"
timeout=${CONSOLE_TIMEOUT:-30}
artefacts=$(pwd)/.build/console-artefacts

command -v chromium >/dev/null || scripts/setup.sh test
command -v chromium >/dev/null || die "needs Debian's chromium (scripts/setup.sh test installs it)"
command -v python3 >/dev/null || die "needs python3"

say "console-check: building mock-upstream and text-gateway"
for product in mock-upstream text-gateway; do
    swift build --product "$product" ${build_flags[@]+"${build_flags[@]}"} >&2
done
bin=$(swift build --show-bin-path ${build_flags[@]+"${build_flags[@]}"})

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-console.XXXXXX")
mock_pid=
gateway_pid=
stop_on_exit "$work" gateway_pid mock_pid
rm -rf "$artefacts" && mkdir -p "$artefacts"

mock_key=console-key
"$bin/mock-upstream" --port 0 --api-key "$mock_key" >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || { cat "$work/mock.err" >&2; die "mock-upstream did not start"; }

admin_token=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
# ERROR_LANGUAGE=fa: the page is served in Persian whatever Chromium's Accept-Language says.
# Prices, a plan with a budget of its own, and the guests' and the gateway's budgets: the page
# shows the cost and the budgets' state.
settings=(DARVAREH_BASE_URL="$mock_url" DARVAREH_API_KEY="$mock_key" DARVAREH_MODEL_ID=console-model
    ADMIN_TOKEN="$admin_token" ERROR_LANGUAGE=fa LOG_LEVEL=warning
    CURRENCY=USD PRICES=console-model=2/8 PLANS=default:-:-:-:1/day BUDGETS="guests=1/day;gateway=5/day")
run_dir="$work/gateway"
mkdir -p "$run_dir"
make_token() {
    (cd "$run_dir" && env -i PATH="$PATH" HOME="${HOME:-/tmp}" "${settings[@]}" \
        "$bin/text-gateway" tokens create --user "$1" --label "$2" --env production 2>"$work/tokens.err") ||
        { cat "$work/tokens.err" >&2; die "text-gateway tokens create --user $1 failed"; }
}
alice_token=$(make_token alice "alice's phone")
bob_token=$(make_token bob "bob's laptop")
case "$alice_token$bob_token" in tgk_*tgk_*) ;; *) die "text-gateway tokens create did not print tokens" ;; esac

start_text_gateway "$bin" "$run_dir" "$work/gateway.log" "${settings[@]}" ||
    { cat "$work/gateway.log" >&2; die "text-gateway did not start"; }
gateway_pid=$started_pid
base="http://127.0.0.1:$started_port"
say "console-check: gateway on $base (pid $gateway_pid), mock at $mock_url (pid $mock_pid)"

# The page's headers, and the API closed without the admin token.
headers=$(curl -sS -D - -o /dev/null --max-time 10 "$base/admin")
for header in "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'" \
    "X-Content-Type-Options: nosniff" "Referrer-Policy: no-referrer" "Cache-Control: no-store"; do
    grep -qiF "$header" <<<"$headers" || die "GET /admin lacks the header '$header'"
done
status=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 "$base/api/admin/plans")
[ "$status" = 401 ] || die "GET /api/admin/plans without the admin token answers $status, not 401"

# process USER_TOKEN TASK: one /api/process request (no token: a guest); prints its status.
text='شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی جدید به ناوگان حمل‌ونقل عمومی پایتخت اضافه می‌شود.'
process() {
    local auth=()
    [ -n "$1" ] && auth=(-H "Authorization: Bearer $1")
    curl -sS -o /dev/null -w '%{http_code}' --max-time 20 "$base/api/process" "${auth[@]}" \
        -H 'Content-Type: application/json' --data "{\"task\":\"$2\",\"text\":\"$text\"}"
}
# expect STATUS USER_TOKEN TASK
sent=0
expect() {
    local got
    got=$(process "$2" "$3")
    [ "$got" = "$1" ] || die "/api/process ($3) answered $got, not $1"
    sent=$((sent + 1))
}
# alice: 4 answers (the second summary from the cache) and 1 unknown task (400);
# bob: 2 answers and 1 unknown task; guests: 2 answers. 10 requests in all.
expect 200 "$alice_token" summarize
expect 200 "$alice_token" summarize
expect 200 "$alice_token" rewrite
expect 200 "$alice_token" key-points
expect 400 "$alice_token" no-such-task
expect 200 "$bob_token" titles
expect 200 "$bob_token" titles
expect 400 "$bob_token" no-such-task
expect 200 "" summarize
expect 200 "" rewrite
say "console-check: sent $sent requests (alice 5, bob 3, guests 2; 2 of them 400)"

status=0
timeout 600 python3 Tests/python/console_check.py --base-url "$base" --admin-token "$admin_token" \
    --expected-requests "$sent" --caller alice=5 --caller bob=3 --caller '(guests)=2' \
    --artefacts "$artefacts" --timeout "$timeout" || status=$?
if [ "$status" -ne 0 ]; then
    cp "$work/gateway.log" "$artefacts/" 2>/dev/null || true
    die "FAIL (the gateway's log and any screenshots are in $artefacts)"
fi
say "console-check: PASS; screenshots and the exported CSV in $artefacts"
