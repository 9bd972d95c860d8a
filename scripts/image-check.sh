#!/usr/bin/env bash
# The container image as its users run it: builds the Dockerfile with docker (when its engine
# answers) or podman, then runs the container and checks, from outside, what a deployment
# relies on: /api/health, a real answer through mock-upstream, the HEALTHCHECK, the
# unprivileged user, the store on a named volume, `tokens create` in a second container on
# that volume accepted live by the running one, history kept across a restart, and `stop` →
# exit 0 within the grace period. Prints a PASS/FAIL line a check, with times, and the image's
# size; exits 1 on a FAIL.
#
#   scripts/image-check.sh      (make image-check; BIN=<dir with a release mock-upstream> skips its build;
#                               SWIFT_BUILD_FLAGS=... extra `swift build` flags for it;
#                               IMAGE_BINARY_OUT=<dir>: the image's text-gateway is copied there
#                               once the image is built, before the checks: the binary users
#                               ship, which CI's other checks then run instead of a build of their own)
#
# Where no registry is reachable, scripts/container-bases.sh makes the two base images the
# Dockerfile names (the first time: a few minutes). The containers share the host's network
# namespace (--network host) and the gateway listens on a free loopback port, so nothing
# here is reachable from outside the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"
command -v curl >/dev/null || die "needs curl"

pick_container_engine

read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS:-}"

tag=localhost/textgateway:check
run_id=$$-$RANDOM
name=textgateway-check-$run_id
volume=textgateway-check-data-$run_id
work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-image-check.XXXXXX")
mock_pid=
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    "$engine" rm -f "$name" >/dev/null 2>&1 || true
    "$engine" volume rm -f "$volume" >/dev/null 2>&1 || true
    # The build stage (with its build products) and an earlier check's image, now untagged:
    # without this every run would keep gigabytes.
    "$engine" image prune -f >/dev/null 2>&1 || true
    stop "$mock_pid"
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

failures=0
pass() { printf 'PASS  %-44s %s\n' "$1" "$2"; }
fail() { printf 'FAIL  %-44s %s\n' "$1" "$2"; failures=$((failures + 1)); }

# --- build ------------------------------------------------------------------------------
started=$(now)
if ! "$engine" build "${engine_build_flags[@]}" --network host -t "$tag" . >"$work/build.log" 2>&1; then
    tail -30 "$work/build.log" >&2
    fail "build ($engine)" "$(since "$started")"
    exit 1
fi
pass "build ($engine)" "$(since "$started")"
size=$("$engine" image inspect --format '{{.Size}}' "$tag")
printf '      image %s: %s bytes (%s MB)\n' "$tag" "$size" "$((size / 1000000))"
if [ -n "${IMAGE_BINARY_OUT:-}" ]; then
    # Renamed into place whole: whoever waits for the file never runs half of it.
    mkdir -p "$IMAGE_BINARY_OUT"
    copy=$("$engine" create "$tag")
    "$engine" cp "$copy:/usr/local/bin/text-gateway" "$IMAGE_BINARY_OUT/.text-gateway.partial"
    "$engine" rm -f "$copy" >/dev/null 2>&1
    mv "$IMAGE_BINARY_OUT/.text-gateway.partial" "$IMAGE_BINARY_OUT/text-gateway"
    pass "the image's text-gateway copied out" "$IMAGE_BINARY_OUT/text-gateway"
fi
# The mock after the image: built meanwhile by another lane in CI, it is then found ready.
build_release mock-upstream

# --- run as a deployment does -----------------------------------------------------------
"$bin/mock-upstream" --port 0 --api-key image-check-key >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || die "mock-upstream did not start: $(cat "$work/mock.err")"
port=$(free_port)
base=http://127.0.0.1:$port
grace=5
"$engine" volume create "$volume" >/dev/null
started=$(now)
"$engine" run -d --name "$name" --network host -v "$volume:/app/data" \
    -e HOST=127.0.0.1 -e PORT="$port" -e DARVAREH_BASE_URL="$mock_url" -e DARVAREH_API_KEY=image-check-key \
    -e DARVAREH_MODEL_ID=image-check-model -e AUTH_REQUIRED=on -e SHUTDOWN_GRACE_SECONDS="$grace" \
    "$tag" >/dev/null 2>"$work/run.err" || die "$engine run failed: $(cat "$work/run.err")"

# await_health: polls /api/health for up to 20 s.
await_health() {
    for _ in $(seq 200); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/api/health")" = 200 ] && return 0
        [ "$("$engine" inspect --format '{{.State.Running}}' "$name")" = true ] || return 1
        sleep 0.1
    done
    return 1
}
if await_health; then
    pass "GET /api/health → 200" "$(since "$started") after start"
else
    "$engine" logs "$name" >&2 || true
    fail "GET /api/health → 200" "not within 20 s"
    exit 1
fi

# The HEALTHCHECK the image declares, run by the engine itself.
started=$(now)
if [ "$engine" = podman ]; then
    if podman healthcheck run "$name" >/dev/null 2>&1 && [ "$(podman inspect --format '{{.State.Health.Status}}' "$name")" = healthy ]; then
        pass "HEALTHCHECK → healthy" "$(since "$started")"
    else
        fail "HEALTHCHECK → healthy" "$(podman inspect --format '{{.State.Health.Status}}' "$name" 2>&1)"
    fi
else
    health=
    for _ in $(seq 300); do
        health=$(docker inspect --format '{{.State.Health.Status}}' "$name")
        [ "$health" = healthy ] && break
        sleep 0.1
    done
    if [ "$health" = healthy ]; then pass "HEALTHCHECK → healthy" "$(since "$started")"; else fail "HEALTHCHECK → healthy" "$health"; fi
fi

# The gateway's own process runs as the image's unprivileged user (10001), not root.
host_pid=$("$engine" inspect --format '{{.State.Pid}}' "$name")
uid=$(awk '/^Uid:/ { print $2 }' "/proc/$host_pid/status" 2>/dev/null || echo "?")
if [ "$uid" = 10001 ]; then pass "runs as uid 10001 (textgateway)" ""; else fail "runs as uid 10001 (textgateway)" "uid $uid"; fi

# The store is on the named volume, owned by that user.
listing=$("$engine" run --rm --network none -v "$volume:/app/data" --entrypoint /bin/ls "$tag" -ln /app/data 2>&1)
if grep -Eq '^-.* 10001 +10001 .* textgateway\.sqlite$' <<<"$listing"; then
    pass "store on the volume (textgateway.sqlite)" ""
else
    fail "store on the volume (textgateway.sqlite)" "$listing"
fi

body='{"task":"summarize","text":"شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی جدید به ناوگان حمل‌ونقل عمومی پایتخت اضافه می‌شود."}'
process() { # TOKEN OUT → status
    curl -s -o "$2" -w '%{http_code}' "$base/api/process" -H 'Content-Type: application/json' \
        ${1:+-H "Authorization: Bearer $1"} --data "$body"
}
status=$(process "" "$work/guest.json")
if [ "$status" = 401 ]; then pass "no token, AUTH_REQUIRED=on → 401" ""; else fail "no token, AUTH_REQUIRED=on → 401" "HTTP $status"; fi

# A caller token made by a second container on the same volume, taken by the running one.
started=$(now)
token=$("$engine" run --rm --network none -v "$volume:/app/data" "$tag" tokens create --user image-check --plan default --label image-check 2>"$work/tokens.err") || token=
if [[ "$token" == tgk_* ]]; then
    pass "tokens create (second container)" "$(since "$started")"
else
    fail "tokens create (second container)" "$(cat "$work/tokens.err")"
fi
# The running gateway reads the store's tokens when their generation moves (a poll): the
# first answers may still be 401.
started=$(now)
for _ in $(seq 100); do
    status=$(process "$token" "$work/answer.json")
    [ "$status" = 401 ] || break
    sleep 0.1
done
if [ "$status" = 200 ] && grep -q '"success":true' "$work/answer.json" && grep -q '"inputTokens"' "$work/answer.json"; then
    pass "the token accepted live: /api/process → 200" "$(since "$started") after it was made"
    printf '      %s…\n' "$(python3 -c 'import sys; print(open(sys.argv[1]).read()[:110])' "$work/answer.json")"
else
    fail "the token accepted live: /api/process → 200" "HTTP $status $(head -c 300 "$work/answer.json")"
fi
request_id=$(sed -n 's/.*"requestId":"\([^"]*\)".*/\1/p' "$work/answer.json")

# history_has ID: the caller's history lists the request (the ledger writes in batches).
history_has() {
    for _ in $(seq 100); do
        curl -s "$base/api/history" -H "Authorization: Bearer $token" >"$work/history.json" || true
        grep -q "\"$1\"" "$work/history.json" && return 0
        sleep 0.1
    done
    return 1
}
if [ -n "$request_id" ] && history_has "$request_id"; then pass "history lists the request" "$request_id"; else fail "history lists the request" "$(head -c 300 "$work/history.json")"; fi

# stop: SIGTERM drains and exits 0 within the grace period (the engine's timeout is longer).
stop_check() { # LABEL
    local started code elapsed
    started=$(now)
    "$engine" stop -t $((grace + 10)) "$name" >/dev/null 2>>"$work/run.err"
    elapsed=$(awk -v a="$started" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
    code=$("$engine" inspect --format '{{.State.ExitCode}}' "$name")
    if [ "$code" = 0 ] && awk -v e="$elapsed" -v g="$grace" 'BEGIN { exit !(e <= g) }'; then
        pass "$1" "exit 0 in $elapsed s (grace $grace s)"
    else
        fail "$1" "exit $code in $elapsed s (grace $grace s)"
    fi
}
# The first stop comes while an answer is in flight (the mock takes 2 s): the drain lets it
# finish, then the gateway exits 0, all within the grace period.
slow_body=${body%\"\}}' [mock:latency-ms=2000]"}'
curl -s -o "$work/slow.json" -w '%{http_code}' "$base/api/process" -H 'Content-Type: application/json' \
    -H "Authorization: Bearer $token" --data "$slow_body" >"$work/slow.status" 2>/dev/null &
slow_pid=$!
in_flight=0
for _ in $(seq 100); do
    if grep -q '"inFlight":1' <(curl -s "${mock_url%/v1}/mock/stats"); then in_flight=1; break; fi
    sleep 0.05
done
[ "$in_flight" = 1 ] || fail "an answer in flight before the stop" "the mock never saw it"
stop_check "stop with an answer in flight → exit 0"
wait "$slow_pid" || true
if [ "$(cat "$work/slow.status")" = 200 ]; then pass "the answer in flight finished (drain)" ""; else fail "the answer in flight finished (drain)" "HTTP $(cat "$work/slow.status") $(head -c 200 "$work/slow.json")"; fi

started=$(now)
"$engine" start "$name" >/dev/null 2>"$work/run.err"
if await_health; then pass "start again → healthy" "$(since "$started")"; else fail "start again → healthy" "not within 20 s"; fi
if [ -n "$request_id" ] && history_has "$request_id"; then pass "history kept across the restart" ""; else fail "history kept across the restart" "$(head -c 300 "$work/history.json")"; fi
status=$(process "$token" "$work/again.json")
if [ "$status" = 200 ]; then pass "the token still works after the restart" ""; else fail "the token still works after the restart" "HTTP $status"; fi
stop_check "stop again → exit 0"

echo
echo "image-check: $failures failed; image $((size / 1000000)) MB"
[ "$failures" -eq 0 ]
