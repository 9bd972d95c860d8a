#!/usr/bin/env bash
# Does the operator's console stay fast on a large store? `make bench-admin` runs this.
#
# Seeds a SQLite file and a Postgres database (a cluster of the script's own) with ROWS ledger
# rows over 30 days (Benchmarks/seed-ledger.sh's `bench-store seed`: 50 callers and guests, 4
# tasks, 2 models, ~3 % failures), with the roll-ups made by migration 6's back-fill; starts
# the gateway (release) on each with ADMIN_TOKEN, and times every call the page makes for a
# 30-day range (summary, series, callers, failures, jobs, tokens, upstreams, plans) with curl,
# CALLS times each after one unrecorded call: median and the slowest. Last, the writer's
# rows per second with the roll-ups on and off (`bench-store rollups`, interleaved rounds).
#
# Settings (environment):
#   ROWS=10000000        ledger rows to seed on each backend
#   CALLS=21             timed calls of each API call
#   WRITER_ROWS=300000 WRITER_ROUNDS=10   the writer comparison (0 rounds to skip)
#   BACKENDS="sqlite postgres"
#   SWIFT_BUILD_FLAGS="--static-swift-stdlib"
#
# Needs curl, python3 and postgresql (apt-get install -y curl python3 postgresql).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh

[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"
rows=${ROWS:-10000000}
calls=${CALLS:-21}
writer_rows=${WRITER_ROWS:-300000}
writer_rounds=${WRITER_ROUNDS:-10}
backends=${BACKENDS:-sqlite postgres}
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS---static-swift-stdlib}"
for tool in curl python3; do command -v "$tool" >/dev/null || die "needs $tool"; done

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-bench-admin.XXXXXX")
gateway_pid= started_pid=
stop_on_exit "$work" gateway_pid started_pid

echo "TextGateway console benchmark — $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores, $(cpu_model); $(uname -sr); rows=$rows calls=$calls"
echo

say "bench-admin: building text-gateway and bench-store (release)"
build_release text-gateway bench-store
admin_token=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
now_ms=$(($(date +%s) * 1000))
from=$(date -u -d "@$(((now_ms / 1000 / 86400 - 29) * 86400))" '+%Y-%m-%dT%H:%M:%SZ')
to=$(date -u -d "@$((now_ms / 1000 + 60))" '+%Y-%m-%dT%H:%M:%SZ')
range="from=$from&to=$to"

# time_calls NAME PATH: CALLS timed GETs of PATH after one unrecorded; prints NAME, the median
# and the slowest in milliseconds, and the answer's size.
time_calls() {
    local name=$1 path=$2 url="http://127.0.0.1:$started_port$2"
    curl -fsS -o "$work/answer" -H "Authorization: Bearer $admin_token" "$url" || die "$path failed"
    for _ in $(seq "$calls"); do
        curl -fsS -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $admin_token" "$url"
    done | python3 -c '
import statistics, sys
times = sorted(float(line) * 1000 for line in sys.stdin)
print(f"  {sys.argv[1]:<10} median {statistics.median(times):7.1f} ms   slowest {times[-1]:7.1f} ms   {int(sys.argv[2]):>7} bytes")
' "$name" "$(wc -c <"$work/answer")"
}

for backend in $backends; do
    case $backend in
    sqlite)
        database="sqlite:$work/console.sqlite"
        seed=(--sqlite "$work/console.sqlite")
        ;;
    postgres)
        start_postgres_cluster "$work/postgres"
        database=$postgres_url
        seed=(--postgres "$postgres_url")
        ;;
    *) die "unknown backend $backend" ;;
    esac
    say "bench-admin: seeding $rows rows into $backend"
    started=$(now)
    "$bin/bench-store" seed "${seed[@]}" --rows "$rows" --days 30 >"$work/seed-$backend.log"
    echo "$backend: $rows rows over 30 days seeded (rows, usage and roll-ups) in $(since "$started")"
    [ "$backend" = sqlite ] && echo "  file: $(du -h "$work/console.sqlite" | cut -f1)"
    start_text_gateway "$bin" "$work/gateway-$backend" "$work/gateway-$backend.log" \
        DATABASE_URL="$database" ADMIN_TOKEN="$admin_token" LOG_LEVEL=warning ||
        { cat "$work/gateway-$backend.log" >&2; die "text-gateway on $backend did not start"; }
    gateway_pid=$started_pid
    echo "  the page's calls for 30 days ($from to $to), $calls each:"
    time_calls summary "/api/admin/summary?$range"
    time_calls series "/api/admin/series?$range&tzOffset=210"
    time_calls callers "/api/admin/callers?$range"
    time_calls failures "/api/admin/failures?limit=20"
    time_calls jobs "/api/admin/jobs"
    time_calls tokens "/api/admin/tokens"
    time_calls upstreams "/api/admin/upstreams"
    time_calls plans "/api/admin/plans"
    requests=$(curl -fsS -H "Authorization: Bearer $admin_token" \
        "http://127.0.0.1:$started_port/api/admin/summary?$range" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')
    echo "  summary's requests for the range: $requests"
    stop "$gateway_pid"
    gateway_pid=
    [ "$backend" = postgres ] && stop_postgres_cluster "$work/postgres"
    echo
done

if [ "$writer_rounds" -gt 0 ]; then
    echo "the ledger writer (SQLite) with the roll-ups on and off, $writer_rows rows a run, interleaved:"
    "$bin/bench-store" rollups --rows "$writer_rows" --rounds "$writer_rounds" | sed 's/^/  /'
fi
