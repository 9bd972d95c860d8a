#!/usr/bin/env bash
# Traces into a real collector: `make traces-check`. Starts Arize Phoenix (scripts/phoenix.sh,
# installed once outside the clone), a mock upstream, and text-gateway (release) exporting
# every trace to Phoenix over OTLP/HTTP, with two upstreams in fallback order, the first a
# closed port, answers waiting for their ledger rows (LEDGER_DURABILITY=strict). scripts/traces_check.py then sends a plain request that carries a caller's
# traceparent, a stream, a /v1 call that falls back from the dead upstream to the live one, a
# refused request and a job; reads the spans back through Phoenix's own API and checks their
# parent/child shape, the GenAI attributes, the traceparent the upstream saw, and that no
# text, answer or credential is in any span.
#
# Settings (environment): SWIFT_BUILD_FLAGS as for `make release` (e.g. a scratch path);
# KEEP_WORK=1 keeps the work directory (logs, Phoenix's database) after a pass.
# Needs python3 with venv, curl; Phoenix comes from PyPI (scripts/phoenix.sh install).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS:-}"

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-traces.XXXXXX")
mock_pid=
gateway_pid=
phoenix_started=0
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    stop "$gateway_pid"
    stop "$mock_pid"
    [ "$phoenix_started" = 1 ] && scripts/phoenix.sh stop "$work/phoenix" || true
    if [ "$status" -eq 0 ] && [ "${KEEP_WORK:-0}" = 0 ]; then
        rm -rf "$work"
    else
        say "traces-check: logs kept in $work"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "traces-check: building mock-upstream and text-gateway (release)"
build_release mock-upstream text-gateway
scripts/phoenix.sh install >/dev/null
phoenix_started=1
eval "$(scripts/phoenix.sh start "$work/phoenix")"

mock_key=traces-check-upstream-key-7f3a
"$bin/mock-upstream" --port 0 --api-key "$mock_key" >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || die "mock-upstream did not start"
mock_port=${mock_url##*:}
mock_port=${mock_port%%/*}
dead_port=$(free_port) # nothing listens there: the first upstream's every attempt is refused

caller_token=traces-check-caller-token-0123456789abcdef
token_hash=$(printf '%s' "$caller_token" | sha256sum | cut -d' ' -f1)
start_text_gateway "$bin" "$work/gateway" "$work/gateway.log" \
    UPSTREAMS=dead,live \
    UPSTREAM_DEAD_BASE_URL="http://127.0.0.1:$dead_port/v1" UPSTREAM_DEAD_API_KEY=dead-upstream-key-41c9 \
    UPSTREAM_DEAD_MODEL_ID=traces-model GATEWAY_MODELS=chat-alias=traces-model \
    UPSTREAM_LIVE_BASE_URL="$mock_url" UPSTREAM_LIVE_API_KEY="$mock_key" UPSTREAM_LIVE_MODEL_ID=traces-model \
    UPSTREAM_RETRIES=1 UPSTREAM_BACKOFF_MS=20 \
    UPSTREAM_BREAKER_FAILURES=1000 \
    GATEWAY_TOKENS="$token_hash:traces-caller:pro" PLANS="pro:600:20:1000000" AUTH_REQUIRED=off \
    OTEL_EXPORTER_OTLP_ENDPOINT="$PHOENIX_URL" OTEL_SERVICE_NAME=text-gateway-traces-check \
    OTEL_RESOURCE_ATTRIBUTES="openinference.project.name=traces-check,deployment.environment=ci" \
    OTEL_BSP_SCHEDULE_DELAY=200 TRACE_CONTEXT_FROM=any LOG_LEVEL=info LEDGER_DURABILITY=strict ||
    { cat "$work/gateway.log" >&2; die "text-gateway did not start"; }
gateway_pid=$started_pid
say "traces-check: gateway on $started_port, mock on $mock_port, Phoenix at $PHOENIX_URL"
python3 scripts/traces_check.py --gateway "http://127.0.0.1:$started_port" --mock "http://127.0.0.1:$mock_port" \
    --phoenix "$PHOENIX_URL" --project traces-check --log "$work/gateway.log" \
    --secret "$mock_key" --secret dead-upstream-key-41c9 --secret "$caller_token"
