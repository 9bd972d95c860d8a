#!/usr/bin/env bash
# What does sharing the state of several instances cost one instance? `make bench-instances`
# runs this.
#
# mock-upstream (no latency, one loop) and three gateways in front of it with the same callers
# (USERS gateway tokens, Benchmarks/callers.lua hands them out in turn) under a plan that
# limits requests a minute, requests at once and tokens a day — high enough that nothing is
# refused, so every request pays for each decision:
#   memory — limits in the process, the store in SQLite (one instance: the reference)
#   redis  — limits in a redis-server (REDIS_URL; two scripts a request), the store in SQLite
#   shared — limits in Redis and the store in a Postgres cluster (DATABASE_URL=postgres://…)
# The redis-server and the Postgres cluster are the run's own, on loopback. The three are
# interleaved and repeated; the script reports medians beside memory, with the CPU time per
# request of the gateway and of the shared services (redis-server and the Postgres cluster's
# processes together; the SQLite store is inside the gateway).
#
# Settings (environment):
#   ROUNDS=4            rounds (each starting with the next gateway)
#   DURATION=10s        length of one wrk run
#   CONNECTIONS="1 64"  connection counts
#   USERS=100           callers
#   WARMUP=2s           one unrecorded run per gateway first (0 to skip)
#   SWIFT_BUILD_FLAGS="--static-swift-stdlib"
#
# Needs wrk, curl, python3, redis-server and postgresql.
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
for tool in wrk curl python3 redis-server; do
    command -v "$tool" >/dev/null || die "needs $tool (apt-get install -y wrk curl python3 redis-server postgresql)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-bench-instances.XXXXXX")
mock_pid= memory_pid= redis_gateway_pid= shared_pid= started_pid= redis_pid=
stop_on_exit "$work" memory_pid redis_gateway_pid shared_pid started_pid mock_pid redis_pid

echo "TextGateway several-instances benchmark — $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores, $(cpu_model); $(uname -sr); $(redis-server --version | cut -d' ' -f1-3); PostgreSQL $("$postgres_bin/postgres" --version | awk '{print $3}')"
echo "wrk $(wrk -v 2>&1 | sed -n 's/^wrk \([^ ]*\).*/\1/p' | head -n 1); rounds=$rounds duration=$duration connections=\"${connection_list[*]}\" users=$users warmup=$warmup"
echo

say "bench-instances: building mock-upstream, text-gateway and bench-crypto (release)"
build_release mock-upstream text-gateway bench-crypto
"$bin/bench-crypto" mint --users "$users" --directory "$work"
start_redis_server "$work/redis.log"
start_postgres_cluster "$work/postgres"

mock_key=bench-key
"$bin/mock-upstream" --port 0 --loops 1 --latency-ms 0 --api-key "$mock_key" >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || mock_url=
[ -n "$mock_url" ] || { cat "$work/mock.err" >&2; die "mock-upstream did not report its address within 10 s"; }

plan="default:100000000:10000:1000000000"
start_gateway() { # NAME VAR=VALUE...
    local name=$1
    shift
    start_text_gateway "$bin" "$work/$name" "$work/$name.log" \
        DARVAREH_BASE_URL="$mock_url" DARVAREH_API_KEY=$mock_key DARVAREH_MODEL_ID=bench-model LOG_LEVEL=warning \
        METRICS=off PLANS="$plan" GATEWAY_TOKENS="$(cat "$work/gateway-tokens.env")" "$@" ||
        { cat "$work/$name.log" >&2; die "text-gateway ($name) did not start"; }
}
start_gateway memory DATABASE_URL="sqlite:$work/memory.sqlite"
memory_port=$started_port memory_pid=$started_pid
start_gateway redis DATABASE_URL="sqlite:$work/redis.sqlite" REDIS_URL="redis://127.0.0.1:$redis_port/0"
redis_gateway_port=$started_port redis_gateway_pid=$started_pid
start_gateway shared DATABASE_URL="$postgres_url" REDIS_URL="redis://127.0.0.1:$redis_port/1"
shared_port=$started_port shared_pid=$started_pid

text='شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی جدید به ناوگان حمل‌ونقل عمومی پایتخت اضافه می‌شود. این اتوبوس‌ها در خطوط پرتردد مرکز شهر به کار گرفته خواهند شد و انتظار می‌رود آلودگی هوا و صدا در این مناطق کاهش یابد. به گفته مسئولان، ایستگاه‌های شارژ سریع نیز در پایانه‌های اصلی نصب شده است.'
printf '{"task":"summarize","text":"%s"}' "$text" >"$work/body.json"
port_of() { case "$1" in memory) echo "$memory_port" ;; redis) echo "$redis_gateway_port" ;; shared) echo "$shared_port" ;; esac; }
for target in memory redis shared; do
    status=$(curl -sS -o "$work/check.$target.json" -D "$work/check.$target.head" -w '%{http_code}' -H 'Content-Type: application/json' \
        -H "Authorization: Bearer $(head -n 1 "$work/gateway-tokens.txt")" --data-binary "@$work/body.json" \
        "http://127.0.0.1:$(port_of "$target")/api/process") || status=000
    [ "$status" = 200 ] || die "$target check answered HTTP $status"
    grep -qi '^ratelimit-limit: 100000000\b' "$work/check.$target.head" || die "$target check answered without the plan's limits"
done
echo "plan:   $plan (requests a minute, at once, tokens a day: every decision made, none refused); $users callers"
echo "memory: limits in the process, DATABASE_URL=sqlite:…"
echo "redis:  REDIS_URL=redis://127.0.0.1 (the run's redis-server), DATABASE_URL=sqlite:…"
echo "shared: REDIS_URL as redis, DATABASE_URL=postgres://127.0.0.1 (the run's cluster)"
echo "each:   text-gateway serve, METRICS=off LOG_LEVEL=warning LEDGER_DURABILITY=fast, EVENT_LOOPS unset"
echo

pid_of() { case "$1" in memory) echo "$memory_pid" ;; redis) echo "$redis_gateway_pid" ;; shared) echo "$shared_pid" ;; esac; }
# The shared services' processes: redis-server and every process of the Postgres cluster.
services_pids() { echo "$redis_pid" $(pgrep -f "postgres.*-D $work/postgres/data" || true) $(pgrep -P "$(pgrep -f -o "postgres.*-D $work/postgres/data" || echo 0)" || true); }
run_wrk() { # target connections duration output: and the CPU time of the gateway and of the services
    local threads=2 before services_before
    [ "$2" -eq 1 ] && threads=1
    read -r -a services <<<"$(services_pids)"
    before=$(cpu_ticks "$(pid_of "$1")") services_before=$(cpu_ticks "${services[@]}")
    wrk -t"$threads" -c"$2" -d"$3" --latency -s Benchmarks/callers.lua "http://127.0.0.1:$(port_of "$1")/api/process" -- \
        "$work/body.json" "$work/gateway-tokens.txt" >"$4" 2>&1 || { cat "$4" >&2; die "wrk failed against $1"; }
    echo "cpu_ticks $(($(cpu_ticks "$(pid_of "$1")") - before)) $(($(cpu_ticks "${services[@]}") - services_before))" >>"$4"
}
if [ "$warmup" != 0 ] && [ "$warmup" != 0s ]; then
    for target in memory redis shared; do run_wrk "$target" 64 "$warmup" "$work/warmup.txt"; done
fi

interleaved_rounds "$rounds" run_wrk memory redis shared
wrk_run_lines "$work" "$(getconf CLK_TCK)" memory redis shared >"$work/runs.txt"

echo "medians of $rounds round(s), $duration each:"
echo
connection_csv=$(IFS=,; echo "${connection_list[*]}")
python3 Benchmarks/medians.py "$work/runs.txt" --reference memory --column limits --targets memory,redis,shared \
    --connections "$connection_csv" --cpu "gateway µs/request,Redis + Postgres µs/request"
