#!/usr/bin/env bash
# docs/openapi.yaml against the running gateway: schemathesis (PyPI, into .build/openapi-venv)
# generates requests from the document for every operation and checks each answer's status,
# content type, headers and body against it — no 5xx, nothing undocumented. `make
# openapi-check` runs this.
#
# Builds mock-upstream and text-gateway (release), starts the mock (a port the kernel picks)
# and runs `st run` against two gateways in turn (each: clean environment, empty directory
# with its own SQLite store, a free port): the default configuration as a newcomer runs it
# (open, a store token made with `text-gateway tokens create`, no console, no App Attest:
# every operation, the console's and App Attest's answering 404), and one with tokens
# required (GATEWAY_TOKENS), the console and App Attest on (the caller's operations, then the
# console's with the admin token). Each run is bounded by OPENAPI_MAX_EXAMPLES (30 per
# operation and phase) and OPENAPI_MAX_TIME (60 s: each pass finds the undocumented answers
# and server errors it can within its first minute; OPENAPI_MAX_TIME=600 make openapi-check digs deeper).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh

max_examples=${OPENAPI_MAX_EXAMPLES:-30}
max_time=${OPENAPI_MAX_TIME:-60}
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS:-}"
venv=.build/openapi-venv

command -v python3 >/dev/null || die "needs python3 (and python3-venv)"
say "openapi-check: building mock-upstream and text-gateway (release)"
build_release mock-upstream text-gateway

test -x "$venv/bin/python" || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check schemathesis
say "openapi-check: $("$venv/bin/st" --version 2>&1 | head -n 1)"

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-openapi.XXXXXX")
mock_pid=
gateway_pid=
stop_on_exit "$work" gateway_pid mock_pid

mock_key=openapi-key
"$bin/mock-upstream" --port 0 --api-key "$mock_key" >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || { cat "$work/mock.err" >&2; die "mock-upstream did not start"; }

# run_schemathesis LABEL CONFIG DOCUMENT TOKEN [ARGUMENTS…]: `st run` of DOCUMENT with the
# settings file CONFIG against the gateway on $started_port, with TOKEN as the bearer token
# and the rest as st's own arguments; its report goes to $work/LABEL.
run_schemathesis() {
    local label=$1 config=$2 document=$3 token=$4 status=0
    shift 4
    # Every check runs (schemathesis's default; `--checks all` would also override the
    # settings file's per-operation `enabled = false`, see 1.) but use_after_free:
    # DELETE /api/jobs/{id} cancels a job rather than removing it (it stays readable, as
    # `cancelled`, until its retention ends: docs/api.md, "Jobs (long texts)"), and the
    # stateful phase would call that a deleted resource still there. One worker: with more,
    # schemathesis's coverage phase on Python 3.11 sometimes fails inside CPython's compiler.
    "$venv/bin/st" --config-file "$config" run "$document" \
        --url "http://127.0.0.1:$started_port" \
        --header "Authorization: Bearer $token" \
        --exclude-checks use_after_free \
        --max-examples "$max_examples" --max-time "$max_time" --seed 27 \
        --workers 1 --request-timeout 30 --no-shrink \
        --report junit --report-dir "$work/$label-report" "$@" || status=$?
    if [ "$status" -ne 0 ]; then
        kept=.build/openapi-check-logs
        rm -rf "$kept" && mkdir -p "$kept" && cp -r "$work"/*.log "$work"/mock.* "$work/$label-report" "$kept/" 2>/dev/null || true
        die "schemathesis found failures against the $label configuration (exit $status); the gateway's log and the report are in $kept"
    fi
    say "openapi-check: $label configuration PASS"
}

common=(DARVAREH_BASE_URL="$mock_url" DARVAREH_API_KEY="$mock_key" DARVAREH_MODEL_ID=openapi-model RATE_LIMITS=off METRICS=on LOG_LEVEL=warning)
# The operator's console (ADMIN_TOKEN) and the device routes (App Attest's and Android's), on
# in the second gateway only (no schema-valid body is a genuine attestation: each is 401), with
# a per-address limit
# schemathesis's thousands of cases do not reach. schemathesis sends wrong admin tokens on
# purpose (ignored_auth): the lockout after a few would turn the rest of the run into 429s,
# so its threshold is out of reach too.
admin_token="admin-$(python3 -c 'import secrets; print(secrets.token_hex(24))')"
optional=(ADMIN_TOKEN="$admin_token" ADMIN_FAILURES_PER_MINUTE=1000000
    APP_ATTEST_APP_IDS=ABCDE12345.example.openapi APP_ATTEST_REQUESTS_PER_MINUTE=1000000
    ANDROID_ATTEST_APPS=com.example.openapi=$(printf '%064d' 0))

# 1. The default configuration: an open gateway (guests admitted) with its SQLite store, and a
#    caller whose token the store made. A failed credential must still be 401 there. Every
#    operation: those of the console and App Attest (tags admin and attest) are not
#    configured here, so each answers 404 whatever the request (the document's
#    NotConfigured): a valid one, so positive_data_acceptance expects 404; one without the
#    credential its security names, which missing_required_header would want 401; another
#    method, which unsupported_method would want 405 (both held on the second gateway). Of the
#    [[operations]] that match an operation the first to set an option decides, so these
#    come before the shared ones.
unconfigured="$work/openapi-unconfigured.toml"
cat - scripts/openapi-check.toml >"$unconfigured" <<'TOML'
# This gateway has neither ADMIN_TOKEN nor App Attest (scripts/openapi-check.sh, 1.).
[[operations]]
include-tag = ["admin", "attest"]
checks.positive_data_acceptance.expected-statuses = ["404"]
checks.missing_required_header.enabled = false
checks.unsupported_method.enabled = false

TOML
store_token=$(cd "$work" && mkdir -p default && cd default &&
    env -i PATH="$PATH" HOME="${HOME:-/tmp}" "${common[@]}" "$bin/text-gateway" tokens create --user openapi-user --env production 2>/dev/null)
case $store_token in tgk_*) ;; *) die "text-gateway tokens create did not print a token" ;; esac
start_text_gateway "$bin" "$work/default" "$work/default-gateway.log" "${common[@]}" ||
    { cat "$work/default-gateway.log" >&2; die "text-gateway (default configuration) did not start"; }
gateway_pid=$started_pid
say "openapi-check: default configuration (open, no console, no App Attest) on 127.0.0.1:$started_port, mock at $mock_url"
run_schemathesis default "$unconfigured" docs/openapi.yaml "$store_token"
stop "$gateway_pid"
gateway_pid=

# 2. Tokens required (GATEWAY_TOKENS), the console and App Attest on: the document with its
#    guest entries (`{}`) taken out, so the ignored_auth check holds every caller route to its
#    401 without and with a bad token.
token="tgk_openapi_$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
hash=$(printf '%s' "$token" | "$bin/text-gateway" token hash)
"$venv/bin/python" - docs/openapi.yaml "$work/openapi-tokens.json" <<'PY'
import json, sys, yaml
document = yaml.safe_load(open(sys.argv[1]))
for item in document["paths"].values():
    for operation in item.values():
        if isinstance(operation, dict) and "security" in operation and operation.get("operationId") != "metrics":
            operation["security"] = [entry for entry in operation["security"] if entry] or operation["security"]
json.dump(document, open(sys.argv[2], "w"))
PY
start_text_gateway "$bin" "$work/tokens" "$work/tokens-gateway.log" "${common[@]}" "${optional[@]}" GATEWAY_TOKENS="$hash:openapi-user:default" ||
    { cat "$work/tokens-gateway.log" >&2; die "text-gateway (tokens required) did not start"; }
gateway_pid=$started_pid
say "openapi-check: tokens-required configuration, with the console and App Attest, on 127.0.0.1:$started_port"
run_schemathesis tokens scripts/openapi-check.toml "$work/openapi-tokens.json" "$token" --exclude-tag admin
# 3. The console's API on the same gateway, with the admin token.
run_schemathesis admin scripts/openapi-check.toml docs/openapi.yaml "$admin_token" --include-tag admin
say "openapi-check: PASS"
