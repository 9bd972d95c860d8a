#!/usr/bin/env bash
# Fault drills: does the gateway keep its contract when things go wrong? `make drills` runs this.
#
# Builds mock-upstream and text-gateway (release), then for each drill starts a fresh mock
# (on a port the kernel picks) and a fresh gateway (clean environment, empty directory, a
# free port), runs the drill's client against them and stops them. Each drill's client is
# its own file beside this script (upstream-restart in drills/upstream_restart.py, and so on),
# over the helpers of drills/common.py:
#   1 upstream-restart  steady load; the mock is SIGKILLed mid-run, restarted on the same
#                       port a few seconds later; contract statuses only, bounded latency,
#                       no reset or hung connection, recovery without restarting the gateway
#   2 upstream-faults   slow upstream (504 at the timeout), garbage / empty bodies and
#                       upstream errors (502, 503), streams cut off or failing (one final
#                       `error` event, never `done`, a clean end of the chunked body)
#   3 disconnects       thousands of clients (half streaming) hanging up mid-request against
#                       a slow upstream; in-flight gauge, connections, upstream sockets, fds
#                       and RSS back to baseline, then a normal request still works
#   4 sigterm           SIGTERM with hundreds of requests in flight: all answered 200, exit 0
#                       within the grace period, new connections refused (or 503)
#   5 large-bodies      bodies just under MAX_BODY_BYTES (1 MiB): a long text, emoji, only
#                       whitespace, whitespace with marks, one letter with a MiB of marks, a
#                       short text inside whitespace or beside a large unknown field, and one
#                       byte over: each its contract answer, with the gateway's CPU per request
#   6 store-kill        LEDGER_DURABILITY=strict, 200 requests in flight, SIGKILL once half are
#                       answered, a restart on the same store: every answered request is in
#                       the history and no ledger row was dropped
#   7 upstream-failover two upstreams under load: the first SIGKILLed and restarted (no request
#                       fails while the second is up, X-Upstream says who answered, the first
#                       takes the load back after its cooldown), then both down (every request
#                       its contract status within the timeout)
#   8 jobs              20 jobs of 100,000 characters at once against a 300 ms upstream while
#                       /api/process is served at 16 connections: every job succeeds, its
#                       events end with `done`; /api/process's p99 reported beside its p99
#                       before (a figure of speed: failed only past DRILL_JOBS_P99_RATIO when set)
#   9 idempotent-retries 200 clients, each with its own Idempotency-Key (half streaming), hang
#                       up 1.5 s into a 3 s answer and retry 1-4 s later: every retry gets the
#                       whole answer with the first request id, the upstream is called once per
#                       key, each key's tokens are charged once, the history has one row per key
#  10 budgets           three instances on one Redis (each its own SQLite store), 200 guest
#                       addresses and 20 callers sending 600 requests at once (plain, streamed,
#                       /v1 with n=2, jobs) against a guests and a gateway budget in money; a
#                       refusal with Retry-After 1 is retried after it, one until the day's end
#                       stops: the ledger's cost is at most each budget (and Redis's sums equal
#                       it, nothing left held), every refusal is 429 budget_exceeded with the
#                       right scope, and what was served used at least 90 % of each budget
#  11 traces            every request traced (always_on) into a collector that is frozen
#                       (SIGSTOP) for 30 s under steady load, then thawed: no request fails
#                       or slows beyond the noise, the spans that cannot wait are dropped and
#                       counted (textgateway_trace_spans_total), and the export resumes
# Each drill prints one PASS/FAIL line with its figures; the script exits 1 if any failed
# (the work directory with every log is then kept and named).
#
# Settings (environment):
#   DRILLS="1 2 3 4 5 6 7 8 9 10 11" which drills to run
#   DRILL_CLIENTS=150             drill 1: concurrent keep-alive clients
#   DRILL_STREAM_SHARE=0.1        drill 1: fraction of those clients that stream
#   DRILL_DISCONNECTS=2000        drill 3: requests per round (half streamed)
#   DRILL_DISCONNECT_ROUNDS=4     drill 3: rounds (growth from round 2 on would be a leak)
#   DRILL_SIGTERM_REQUESTS=500    drill 4: requests in flight at the signal
#   DRILL_STORE_REQUESTS=200      drill 6: requests in flight at the kill
#   DRILL_IDEMPOTENT_CLIENTS=200  drill 9: clients that hang up and retry
#   DRILL_JOBS_P99_RATIO=         drill 8: fail when /api/process's p99 during the jobs is over
#                                 this multiple of before (a benchmark's bound: 1.5 on a quiet machine)
#   SWIFT_BUILD_FLAGS=...         extra `swift build` flags, e.g. "--scratch-path /tmp/build"
#   DRILL_BIN_DIR=                a directory holding release text-gateway and mock-upstream to
#                                 use instead of building them (e.g. a CI artifact)
# Needs python3 (3.11, standard library only), and redis-server for drill 10; installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh

drills=${DRILLS:-1 2 3 4 5 6 7 8 9 10 11}
clients=${DRILL_CLIENTS:-150}
stream_share=${DRILL_STREAM_SHARE:-0.1}
disconnects=${DRILL_DISCONNECTS:-2000}
disconnect_rounds=${DRILL_DISCONNECT_ROUNDS:-6}
sigterm_requests=${DRILL_SIGTERM_REQUESTS:-500}
store_requests=${DRILL_STORE_REQUESTS:-200}
idempotent_clients=${DRILL_IDEMPOTENT_CLIENTS:-200}
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS:-}"
bin_dir=${DRILL_BIN_DIR:-}


command -v python3 >/dev/null || die "needs python3"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "needs Python 3.11 or newer"
for value in "$clients" "$disconnects" "$disconnect_rounds" "$sigterm_requests" "$store_requests" "$idempotent_clients"; do
    case "$value" in '' | *[!0-9]* | 0) die "DRILL_* settings must be positive whole numbers, not '$value'" ;; esac
done

# Thousands of sockets: the client, the gateway (client side and upstream side) and the mock.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge $((disconnects * 2 + 512)) ] ||
    say "drills: warning: open-file limit $(ulimit -n) is low for DRILL_DISCONNECTS=$disconnects"

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-drills.XXXXXX")
mock_pid=
gateway_pid=
client_pid=
redis_pid=
other_pids=() # a drill's further gateways
failed=()
cleanup() {
    local status=$? pid
    trap - EXIT INT TERM
    [ -n "$client_pid" ] && kill -TERM "$client_pid" 2>/dev/null && wait "$client_pid" 2>/dev/null
    stop "$gateway_pid"
    for pid in ${other_pids[@]+"${other_pids[@]}"}; do stop "$pid"; done
    stop "$mock_pid"
    stop "$redis_pid"
    if [ "$status" -eq 0 ] && [ "${KEEP_WORK:-0}" = 0 ]; then
        rm -rf "$work"
    else
        say "drills: logs kept in $work"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "TextGateway fault drills — $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores; $(uname -sr); $(python3 --version); open-file limit $(ulimit -n)"

if [ -n "$bin_dir" ]; then
    for product in mock-upstream text-gateway; do
        [ -x "$bin_dir/$product" ] || die "DRILL_BIN_DIR=$bin_dir has no executable $product"
    done
    bin=$(cd "$bin_dir" && pwd)
    say "drills: using $bin/mock-upstream and $bin/text-gateway (DRILL_BIN_DIR; not built)"
else
    say "drills: building mock-upstream and text-gateway (release)"
    build_release mock-upstream text-gateway
fi
mock_key=drill-key # the mock's key, which the gateway sends upstream

# start_mock NAME PORT MOCK-OPTIONS... : sets mock_pid, mock_port, mock_url. With a fixed
# PORT (a restart) it retries for up to 10 s while the port is still taken.
start_mock() {
    local name=$1 port=$2
    shift 2
    mock_url=
    for _ in $(seq 50); do
        "$bin/mock-upstream" --port "$port" --api-key "$mock_key" "$@" >"$work/$name.out" 2>"$work/$name.err" &
        mock_pid=$!
        mock_url=$(await_mock_address "$mock_pid" "$work/$name.out") || mock_url=
        [ -n "$mock_url" ] && break
        wait "$mock_pid" 2>/dev/null || true
        mock_pid=
        [ "$port" != 0 ] && grep -qi 'in use' "$work/$name.err" && { sleep 0.2; continue; }
        cat "$work/$name.err" >&2
        die "mock-upstream ($name) did not start"
    done
    [ -n "$mock_url" ] || die "mock-upstream ($name) could not bind port $port within 10 s"
    mock_port=${mock_url##*:}
    mock_port=${mock_port%%/*}
}

# start_gateway NAME VAR=VALUE... : the gateway in a clean environment and an empty
# directory (no .env), on a free port; sets gateway_pid and gateway_port.
start_gateway() {
    local name=$1
    shift
    start_text_gateway "$bin" "$work/$name" "$work/$name.log" \
        DARVAREH_BASE_URL="$mock_url" DARVAREH_API_KEY=$mock_key DARVAREH_MODEL_ID=drill-model \
        RATE_LIMITS=off METRICS=on LOG_LEVEL=info "$@" ||
        { cat "$work/$name.log" >&2; die "text-gateway ($name) did not start"; }
    gateway_port=$started_port
    gateway_pid=$started_pid
}

stop_all() {
    stop "$gateway_pid"
    gateway_pid=
    stop "$mock_pid"
    mock_pid=
}

# record NAME STATUS: a drill's verdict (the client printed its PASS/FAIL line).
record() {
    local log
    if [ "$2" -ne 0 ]; then
        failed+=("$1")
        for log in "$work/$1".gateway*.log; do
            [ -e "$log" ] || continue
            say "drills: $1 failed; gateway log: $log (last lines below)"
            tail -n 5 "$log" >&2 2>/dev/null || true
        done
    fi
}

# await_ready FILE: up to 30 s for the drill's client ($client_pid) to write FILE once its
# load is steady; returns early when the client exits.
await_ready() {
    for _ in $(seq 300); do
        [ -s "$1" ] && break
        kill -0 "$client_pid" 2>/dev/null || break
        sleep 0.1
    done
}

drill_upstream_restart() {
    local timeout=3 status=0 marks="$work/upstream-restart.marks" ready="$work/upstream-restart.ready"
    echo
    echo "== 1. upstream killed mid-run and restarted ($clients clients, $stream_share of them streaming; mock latency 80 ms, UPSTREAM_TIMEOUT_SECONDS=$timeout)"
    start_mock upstream-restart.mock 0 --latency-ms 80
    start_gateway upstream-restart.gateway UPSTREAM_TIMEOUT_SECONDS=$timeout UPSTREAM_CONNECT_TIMEOUT_SECONDS=2 LOG_LEVEL=warning
    python3 drills/upstream_restart.py --port "$gateway_port" --clients "$clients" --stream-share "$stream_share" \
        --upstream-timeout "$timeout" --marks "$marks" --ready "$ready" --after-restart 6 &
    client_pid=$!
    await_ready "$ready"
    if [ -s "$ready" ]; then
        sleep 3
        # Marks bracket the outage: `kill` is written just before the signal, `restart` once
        # the new mock listens.
        echo "kill $(date +%s.%N)" >>"$marks"
        kill -KILL "$mock_pid"
        wait "$mock_pid" 2>/dev/null || true
        mock_pid=
        sleep 4
        start_mock upstream-restart.mock2 "$mock_port" --latency-ms 80
        echo "restart $(date +%s.%N)" >>"$marks"
    fi
    wait "$client_pid" || status=$?
    client_pid=
    stop_all
    record upstream-restart "$status"
}

drill_upstream_faults() {
    local timeout=2 first_token=2 status=0
    echo
    echo "== 2. upstream slow, garbage, empty, failing; streams cut (UPSTREAM_TIMEOUT_SECONDS=$timeout, STREAM_FIRST_TOKEN_TIMEOUT_SECONDS=$first_token)"
    start_mock upstream-faults.mock 0
    start_gateway upstream-faults.gateway UPSTREAM_TIMEOUT_SECONDS=$timeout STREAM_FIRST_TOKEN_TIMEOUT_SECONDS=$first_token
    python3 drills/upstream_faults.py --port "$gateway_port" \
        --upstream-timeout "$timeout" --first-token-timeout "$first_token" || status=$?
    stop_all
    record upstream-faults "$status"
}

drill_disconnects() {
    local status=0
    echo
    echo "== 3. $disconnects clients at a time hanging up after 0.5 s (half streaming; mock latency 5 s), $disconnect_rounds rounds"
    start_mock disconnects.mock 0 --latency-ms 5000
    # Upstream connections (and the curl handles a burst opened) are released 1 s after
    # their last use, so "back to baseline" is checked against what is kept on purpose. The
    # store is off: its page cache filling up would read as growth here (drill 6 is the store's).
    start_gateway disconnects.gateway UPSTREAM_TIMEOUT_SECONDS=30 UPSTREAM_IDLE_TIMEOUT_SECONDS=1 LOG_LEVEL=warning DATABASE_URL=off
    python3 drills/disconnects.py --port "$gateway_port" --gateway-pid "$gateway_pid" \
        --mock-port "$mock_port" --requests "$disconnects" --rounds "$disconnect_rounds" || status=$?
    stop_all
    record disconnects "$status"
}

drill_sigterm() {
    local grace=5 status=0 gateway_status=0 exit_file="$work/sigterm.exit"
    echo
    echo "== 4. SIGTERM with $sigterm_requests requests in flight (mock latency 1 s, SHUTDOWN_GRACE_SECONDS=$grace)"
    start_mock sigterm.mock 0 --latency-ms 1000
    start_gateway sigterm.gateway SHUTDOWN_GRACE_SECONDS=$grace UPSTREAM_TIMEOUT_SECONDS=30
    python3 drills/sigterm.py --port "$gateway_port" --gateway-pid "$gateway_pid" \
        --requests "$sigterm_requests" --grace "$grace" --exit-file "$exit_file" &
    client_pid=$!
    # The client sends SIGTERM; reap the gateway here (SIGKILL if it outlives the grace
    # period by far) and hand its exit status to the client.
    for _ in $(seq $(((grace + 30) * 20))); do
        kill -0 "$gateway_pid" 2>/dev/null || break
        sleep 0.05
    done
    kill -KILL "$gateway_pid" 2>/dev/null && say "drills: the gateway outlived SIGTERM by $((grace + 30)) s; killed"
    wait "$gateway_pid" || gateway_status=$?
    echo "$gateway_status $(date +%s.%N)" >"$exit_file"
    gateway_pid=
    wait "$client_pid" || status=$?
    client_pid=
    grep -q 'stopping signal=SIGTERM' "$work/sigterm.gateway.log" ||
        say "drills: the gateway log has no 'stopping signal=SIGTERM' line"
    stop_all
    record sigterm "$status"
}

drill_large_bodies() {
    local status=0
    echo
    echo "== 5. bodies just under MAX_BODY_BYTES=1048576, each sent 10 times on one connection"
    start_mock large-bodies.mock 0
    start_gateway large-bodies.gateway MAX_BODY_BYTES=1048576 LOG_LEVEL=warning
    python3 drills/large_bodies.py --port "$gateway_port" --gateway-pid "$gateway_pid" --max-body-bytes 1048576 || status=$?
    stop_all
    record large-bodies "$status"
}

drill_store_kill() {
    local status=0 token=drill-store-token-0123456789 answered="$work/store-kill.answered" hash
    hash=$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)
    echo
    echo "== 6. SIGKILL with $store_requests requests in flight (LEDGER_DURABILITY=strict, mock latencies 0.1-1.5 s), then a restart on the same store"
    start_mock store-kill.mock 0
    # The same run directory both times: the same store (data/textgateway.sqlite in it).
    start_gateway store-kill.gateway LEDGER_DURABILITY=strict GATEWAY_TOKENS="$hash:drill:default" LOG_LEVEL=warning
    python3 drills/store_kill.py --phase load --port "$gateway_port" --gateway-pid "$gateway_pid" \
        --requests "$store_requests" --token "$token" --answered "$answered" || status=$?
    # Reaped quietly: the shell would report the SIGKILL the drill itself sent.
    { wait "$gateway_pid"; } 2>/dev/null || true
    gateway_pid=
    if [ "$status" -eq 0 ]; then
        start_gateway store-kill.gateway LEDGER_DURABILITY=strict GATEWAY_TOKENS="$hash:drill:default" LOG_LEVEL=warning
        python3 drills/store_kill.py --phase verify --port "$gateway_port" --token "$token" --answered "$answered" || status=$?
    fi
    stop_all
    record store-kill "$status"
}

drill_upstream_failover() {
    local timeout=3 cooldown=2 status=0 marks="$work/upstream-failover.marks" ready="$work/upstream-failover.ready"
    local first_pid first_port second_pid
    echo
    echo "== 7. two upstreams: the first killed and restarted, then both down ($clients clients, $stream_share streaming; mock latency 80 ms, UPSTREAM_TIMEOUT_SECONDS=$timeout, UPSTREAM_COOLDOWN_SECONDS=$cooldown)"
    start_mock upstream-failover.mock-b 0 --latency-ms 80
    second_pid=$mock_pid
    local second_url=$mock_url
    start_mock upstream-failover.mock-a 0 --latency-ms 80
    first_pid=$mock_pid first_port=$mock_port
    start_gateway upstream-failover.gateway UPSTREAMS=a,b \
        UPSTREAM_A_BASE_URL="$mock_url" UPSTREAM_A_API_KEY=$mock_key UPSTREAM_A_MODEL_ID=drill-model \
        UPSTREAM_B_BASE_URL="$second_url" UPSTREAM_B_API_KEY=$mock_key UPSTREAM_B_MODEL_ID=drill-model \
        UPSTREAM_TIMEOUT_SECONDS=$timeout UPSTREAM_CONNECT_TIMEOUT_SECONDS=1 UPSTREAM_COOLDOWN_SECONDS=$cooldown LOG_LEVEL=warning
    python3 drills/upstream_failover.py --port "$gateway_port" --clients "$clients" --stream-share "$stream_share" \
        --upstream-timeout "$timeout" --cooldown "$cooldown" --marks "$marks" --ready "$ready" &
    client_pid=$!
    for _ in $(seq 300); do
        [ -s "$ready" ] && break
        kill -0 "$client_pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -s "$ready" ]; then
        sleep 2
        echo "kill $(date +%s.%N)" >>"$marks"
        kill -KILL "$first_pid"
        wait "$first_pid" 2>/dev/null || true
        sleep 4
        start_mock upstream-failover.mock-a2 "$first_port" --latency-ms 80
        first_pid=$mock_pid
        echo "restart $(date +%s.%N)" >>"$marks"
        sleep $((cooldown + 4))
        echo "both-down $(date +%s.%N)" >>"$marks"
        kill -KILL "$first_pid" "$second_pid"
        wait "$first_pid" "$second_pid" 2>/dev/null || true
    fi
    wait "$client_pid" || status=$?
    client_pid=
    stop "$first_pid"
    stop "$second_pid"
    mock_pid=
    stop_all
    record upstream-failover "$status"
}

drill_jobs() {
    local latency=300 status=0
    echo
    echo "== 8. 20 jobs of 100,000 characters at once against a ${latency} ms upstream while /api/process is served at 16 connections"
    start_mock jobs.mock 0 --latency-ms "$latency" --loops 2
    start_gateway jobs.gateway JOB_MAX_ACTIVE_PER_USER=20 LOG_LEVEL=warning
    local ratio=()
    [ -n "${DRILL_JOBS_P99_RATIO:-}" ] && ratio=(--p99-ratio "$DRILL_JOBS_P99_RATIO")
    python3 drills/jobs.py --port "$gateway_port" --gateway-pid "$gateway_pid" --mock-port "$mock_port" \
        --upstream-latency-ms "$latency" ${ratio[@]+"${ratio[@]}"} || status=$?
    stop_all
    record jobs "$status"
}

drill_idempotent_retries() {
    local status=0 token=drill-idempotent-token-0123456789 hash
    hash=$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)
    echo
    echo "== 9. $idempotent_clients clients with an Idempotency-Key each (half streaming) hang up mid-answer and retry 1-4 s later"
    start_mock idempotent-retries.mock 0
    start_gateway idempotent-retries.gateway GATEWAY_TOKENS="$hash:drill:default" LOG_LEVEL=warning
    python3 drills/idempotent_retries.py --port "$gateway_port" --mock-port "$mock_port" --token "$token" \
        --clients "$idempotent_clients" || status=$?
    stop_all
    record idempotent-retries "$status"
}

drill_budgets() {
    local status=0 prices=0.15/0.60 guests_budget=0.05 gateway_budget=0.095 max_tokens=40
    local token_prefix=drill-budgets-token-0123456789 tokens='' number hash offset zone instance
    local ports=() stores=() hour
    echo
    echo "== 10. 600 requests at once over three instances on one Redis, from 200 guest addresses and 20 callers (mock latency 100-300 ms; PRICES=drill-model=$prices, BUDGETS=guests=$guests_budget/day;gateway=$gateway_budget/day, MAX_TOKENS=$max_tokens)"
    command -v redis-server >/dev/null || die "drill 10 needs redis-server (apt-get install -y redis-server)"
    start_redis_server "$work/budgets.redis.log"
    start_mock budgets.mock 0
    for number in $(seq -w 1 20); do
        hash=$(printf '%s' "$token_prefix-$number" | sha256sum | cut -d' ' -f1)
        tokens+="${tokens:+,}$hash:budgets-caller-$number:default"
    done
    # The budgets' day is made to be at its middle now (BUDGET_TIMEZONE an offset whose local
    # time is 12:xx), so no day ends during the drill, and a refusal for the day says
    # Retry-After of about twelve hours, told apart from the 1 of room held by requests in flight.
    hour=$((10#$(date -u +%H)))
    offset=$((12 - hour))
    zone=$(printf '%s%02d:00' "$([ "$offset" -lt 0 ] && echo - || echo +)" "${offset#-}")
    for instance in 1 2 3; do
        start_gateway "budgets.gateway-$instance" LOG_LEVEL=warning AUTH_REQUIRED=off GATEWAY_TOKENS="$tokens" \
            TRUSTED_PROXIES=127.0.0.1/32 REDIS_URL="redis://127.0.0.1:$redis_port" REDIS_TIMEOUT_MS=2000 \
            DATABASE_URL="sqlite:$work/budgets.store-$instance.sqlite" \
            CURRENCY=USD PRICES="drill-model=$prices" PRICES_REQUIRED=on MAX_TOKENS=$max_tokens \
            BUDGETS="guests=$guests_budget/day;gateway=$gateway_budget/day" BUDGET_TIMEZONE="$zone"
        other_pids+=("$gateway_pid")
        gateway_pid=
        ports+=("$gateway_port")
        stores+=("$work/budgets.store-$instance.sqlite")
    done
    python3 drills/budgets.py --port "${ports[0]}" --more-ports "${ports[1]},${ports[2]}" --redis-port "$redis_port" \
        --stores "$(IFS=,; echo "${stores[*]}")" --token-prefix "$token_prefix" --callers 20 --guests 200 --requests 600 \
        --prices "$prices" --guests-budget "$guests_budget" --gateway-budget "$gateway_budget" \
        --budget-offset-seconds $((offset * 3600)) --max-tokens "$max_tokens" || status=$?
    for pid in "${other_pids[@]}"; do stop "$pid"; done
    other_pids=()
    stop_all
    stop "$redis_pid"
    redis_pid=
    record budgets "$status"
}

started=$SECONDS
drill_traces() {
    local status=0 marks="$work/traces.marks" ready="$work/traces.ready" collector_pid collector_port
    echo
    echo "== 11. every request traced; the collector frozen (SIGSTOP) for 30 s under load, then thawed"
    start_mock traces.collector 0
    collector_pid=$mock_pid
    collector_port=$mock_port
    other_pids+=("$collector_pid")
    start_mock traces.mock 0
    # Batches every 200 ms, each tried for 5 s at most: the queue (2048 spans) fills within a
    # second of the freeze, so drops are certain; a hung export waits 2 s before it is retried.
    start_gateway traces.gateway LOG_LEVEL=warning DATABASE_URL=off OTEL_TRACES_SAMPLER=always_on \
        OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$collector_port" OTEL_BSP_SCHEDULE_DELAY=200 \
        OTEL_BSP_EXPORT_TIMEOUT=5000 OTEL_EXPORTER_OTLP_TIMEOUT=2000
    python3 drills/traces.py --port "$gateway_port" --collector-port "$collector_port" --marks "$marks" \
        --ready "$ready" &
    client_pid=$!
    await_ready "$ready"
    if [ -s "$ready" ]; then
        sleep 3
        echo "stop $(date +%s.%N)" >>"$marks"
        kill -STOP "$collector_pid"
        sleep 30
        kill -CONT "$collector_pid"
        echo "resume $(date +%s.%N)" >>"$marks"
    fi
    wait "$client_pid" || status=$?
    client_pid=
    kill -CONT "$collector_pid" 2>/dev/null || true
    stop_all
    stop "$collector_pid"
    record traces "$status"
}

for drill in $drills; do
    case "$drill" in
        1 | upstream-restart) drill_upstream_restart ;;
        2 | upstream-faults) drill_upstream_faults ;;
        3 | disconnects) drill_disconnects ;;
        4 | sigterm) drill_sigterm ;;
        5 | large-bodies) drill_large_bodies ;;
        6 | store-kill) drill_store_kill ;;
        7 | upstream-failover) drill_upstream_failover ;;
        8 | jobs) drill_jobs ;;
        9 | idempotent-retries) drill_idempotent_retries ;;
        10 | budgets) drill_budgets ;;
        11 | traces) drill_traces ;;
        *) die "unknown drill '$drill' (1-11)" ;;
    esac
done
echo
if [ ${#failed[@]} -eq 0 ]; then
    echo "drills: all passed in $((SECONDS - started)) s"
else
    echo "drills: FAILED: ${failed[*]} ($((SECONDS - started)) s)"
    exit 1
fi
