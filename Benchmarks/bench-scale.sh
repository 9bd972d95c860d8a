#!/usr/bin/env bash
# How the gateway holds up at scale. `make bench-scale` runs this.
#
# Scenarios (each prints a markdown table and its goal):
#   idle         a fresh gateway: RSS and open fds after start, and the time from spawning the
#                process to its first 200 from GET /api/health (polled every ~1 ms); 5 starts;
#                then nginx (to a mock) and the mock alone started the same way as references
#   concurrency  1,000 / 5,000 / 10,000 POST /api/process at once, one connection each, against
#                a mock with 2 s latency: outcomes, wall time, gateway and mock peak RSS; the
#                gateway's RSS idle before the burst and RSS_SETTLE_SECONDS after it, and its KB
#                a request in flight ((peak − idle) / N); the same bursts through nginx and
#                direct as references; SCALE_ROUNDS rounds, medians
#   streams      2,000 concurrent "stream": true requests of 50 deltas each, every stream checked
#                (start, deltas whose text only grows, one done with the full text); the same
#                streams from the mock through nginx and direct as references; SCALE_ROUNDS
#                rounds, medians
#   soak         SOAK_SECONDS of steady load (32 callers, mock latency 20 ms) after a 30 s
#                warm-up: gateway RSS drift, errors, open fds before, during and after the load;
#                then the same through nginx and direct as references (one run each: the soak's
#                figures are samples over its length)
#
# Settings (environment):
#   SCENARIOS="idle concurrency streams soak"   which to run, in this order
#   IDLE_RUNS=5                                 gateway starts in idle
#   SCALE_ROUNDS=3                              rounds of concurrency and streams: each round
#                                               runs gateway, nginx and direct in turn, and each
#                                               target's medians over the rounds are reported
#   CONCURRENCY_COUNTS="1000 5000 10000"        requests in flight, one fresh gateway + mock each
#   STREAMS=2000  STREAM_DELTAS=50  STREAM_DELTA_DELAY_MS=20
#   SOAK_SECONDS=600  SOAK_CONCURRENCY=32  SOAK_LATENCY_MS=20  SOAK_WARMUP_SECONDS=30
#   SOAK_REFERENCES="nginx direct"              the same soak through nginx and straight to the
#                                               mock after the gateway's ("" for none)
#   RSS_SETTLE_SECONDS=60                       wait after a concurrency burst before the
#                                               gateway's RSS is read again (0: not read)
#   SOAK_SETTLE_SECONDS=65                      wait after the load before the last fd count
#                                               (past the mock's 60 s idle timeout)
#   SWIFT_BUILD_FLAGS="--static-swift-stdlib"
#                                               extra `swift build -c release` flags; the default
#                                               links the Swift runtime statically, as
#                                               `make release` and the Dockerfile do
#
# Needs the Swift toolchain (with libcurl4-openssl-dev) and Linux /proc; installs nothing.
# Uses ss (iproute2) when present to break the gateway's sockets down. Exits 1 when a scenario
# saw a failed request or stream.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh

scenarios=${SCENARIOS:-idle concurrency streams soak}
idle_runs=${IDLE_RUNS:-5}
rounds=${SCALE_ROUNDS:-3}
counts=${CONCURRENCY_COUNTS:-1000 5000 10000}
stream_count=${STREAMS:-2000}
stream_deltas=${STREAM_DELTAS:-50}
stream_delay=${STREAM_DELTA_DELAY_MS:-20}
soak_seconds=${SOAK_SECONDS:-600}
soak_concurrency=${SOAK_CONCURRENCY:-32}
soak_latency=${SOAK_LATENCY_MS:-20}
soak_warmup=${SOAK_WARMUP_SECONDS:-30}
soak_settle=${SOAK_SETTLE_SECONDS:-65}
rss_settle=${RSS_SETTLE_SECONDS:-60}
read -r -a soak_references <<<"${SOAK_REFERENCES-nginx direct}"
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS---static-swift-stdlib}"
read -r -a scenario_list <<<"$scenarios"
read -r -a count_list <<<"$counts"


if ! command -v swift >/dev/null; then
    say "bench-scale needs the Swift toolchain on PATH (e.g. export PATH=/opt/swift/usr/bin:\$PATH)"
    say "and libcurl's headers: apt-get install -y libcurl4-openssl-dev"
    exit 1
fi
[ -r /proc/self/status ] || die "needs Linux /proc"
for s in "${scenario_list[@]}"; do
    case "$s" in idle | concurrency | streams | soak) ;; *) die "unknown scenario '$s' (idle, concurrency, streams, soak)" ;; esac
done
positive() { case "$2" in '' | *[!0-9]* | 0) die "$1 must be a positive whole number, not '$2'" ;; esac; }
positive IDLE_RUNS "$idle_runs"
positive SCALE_ROUNDS "$rounds"
positive STREAMS "$stream_count"
positive STREAM_DELTAS "$stream_deltas"
positive SOAK_SECONDS "$soak_seconds"
positive SOAK_CONCURRENCY "$soak_concurrency"
for c in "${count_list[@]}"; do positive CONCURRENCY_COUNTS "$c"; done
for r in ${soak_references[@]+"${soak_references[@]}"}; do
    case "$r" in nginx | direct) ;; *) die "SOAK_REFERENCES takes nginx and direct, not '$r'" ;; esac
done
for v in "$stream_delay" "$soak_latency" "$soak_warmup" "$soak_settle" "$rss_settle"; do
    case "$v" in '' | *[!0-9]*) die "delays and durations must be whole numbers, not '$v'" ;; esac
done

# nginx is optional here: the idle, concurrency and streams scenarios run it as a reference when installed.
nginx_bin=$(command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true)
[ -n "$nginx_bin" ] || say "bench-scale: nginx not found (apt-get install -y nginx-light); the idle, concurrency and streams scenarios run without their nginx reference"

# Every request holds a client connection and an upstream connection in the gateway.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
fd_limit=$(ulimit -n)

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-scale.XXXXXX")
mock_pid=
gateway_pid=
nginx_pid=
sampler_pid=
load_pid=
stop_on_exit "$work" load_pid sampler_pid gateway_pid nginx_pid mock_pid

memory=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
echo "# TextGateway scale benchmark — $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo
echo "machine: $(nproc) cores, $(cpu_model), $memory; $(uname -sr)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); open-file limit $fd_limit (hard $(ulimit -Hn)); somaxconn $(cat /proc/sys/net/core/somaxconn 2>/dev/null || echo '?')"
echo "swift: $(swift --version 2>/dev/null | head -n 1)"
echo "scenarios: ${scenario_list[*]}"
echo

say "bench-scale: building mock-upstream, text-gateway and bench-client (release)"
build_release mock-upstream text-gateway bench-client

mock_key=bench-key
# The store off, as in bench-gateway: bench-store measures it.
gateway_env=(DARVAREH_API_KEY="$mock_key" DARVAREH_MODEL_ID=bench-model LOG_LEVEL=warning RATE_LIMITS=off DATABASE_URL=off UPSTREAM_MAX_CONNECTIONS=20000)
echo "commands (B = $bin; the gateway runs in an empty temp dir, in a clean environment):"
echo '```'
echo "swift build -c release --product {mock-upstream,text-gateway,bench-client} ${build_flags[*]}"
echo "B/mock-upstream --port 0 --loops 2 --api-key $mock_key --latency-ms L [--content TEXT]"
echo "env -i PATH=… HOME=… DARVAREH_BASE_URL=<mock>/v1 ${gateway_env[*]} \\"
echo "    B/text-gateway serve --hostname 127.0.0.1 --port <free port> --env production"
echo "B/bench-client startup|burst|streams|steady …   (each scenario shows its own line)"
echo '```'
echo

# --- helpers ---------------------------------------------------------------------------------

mib() { awk -v k="${1:-0}" 'BEGIN { printf "%.1f", k / 1024 }'; }
status_kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
fd_count() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
# kv FILE PREFIX KEY: KEY's value on the first line of FILE that starts with "PREFIX ".
kv() {
    awk -v prefix="$2 " -v key="$3" 'index($0, prefix) == 1 {
        for (i = 2; i <= NF; i++) if (index($i, key "=") == 1) { print substr($i, length(key) + 2); exit } }' "$1"
}
# A TcpExt counter from /proc/net/netstat (namespace-wide).
tcpext() {
    awk -v want="$1" '$1 == "TcpExt:" { if (!seen) { for (i = 2; i <= NF; i++) name[i] = $i; seen = 1 }
        else { for (i = 2; i <= NF; i++) if (name[i] == want) print $i } }' /proc/net/netstat
}

start_mock() { # ARGS... ; sets mock_pid, mock_url
    "$bin/mock-upstream" --port 0 --loops 2 --api-key "$mock_key" "$@" >"$work/mock.out" 2>"$work/mock.err" &
    mock_pid=$!
    mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") && return 0
    cat "$work/mock.err" >&2
    die "mock-upstream did not report its address within 10 s"
}

# The gateway in a clean environment and an empty directory on a free port; the start is
# retried if another process takes the port first. Sets gateway_pid, gateway_port.
start_gateway() {
    start_text_gateway "$bin" "$work/run" "$work/gateway.log" DARVAREH_BASE_URL="$mock_url" "${gateway_env[@]}" ||
        { cat "$work/gateway.log" >&2; die "text-gateway did not start"; }
    gateway_port=$started_port
    gateway_pid=$started_pid
}

stop_pair() {
    stop "$gateway_pid"
    gateway_pid=
    stop "$mock_pid"
    mock_pid=
}

# nginx as a plain reverse proxy to the current mock, CONNECTIONS per worker (unbuffered: each
# piece of an answer passed on as it comes, for event streams). Sets nginx_pid and nginx_url
# (the mock's base URL through nginx). Only when nginx is installed.
start_nginx() { # CONNECTIONS [unbuffered]
    local hostport=${mock_url#http://}
    hostport=${hostport%%/*}
    local port
    port=$(free_port)
    nginx_url="http://127.0.0.1:$port${mock_url#http://"$hostport"}"
    write_nginx_conf "$work/nginx" "$port" "$hostport" "$1" reuseport ${2:+"$2"}
    "$nginx_bin" -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" 2>"$work/nginx.log" &
    nginx_pid=$!
    for _ in $(seq 100); do
        port_in_use "$port" && [ "$(pgrep -c -P "$nginx_pid")" -ge "$(nproc)" ] && return 0
        kill -0 "$nginx_pid" 2>/dev/null || break
        sleep 0.1
    done
    cat "$work/nginx.log" "$work/nginx/error.log" >&2
    die "nginx did not start"
}

stop_nginx() {
    stop "$nginx_pid"
    nginx_pid=
}

# A target's processes for BENCH_WATCH ("mock=PID,proxy0=PID,…"; the gateway, nginx's
# workers, none for the mock direct) from the array proxies; sets watch.
watch_list() {
    watch="mock=$mock_pid"
    local index=0 pid
    for pid in ${proxies[@]+"${proxies[@]}"}; do watch+=",proxy$index=$pid"; index=$((index + 1)); done
}

# The proxy's figures in bench-client's output FILE, summed over its processes (one for the
# gateway, the workers for nginx): "RSS_KIB PEAK_FDS CPU_S RAMP_MS" (peak RSS from VmHWM).
proxy_totals() { # FILE
    grep '^watch name=proxy' "$1" | awk '
        function kv(key,   i, p) { for (i = 2; i <= NF; i++) { split($i, p, "="); if (p[1] == key) return p[2] } return 0 }
        { rss += kv("hwm_kib"); fds += kv("peak_fds"); cpu += kv("cpu_s"); r = kv("fds_95_ms"); if (r > ramp) ramp = r }
        END { printf "%d %d %.2f %d\n", rss, fds, cpu, ramp }'
}

# One request must succeed before anything is measured.
check_gateway() { # BODY_FILE
    if ! "$bin/bench-client" burst "http://127.0.0.1:$gateway_port/api/process" 1 "$1" >"$work/check.txt" 2>&1 ||
        [ "$(kv "$work/check.txt" burst ok)" != 1 ]; then
        cat "$work/check.txt" >&2
        tail -n 20 "$work/gateway.log" >&2
        die "the gateway did not answer a first request with 200"
    fi
}

text='شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی جدید به ناوگان حمل‌ونقل عمومی پایتخت اضافه می‌شود. این اتوبوس‌ها در خطوط پرتردد مرکز شهر به کار گرفته خواهند شد.'
printf '{"task":"summarize","text":"%s"}' "$text" >"$work/process.json"
# The references' body: the text as one user message, straight to the chat-completions API.
printf '{"model":"bench-model","messages":[{"role":"user","content":"%s"}],"temperature":0.2}' "$text" >"$work/direct.json"
problems=0

# --- idle ------------------------------------------------------------------------------------

# awk functions for bench-client startup's lines: kv(KEY) on the current line, median(ARRAY, N).
# shellcheck disable=SC2016 # awk's own $i, not the shell's
startup_functions='
    function kv(key,   i, p) { for (i = 1; i <= NF; i++) { split($i, p, "="); if (p[1] == key) return p[2] } return "" }
    function median(a, n,   i, j, t, b) {
        for (i = 1; i <= n; i++) b[i] = a[i]
        for (i = 2; i <= n; i++) { t = b[i]; for (j = i - 1; j >= 1 && b[j] > t; j--) b[j + 1] = b[j]; b[j + 1] = t }
        return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
    }
'

scenario_idle() {
    echo "## idle: a fresh gateway"
    echo
    echo '```'
    echo "env -i … B/bench-client startup $idle_runs 1000 -- B/text-gateway serve --hostname 127.0.0.1 --port {port} --env production"
    echo '```'
    echo "Each start: posix_spawn, then connect + GET /api/health every ~1 ms until a 200; RSS and fds"
    echo "read from /proc at that moment and again after 1 s idle; then SIGTERM."
    echo
    mkdir -p "$work/run"
    (
        cd "$work/run"
        exec env -i PATH="$PATH" HOME="${HOME:-/tmp}" DARVAREH_BASE_URL=http://127.0.0.1:9/v1 "${gateway_env[@]}" \
            "$bin/bench-client" startup "$idle_runs" 1000 -- "$bin/text-gateway" serve --hostname 127.0.0.1 --port '{port}' --env production
    ) >"$work/idle.txt" 2>"$work/idle.err" || { cat "$work/idle.err" >&2; die "idle: bench-client startup failed"; }
    awk "$startup_functions"'
        /^startup / {
            n++; ready[n] = kv("ready_ms"); rr[n] = kv("rss_ready_kib") / 1024; rss[n] = kv("rss_kib") / 1024
            anon[n] = kv("rss_anon_kib") / 1024; file[n] = kv("rss_file_kib") / 1024; fr[n] = kv("fds_ready"); fd[n] = kv("fds")
        }
        END {
            print "| start | ready ms | RSS at ready MiB | RSS after 1 s MiB | of which anon / file-backed MiB | fds at ready | fds after 1 s |"
            print "|------:|---------:|-----------------:|------------------:|--------------------------------:|-------------:|--------------:|"
            for (i = 1; i <= n; i++)
                printf "| %d | %.1f | %.1f | %.1f | %.1f / %.1f | %d | %d |\n", i, ready[i], rr[i], rss[i], anon[i], file[i], fr[i], fd[i]
            printf "| **median** | **%.1f** | %.1f | **%.1f** | %.1f / %.1f | %d | **%d** |\n", median(ready, n), median(rr, n), median(rss, n), median(anon, n), median(file, n), median(fr, n), median(fd, n)
            print ""
            m = median(rss, n); r = median(ready, n)
            printf "goal: RSS ≤ 20 MB (%.1f MiB = %.1f MB: %s), ready ≤ 100 ms (%.1f ms: %s)\n", m, m * 1.048576, (m * 1.048576 <= 20 ? "met" : "MISSED"), r, (r <= 100 ? "met" : "MISSED")
        }
    ' "$work/idle.txt"
    echo
    idle_references
}

# The idle references, $idle_runs starts each: nginx as a plain reverse proxy to a mock (its
# master and workers summed), and the mock itself (our HTTP core with a route table, no
# upstream client); ready = the first 200 from GET /v1/models (through nginx: the mock's).
idle_references() {
    echo '```'
    echo "BENCH_PORT=<port> BENCH_HEALTH_PATH=/v1/models B/bench-client startup $idle_runs 1000 -- nginx -c nginx.conf   ($(nproc) workers, to a running mock)"
    echo "BENCH_HEALTH_PATH=/v1/models B/bench-client startup $idle_runs 1000 -- B/mock-upstream --port {port} --loops 2 --api-key $mock_key"
    echo '```'
    echo "| reference | ready ms | RSS after 1 s MiB | of which anon / file-backed MiB | fds after 1 s | processes |"
    echo "|---|---:|---:|---:|---:|---:|"
    if [ -n "$nginx_bin" ]; then
        start_mock
        local hostport=${mock_url#http://} port
        hostport=${hostport%%/*}
        port=$(free_port)
        write_nginx_conf "$work/nginx-idle" "$port" "$hostport" 1024 reuseport
        BENCH_PORT=$port BENCH_HEALTH_PATH=/v1/models "$bin/bench-client" startup "$idle_runs" 1000 -- \
            "$nginx_bin" -c "$work/nginx-idle/nginx.conf" -e "$work/nginx-idle/error.log" >"$work/idle.nginx.txt" 2>"$work/idle.nginx.err" ||
            { cat "$work/idle.nginx.err" >&2; die "idle: bench-client startup of nginx failed"; }
        stop "$mock_pid"
        mock_pid=
        startup_median_row nginx "$work/idle.nginx.txt"
    fi
    BENCH_HEALTH_PATH=/v1/models "$bin/bench-client" startup "$idle_runs" 1000 -- \
        "$bin/mock-upstream" --port '{port}' --loops 2 --api-key "$mock_key" >"$work/idle.direct.txt" 2>"$work/idle.direct.err" ||
        { cat "$work/idle.direct.err" >&2; die "idle: bench-client startup of mock-upstream failed"; }
    startup_median_row "mock direct" "$work/idle.direct.txt"
    echo
}

# One row of medians from bench-client startup's lines in FILE.
startup_median_row() { # LABEL FILE
    awk -v label="$1" "$startup_functions"'
        /^startup / { n++; ready[n] = kv("ready_ms"); rss[n] = kv("rss_kib") / 1024; anon[n] = kv("rss_anon_kib") / 1024
            file[n] = kv("rss_file_kib") / 1024; fd[n] = kv("fds"); procs[n] = kv("processes") }
        END { printf "| %s | %.1f | %.1f | %.1f / %.1f | %d | %d |\n", label, median(ready, n), median(rss, n), median(anon, n), median(file, n), median(fd, n), median(procs, n) }
    ' "$2"
}

# --- rounds ----------------------------------------------------------------------------------

# The concurrency and streams scenarios run their targets in turn, gateway → nginx → direct,
# $rounds times over: every run has its row, and each target then a row of its rounds'
# medians. A run's figures are kept as one tab-separated line in a file per target.
table_row() { # CELL...
    local cell line="|"
    for cell in "$@"; do line+=" $cell |"; done
    echo "$line"
}

keep_round() { # FILE FIGURE...
    local file=$1
    shift
    (
        IFS=$'\t'
        echo "$*"
    ) >>"$file"
}

# The medians of FILE's columns, tab-separated; the columns listed in SUMS (1-based,
# comma-separated) are summed instead, and a column that is "–" in the first line stays "–".
round_medians() { # FILE SUMS
    awk -F'\t' -v sums="$2" "$startup_functions"'
        BEGIN { k = split(sums, s, ","); for (i = 1; i <= k; i++) summed[s[i]] = 1 }
        { n = NR; if (NF > cols) cols = NF; for (i = 1; i <= NF; i++) v[n, i] = $i }
        END {
            for (i = 1; i <= cols; i++) {
                if (v[1, i] == "–") value = "–"
                else if (i in summed) { value = 0; for (r = 1; r <= n; r++) value += v[r, i] }
                else { for (r = 1; r <= n; r++) a[r] = v[r, i] + 0; value = median(a, n) }
                printf "%s%s", (i > 1 ? "\t" : ""), value
            }
            printf "\n"
        }' "$1"
}

# --- concurrency -----------------------------------------------------------------------------

scenario_concurrency() {
    echo "## concurrency: N requests in flight at once, mock latency 2 s"
    echo
    echo '```'
    echo "B/mock-upstream --port 0 --loops 2 --api-key $mock_key --latency-ms 2000"
    echo "BENCH_WATCH=gateway=<pid>,mock=<pid> B/bench-client burst http://127.0.0.1:<port>/api/process N process.json"
    echo "nginx -c nginx.conf   (reverse proxy to the mock, $(nproc) workers, listen … reuseport)"
    echo "BENCH_TOKEN=$mock_key BENCH_WATCH=… B/bench-client burst http://127.0.0.1:<nginx or mock port>/v1/chat/completions N direct.json"
    echo '```'
    echo "A fresh mock per run. bench-client opens N sockets at once (Connection: close, raw epoll, a"
    echo "few µs of client CPU each) and samples the processes' RSS every 20 ms and their fds as often as"
    echo "costs at most 5 % of a core. Targets: the gateway; nginx as a plain reverse proxy to the mock"
    echo "(its figures are the sum over its workers); the mock directly, which is the floor this machine"
    echo "sets for N connections (client and mock alone). For each N the three run in turn, $rounds"
    echo "round(s) (\`SCALE_ROUNDS\`); a **median** row per target follows its rounds (succeeded and failed:"
    echo "the sums over the rounds)."
    echo "Each request holds two fds in a proxy (client + upstream socket): \"held at once\" = (peak fds −"
    echo "fds before) / 2; \"ramp\" = when the proxy's fds first reached 95 % of their peak. CPU = user +"
    echo "system seconds during the burst. Listen overflows: TcpExt ListenOverflows + ListenDrops over the"
    echo "run (namespace-wide)."
    echo "The gateway's memory: idle = its VmRSS after the first request, just before the burst; KB a"
    echo "request in flight = (peak RSS − idle) / N, in kB of 1,000 bytes; settled = its VmRSS"
    echo "$rss_settle s after the burst ended (\`RSS_SETTLE_SECONDS\`)."
    echo
    local largest=0
    for n in "${count_list[@]}"; do [ "$n" -gt "$largest" ] && largest=$n; done
    if [ "$fd_limit" -lt $((2 * largest + 64)) ]; then
        echo "note: the open-file limit here is $fd_limit (hard); $largest requests fully in flight need about"
        # The gateway's DescriptorBudget: 2·S + 64 + 2·(S / 256 + loops) ≤ limit, with a loop per core.
        echo "$((2 * largest + 64)) descriptors in the gateway (a client and an upstream socket each), so the"
        echo "gateway holds $(((fd_limit - 64 - 2 * $(nproc)) * 256 / 514)) at once and the rest wait in its listen backlog for a"
        echo "descriptor. nginx runs one process per core, each with its own limit."
        echo
    fi
    printf '| in flight | target | succeeded | failed (outcomes) | wall s | p50 ms | p99 ms | max ms | proxy peak RSS MiB | proxy peak fds | held at once | ramp ms | proxy CPU s | mock peak RSS MiB | mock CPU s | client CPU s | listen overflows | gateway idle RSS MiB | KB a request in flight | gateway settled RSS MiB |\n'
    printf '|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
    local worst_wall=0 worst_rss=0 worst_kb=0 worst_settled=0 failed_total=0 notes=() floor='' targets=(gateway nginx direct)
    [ -n "$nginx_bin" ] || targets=(gateway direct)
    for n in "${count_list[@]}"; do
        local round target
        for round in $(seq "$rounds"); do
            for target in "${targets[@]}"; do
                concurrency_run "$n" "$target" "$round"
            done
        done
        for target in "${targets[@]}"; do
            local median=()
            IFS=$'\t' read -r -a median < <(round_medians "$work/concurrency.$n.$target.tsv" 1,2)
            table_row "**$n**" "**$target, median**" "${median[@]}"
            case "$target" in
                gateway)
                    failed_total=$((failed_total + median[1]))
                    worst_wall=$(awk -v a="$worst_wall" -v b="${median[2]}" 'BEGIN { print (b > a ? b : a) }')
                    worst_rss=$(awk -v a="$worst_rss" -v b="${median[6]}" 'BEGIN { print (b > a ? b : a) }')
                    worst_kb=$(awk -v a="$worst_kb" -v b="${median[16]}" 'BEGIN { print (b > a ? b : a) }')
                    # settled RSS over idle, in percent ("–" when not read)
                    worst_settled=$(awk -v a="$worst_settled" -v idle="${median[15]}" -v settled="${median[17]}" 'BEGIN {
                        if (settled == "–" || idle <= 0) { print a; exit }
                        b = 100 * settled / idle; print (b > a ? b : a) }')
                    ;;
                direct) [ "$n" = "$largest" ] && floor=${median[2]} ;;
            esac
        done
    done
    echo
    for note in ${notes[@]+"${notes[@]}"}; do echo "- $note"; done
    [ ${#notes[@]} -eq 0 ] || echo
    awk -v failed="$failed_total" -v wall="$worst_wall" -v rss="$worst_rss" -v floor="${floor:-?}" -v rounds="$rounds" \
        -v kb="$worst_kb" -v settled="$worst_settled" -v settle="$rss_settle" 'BEGIN {
        printf "goal (medians of %d round(s), failures summed over all): all succeed (%s), wall time near 2 s, taken as ≤ 2.5 s (slowest %.2f s: %s; the mock direct takes %s s here), gateway peak RSS ≤ 512 MB (%.0f MiB: %s), ≤ 32 KB a request in flight (%.1f KB: %s)",
            rounds, (failed == 0 ? "met" : "MISSED, " failed " failed"), wall, (wall <= 2.5 ? "met" : "MISSED"), floor, rss, (rss * 1048576 <= 512e6 ? "met" : "MISSED"), kb, (kb <= 32 ? "met" : "MISSED")
        if (settle > 0) printf ", RSS %d s after the burst within 20 %% of idle (%.0f %% of idle: %s)", settle, settled, (settled <= 120 ? "met" : "MISSED")
        printf "\n" }'
    echo
    [ "$failed_total" = 0 ] || problems=$((problems + 1))
}

# One burst of N against TARGET with a fresh mock: prints its row and keeps its figures in
# $work/concurrency.N.TARGET.tsv; adds to the caller's notes.
concurrency_run() { # N TARGET ROUND
    local n=$1 target=$2 round=$3
    say "bench-scale: concurrency $n, $target, round $round"
    start_mock --latency-ms 2000
    local url watch token='' body=$work/direct.json expect='"choices":' proxies=()
    case "$target" in
        gateway)
            start_gateway
            check_gateway "$work/process.json"
            url="http://127.0.0.1:$gateway_port/api/process"
            body=$work/process.json
            expect='"success":true'
            proxies=("$gateway_pid")
            ;;
        nginx)
            start_nginx $((2 * n + 256))
            url="$nginx_url/chat/completions"
            token=$mock_key
            mapfile -t proxies < <(pgrep -P "$nginx_pid")
            ;;
        direct)
            url="$mock_url/chat/completions"
            token=$mock_key
            ;;
    esac
    watch_list
    local overflows_before drops_before fds_before=0 pid
    overflows_before=$(tcpext ListenOverflows)
    drops_before=$(tcpext ListenDrops)
    for pid in ${proxies[@]+"${proxies[@]}"}; do fds_before=$((fds_before + $(fd_count "$pid"))); done
    local out="$work/burst.$n.$target.$round.txt" idle_rss=0 auth=()
    [ "$target" != gateway ] || idle_rss=$(status_kib "$gateway_pid" VmRSS)
    # An empty BENCH_TOKEN would still send `Authorization: Bearer `, which the gateway refuses.
    [ -z "$token" ] || auth=(BENCH_TOKEN="$token")
    env ${auth[@]+"${auth[@]}"} BENCH_EXPECT="$expect" BENCH_WATCH="$watch" "$bin/bench-client" burst "$url" "$n" "$body" >"$out" 2>&1 ||
        { cat "$out" >&2; die "bench-client burst $n against $target failed"; }
    local overflows=$(($(tcpext ListenOverflows) - overflows_before + $(tcpext ListenDrops) - drops_before))
    local failed outcomes
    failed=$(kv "$out" burst failed)
    outcomes=$(kv "$out" burst outcomes)
    local rss fds cpu ramp proxy_figures=(– – – – –)
    read -r rss fds cpu ramp < <(proxy_totals "$out")
    [ ${#proxies[@]} -gt 0 ] && proxy_figures=("$(mib "$rss")" "$fds" $(((fds - fds_before) / 2)) "$ramp" "$cpu")
    # The gateway's memory: idle before the burst, KB a request at the peak, RSS once settled.
    local memory_figures=(– – –)
    if [ "$target" = gateway ]; then
        memory_figures=("$(mib "$idle_rss")" "$(awk -v peak="$rss" -v idle="$idle_rss" -v n="$n" 'BEGIN { printf "%.1f", (peak - idle) * 1.024 / n }')" –)
        if [ "$rss_settle" -gt 0 ]; then
            say "bench-scale: waiting $rss_settle s for the gateway's RSS to settle"
            sleep "$rss_settle"
            memory_figures[2]=$(mib "$(status_kib "$gateway_pid" VmRSS)")
        fi
    fi
    local figures=(
        "$(kv "$out" burst ok)" "$failed" "$(kv "$out" burst wall_s)"
        "$(kv "$out" burst p50_ms)" "$(kv "$out" burst p99_ms)" "$(kv "$out" burst max_ms)" "${proxy_figures[@]}"
        "$(mib "$(kv "$out" "watch name=mock" hwm_kib)")" "$(kv "$out" "watch name=mock" cpu_s)" "$(kv "$out" burst client_cpu_s)" "$overflows"
        "${memory_figures[@]}"
    )
    keep_round "$work/concurrency.$n.$target.tsv" "${figures[@]}"
    figures[1]="$failed$([ "$failed" = 0 ] || echo " ($outcomes)")"
    table_row "$n" "$target ($round)" "${figures[@]}"
    if [ "$target" = gateway ]; then
        [ "$fds" -ge "$fd_limit" ] && notes+=("at $n (round $round) the gateway reached its open-file limit ($fd_limit)")
        if [ -s "$work/gateway.log" ]; then
            notes+=("gateway log at $n (round $round): $(wc -l <"$work/gateway.log") line(s); $(sed -n 's/.* \([A-Z]*\) \([a-z_]*\) .*failure="\([^"]*\)".*/\1 \2: \3/p; t; s/^[^ ]* \([A-Z]*\) \([a-z_]*\).*/\1 \2/p' "$work/gateway.log" | sort | uniq -c | sort -rn | head -n 3 | sed 's/^ *//' | paste -sd ';' | sed 's/;/; /g')")
        fi
    elif [ "$failed" != 0 ]; then
        notes+=("$target at $n (round $round): $failed failed ($outcomes)")
    fi
    stop_nginx
    stop_pair
}

# --- streams ---------------------------------------------------------------------------------

scenario_streams() {
    echo "## streams: $stream_count concurrent streams of $stream_deltas deltas"
    echo
    # Two characters a piece: the mock cuts its answer into exactly STREAM_DELTAS pieces.
    local content='' directive="[mock:deltas=$stream_deltas,delta-delay-ms=$stream_delay]"
    for _ in $(seq "$stream_deltas"); do content+="نو"; done
    printf '{"task":"summarize","text":"%s %s","stream":true}' "$text" "$directive" >"$work/stream.json"
    printf '{"model":"bench-model","messages":[{"role":"user","content":"%s %s"}],"temperature":0.2,"stream":true}' \
        "$text" "$directive" >"$work/stream-direct.json"
    echo '```'
    echo "B/mock-upstream --port 0 --loops 2 --api-key $mock_key --content <$((2 * stream_deltas)) characters>"
    echo "BENCH_WATCH=mock=<pid>,proxy0=<pid> B/bench-client streams http://127.0.0.1:<port>/api/process $stream_count stream.json $stream_deltas"
    echo "nginx -c nginx.conf   (reverse proxy to the mock, $(nproc) workers, listen … reuseport, proxy_buffering off)"
    echo "BENCH_STREAM_FORMAT=chat BENCH_TOKEN=$mock_key BENCH_WATCH=… B/bench-client streams http://127.0.0.1:<nginx or mock port>/v1/chat/completions $stream_count stream-direct.json $stream_deltas"
    echo '```'
    echo "The text carries $directive. Through the gateway a stream passes with exactly: start,"
    echo "$stream_deltas delta events whose text is the previous text + delta (same requestId), then one done whose"
    echo "result is that text, then the end of the body. The references (a fresh mock each) answer the"
    echo "same text as one user message with chat-completions chunks: a stream passes with exactly"
    echo "$stream_deltas chunks of content, a finish_reason after them, then [DONE]. Client: HTTPClient.stream, one"
    echo "connection per stream. Proxy figures are summed over nginx's workers; CPU = user + system seconds."
    echo "The three run in turn, $rounds round(s) (\`SCALE_ROUNDS\`), a fresh mock each run; a **median** row"
    echo "per target follows (passed and failed: the sums over the rounds)."
    echo
    echo "| target | streams | passed | failed (reasons) | wall s | stream p50 ms | p99 ms | max ms | first delta p50 / p99 ms | proxy peak RSS MiB | proxy peak fds | proxy CPU s | mock peak RSS MiB | mock CPU s | client CPU s |"
    echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    local round target notes=() targets=(gateway nginx direct)
    [ -n "$nginx_bin" ] || targets=(gateway direct)
    for round in $(seq "$rounds"); do
        for target in "${targets[@]}"; do
            streams_run "$target" "$round" "$content"
        done
    done
    local gateway_failed=0 gateway_rss=0
    for target in "${targets[@]}"; do
        local median=()
        IFS=$'\t' read -r -a median < <(round_medians "$work/streams.$target.tsv" 1,2,3)
        table_row "**$target, median**" "${median[@]:0:7}" "${median[7]} / ${median[8]}" "${median[@]:9}"
        if [ "$target" = gateway ]; then
            gateway_failed=${median[2]}
            gateway_rss=${median[9]}
        fi
    done
    echo
    for note in ${notes[@]+"${notes[@]}"}; do echo "- $note"; done
    [ ${#notes[@]} -eq 0 ] || echo
    awk -v failed="$gateway_failed" -v rss="$gateway_rss" -v rounds="$rounds" -v ideal="$(awk -v d="$stream_deltas" -v t="$stream_delay" 'BEGIN { print d * t / 1000 }')" 'BEGIN {
        printf "goal (medians of %d round(s), failures summed over all): every stream through the gateway passes (%s), gateway peak RSS ≤ 256 MB (%.0f MiB: %s); one stream alone takes ≈ %.1f s (deltas × delay)\n",
            rounds, (failed == 0 ? "met" : "MISSED, " failed " failed"), rss, (rss * 1048576 <= 256e6 ? "met" : "MISSED"), ideal }'
    echo
    [ "$gateway_failed" = 0 ] || problems=$((problems + 1))
}

# The streams through TARGET with a fresh mock answering CONTENT: prints their row and keeps
# the figures in $work/streams.TARGET.tsv; adds to the caller's notes.
streams_run() { # TARGET ROUND CONTENT
    local target=$1 round=$2
    say "bench-scale: streams $stream_count, $target, round $round"
    start_mock --content "$3"
    local url body=$work/stream-direct.json format=chat token=$mock_key proxies=() watch
    case "$target" in
        gateway)
            start_gateway
            check_gateway "$work/process.json"
            url="http://127.0.0.1:$gateway_port/api/process"
            body=$work/stream.json
            format=process
            token=
            proxies=("$gateway_pid")
            ;;
        nginx)
            start_nginx $((2 * stream_count + 256)) unbuffered
            url="$nginx_url/chat/completions"
            mapfile -t proxies < <(pgrep -P "$nginx_pid")
            ;;
        direct)
            url="$mock_url/chat/completions"
            ;;
    esac
    watch_list
    local out="$work/streams.$target.$round.txt"
    BENCH_STREAM_FORMAT=$format BENCH_TOKEN=$token BENCH_WATCH="$watch" \
        "$bin/bench-client" streams "$url" "$stream_count" "$body" "$stream_deltas" >"$out" 2>&1 ||
        { cat "$out" >&2; die "bench-client streams against $target failed"; }
    local failed outcomes
    failed=$(kv "$out" streams failed)
    outcomes=$(kv "$out" streams outcomes)
    local rss fds cpu ramp proxy_figures=(– – –)
    read -r rss fds cpu ramp < <(proxy_totals "$out")
    [ ${#proxies[@]} -gt 0 ] && proxy_figures=("$(mib "$rss")" "$fds" "$cpu")
    local figures=(
        "$stream_count" "$(kv "$out" streams passed)" "$failed"
        "$(kv "$out" streams wall_s)" "$(kv "$out" streams p50_ms)" "$(kv "$out" streams p99_ms)" "$(kv "$out" streams max_ms)"
        "$(kv "$out" streams first_delta_p50_ms)" "$(kv "$out" streams first_delta_p99_ms)" "${proxy_figures[@]}"
        "$(mib "$(kv "$out" "watch name=mock" hwm_kib)")" "$(kv "$out" "watch name=mock" cpu_s)" "$(kv "$out" streams client_cpu_s)"
    )
    keep_round "$work/streams.$target.tsv" "${figures[@]}"
    table_row "$target ($round)" "${figures[@]:0:2}" "$failed$([ "$failed" = 0 ] || echo " ($outcomes)")" \
        "${figures[@]:3:4}" "${figures[7]} / ${figures[8]}" "${figures[@]:9}"
    [ "$failed" = 0 ] || notes+=("$target (round $round): $failed failed ($outcomes)")
    stop_nginx
    stop_pair
}

# --- soak ------------------------------------------------------------------------------------

# The gateway's TCP sockets to the mock (its upstream pool) with their states, and the rest
# (listener, clients); needs ss. Prints "UPSTREAM STATES OTHER", or "- - -" without ss.
socket_breakdown() {
    command -v ss >/dev/null || { echo "- - -"; return; }
    local mock_port=${mock_url##*:}
    mock_port=${mock_port%%/*}
    ss -tanp 2>/dev/null | awk -v pid="pid=$gateway_pid," -v up=":$mock_port" '
        index($0, pid) { if ($5 ~ up "$") { upstream++; state[$1]++ } else other++ }
        END { s = ""; for (k in state) s = s (s == "" ? "" : ",") k ":" state[k]
              printf "%d %s %d\n", upstream, (s == "" ? "-" : s), other }'
}
describe_sockets() { # "UPSTREAM STATES OTHER"
    # shellcheck disable=SC2086 # split into its three words
    set -- $1
    [ "$1" = - ] && { echo "(ss not available)"; return; }
    echo "$1 upstream ($2), $3 other TCP"
}

scenario_soak() {
    local total=$((soak_warmup + soak_seconds))
    echo "## soak: $soak_seconds s steady load after a ${soak_warmup} s warm-up"
    echo
    echo '```'
    echo "B/mock-upstream --port 0 --loops 2 --api-key $mock_key --latency-ms $soak_latency"
    echo "B/bench-client steady http://127.0.0.1:<port>/api/process $soak_concurrency $total process.json"
    echo '```'
    echo "$soak_concurrency callers in closed loops on keep-alive connections; the gateway's VmRSS and open fds"
    echo "are read from /proc every 10 s. Start = the sample after the warm-up, end = the last sample"
    echo "under load; after = ${soak_settle} s after the load stopped, then once more after one request."
    echo
    say "bench-scale: soak ${soak_warmup}+${soak_seconds} s"
    start_mock --latency-ms "$soak_latency"
    start_gateway
    check_gateway "$work/process.json"
    sleep 1
    local fds_before rss_before sockets_before
    fds_before=$(fd_count "$gateway_pid")
    rss_before=$(status_kib "$gateway_pid" VmRSS)
    sockets_before=$(socket_breakdown)
    steady_load "$total" "$work/steady.txt" "$work/samples.txt" "http://127.0.0.1:$gateway_port/api/process" "$work/process.json" "$gateway_pid"
    local sockets_end fds_end_now
    fds_end_now=$(fd_count "$gateway_pid")
    sockets_end=$(socket_breakdown)
    sleep "$soak_settle"
    local fds_after rss_after sockets_after
    fds_after=$(fd_count "$gateway_pid")
    rss_after=$(status_kib "$gateway_pid" VmRSS)
    sockets_after=$(socket_breakdown)
    # One more request: does the pool drop connections the upstream closed meanwhile?
    check_gateway "$work/process.json"
    sleep 1
    local fds_poked sockets_poked
    fds_poked=$(fd_count "$gateway_pid")
    sockets_poked=$(socket_breakdown)
    local hwm
    hwm=$(status_kib "$gateway_pid" VmHWM)
    local errors
    errors=$(kv "$work/steady.txt" steady errors)

    awk -v warm="$soak_warmup" -v total="$total" -v before_rss="$rss_before" -v before_fds="$fds_before" \
        -v after_rss="$rss_after" -v after_fds="$fds_after" -v end_fds="$fds_end_now" -v settle="$soak_settle" -v poked_fds="$fds_poked" '
        { t[NR] = $1; rss[NR] = $2; fd[NR] = $3; n = NR }
        END {
            s = 0; for (i = 1; i <= n; i++) if (t[i] >= warm) { s = i; break }
            if (s == 0) s = 1
            mid_t = warm + (total - warm) / 2; m = s
            for (i = s; i <= n; i++) if (t[i] <= mid_t) m = i
            e = n
            minfd = fd[s]; maxfd = fd[s]; minr = rss[s]; maxr = rss[s]
            for (i = s; i <= n; i++) { if (fd[i] < minfd) minfd = fd[i]; if (fd[i] > maxfd) maxfd = fd[i]; if (rss[i] < minr) minr = rss[i]; if (rss[i] > maxr) maxr = rss[i] }
            print "| point | t s | gateway RSS MiB | open fds |"
            print "|---|---:|---:|---:|"
            printf "| before load | – | %.1f | %d |\n", before_rss / 1024, before_fds
            printf "| start (after warm-up) | %d | %.1f | %d |\n", t[s], rss[s] / 1024, fd[s]
            printf "| middle | %d | %.1f | %d |\n", t[m], rss[m] / 1024, fd[m]
            printf "| end | %d | %.1f | %d |\n", t[e], rss[e] / 1024, fd[e]
            printf "| load stopped | +0 | – | %d |\n", end_fds
            printf "| after load | +%d | %.1f | %d |\n", settle, after_rss / 1024, after_fds
            printf "| then 1 request | +%d | – | %d |\n", settle + 1, poked_fds
            print ""
            drift = rss[s] > 0 ? 100 * (rss[e] - rss[s]) / rss[s] : 0
            printf "RSS under load: min %.1f, max %.1f MiB; drift end vs start %+.2f %%; fds under load %d–%d\n", minr / 1024, maxr / 1024, drift, minfd, maxfd
            printf "drift=%.2f\n", drift > "/dev/stderr"
        }
    ' "$work/samples.txt" 2>"$work/drift.txt"
    local drift
    drift=$(sed -n 's/^drift=//p' "$work/drift.txt")
    echo "load: $(sed -n 's/^steady: //p' "$work/steady.txt")"
    echo "      $(grep '^  latency' "$work/steady.txt" | sed 's/^ *//')"
    echo "gateway high-water RSS $(mib "$hwm") MiB"
    echo "gateway TCP sockets: before load $(describe_sockets "$sockets_before"); load stopped $(describe_sockets "$sockets_end");"
    echo "after +${soak_settle} s $(describe_sockets "$sockets_after"); after one more request $(describe_sockets "$sockets_poked")"
    echo
    echo "<details><summary>samples every 10 s: t, VmRSS MiB, fds; requests/s per 10 s</summary>"
    echo
    echo '```'
    awk '{ printf "%s%s %.1f %s", (NR % 8 == 1 ? (NR > 1 ? "\n" : "") : "; "), $1, $2 / 1024, $3 } END { if (NR) print "" }' "$work/samples.txt"
    sed -n 's/^steady-interval t_s=\([0-9]*\).* rps=\([0-9]*\).*/\1:\2/p' "$work/steady.txt" |
        awk '{ printf "%s%s", (NR % 12 == 1 ? (NR > 1 ? "\n" : "") : " "), $0 } END { if (NR) print "" }'
    echo '```'
    echo "</details>"
    echo
    local up_before up_after
    up_before=$(echo "$sockets_before" | cut -d' ' -f1)
    up_after=$(echo "$sockets_after" | cut -d' ' -f1)
    awk -v drift="$drift" -v errors="$errors" -v before="$fds_before" -v after="$fds_after" -v ub="$up_before" -v ua="$up_after" 'BEGIN {
        printf "goal: RSS drift within 5 %% (%+.2f %%: %s), 0 errors (%s: %s), ", drift, (drift <= 5 && drift >= -5 ? "met" : "MISSED"), errors, (errors == 0 ? "met" : "MISSED")
        if (after <= before) printf "fds back to baseline (%d before, %d after: met)\n", before, after
        else if (ub != "-" && after - ua <= before - ub)
            printf "fds back to baseline apart from %d idle pooled upstream connections (%d before, %d after; to the mock %d before, %d after; every other fd is back)\n", ua - ub, before, after, ub, ua
        else printf "fds back to baseline (%d before, %d after: MISSED)\n", before, after }'
    echo
    [ "$errors" = 0 ] || problems=$((problems + 1))
    stop_pair
    [ ${#soak_references[@]} -eq 0 ] || soak_references_table "$total"
}

# "RSS_KIB FDS" summed over the processes PID...
family_sample() {
    local rss=0 fds=0 pid
    for pid in "$@"; do
        rss=$((rss + $(status_kib "$pid" VmRSS)))
        fds=$((fds + $(fd_count "$pid")))
    done
    echo "$rss $fds"
}

# "T RSS_KIB FDS" every 10 s until TOTAL s have passed, for the processes PID... summed.
sample_every_10s() { # TOTAL PID...
    local total=$1 started now t
    shift
    started=$(date +%s)
    for t in $(seq 10 10 $((total - 1))); do
        now=$(date +%s)
        [ $((started + t)) -gt "$now" ] && sleep $((started + t - now))
        echo "$t $(family_sample "$@")"
    done
}

# The soak's load: bench-client steady on URL with BODY for SECONDS into OUT, and "T RSS_KIB
# FDS" of the processes PID... every 10 s into SAMPLES; dies when the load generator fails.
steady_load() { # SECONDS OUT SAMPLES URL BODY PID...
    local total=$1 out=$2 samples=$3 url=$4 body=$5 load_status=0
    shift 5
    "$bin/bench-client" steady "$url" "$soak_concurrency" "$total" "$body" >"$out" 2>&1 &
    load_pid=$!
    sample_every_10s "$total" "$@" >"$samples" 2>/dev/null &
    sampler_pid=$!
    wait "$load_pid" || load_status=$?
    load_pid=
    wait "$sampler_pid" || true
    sampler_pid=
    [ "$load_status" = 0 ] || { cat "$out" >&2; die "bench-client steady against $url failed"; }
}

# The soak's references: the same load through nginx and straight to the mock, each with a
# fresh mock. Their RSS (summed over nginx's workers; the mock's own for direct) and
# descriptors are read every 10 s, as the gateway's.
soak_references_table() { # SECONDS (warm-up included)
    local total=$1
    echo "References, the same load for the same time (\`SOAK_REFERENCES\`; a fresh mock each): nginx"
    echo "($(nproc) workers, reuseport; RSS and fds summed over the workers) and the mock direct (the mock's"
    echo "own RSS and fds). Start, middle and end as above; after = ${soak_settle} s after the load."
    echo
    echo "| target | requests | errors | p50 / p99 ms | RSS before / start / middle / end MiB | drift | fds before / end of load / after |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    local target
    for target in "${soak_references[@]}"; do
        [ "$target" = nginx ] && [ -z "$nginx_bin" ] && continue
        say "bench-scale: soak ${soak_warmup}+${soak_seconds} s, $target"
        start_mock --latency-ms "$soak_latency"
        local url pids=()
        if [ "$target" = nginx ]; then
            start_nginx $((2 * soak_concurrency + 256))
            url="$nginx_url/chat/completions"
            mapfile -t pids < <(pgrep -P "$nginx_pid")
        else
            url="$mock_url/chat/completions"
            pids=("$mock_pid")
        fi
        local out="$work/steady.$target.txt"
        local before
        before=$(family_sample "${pids[@]}")
        BENCH_EXPECT='"choices":' BENCH_TOKEN=$mock_key steady_load "$total" "$out" "$work/samples.$target.txt" "$url" "$work/direct.json" "${pids[@]}"
        local end_fds after
        end_fds=$(family_sample "${pids[@]}" | cut -d' ' -f2)
        sleep "$soak_settle"
        after=$(family_sample "${pids[@]}")
        local errors
        errors=$(kv "$out" steady errors)
        awk -v target="$target" -v warm="$soak_warmup" -v total="$total" -v before="$before" -v after="$after" -v end_fds="$end_fds" \
            -v requests="$(kv "$out" steady requests)" -v errors="$errors" -v p50="$(kv "$out" steady p50_ms)" -v p99="$(kv "$out" steady p99_ms)" '
            { t[NR] = $1; rss[NR] = $2; n = NR }
            END {
                s = 0; for (i = 1; i <= n; i++) if (t[i] >= warm) { s = i; break }
                if (s == 0) s = 1
                mid_t = warm + (total - warm) / 2; m = s
                for (i = s; i <= n; i++) if (t[i] <= mid_t) m = i
                split(before, b, " "); split(after, a, " ")
                drift = rss[s] > 0 ? 100 * (rss[n] - rss[s]) / rss[s] : 0
                printf "| %s | %d | %d | %s / %s | %.1f / %.1f / %.1f / %.1f | %+.2f %% | %d / %d / %d |\n", target, requests, errors, p50, p99,
                    b[1] / 1024, rss[s] / 1024, rss[m] / 1024, rss[n] / 1024, drift, b[2], end_fds, a[2] }
        ' "$work/samples.$target.txt"
        stop_nginx
        stop "$mock_pid"
        mock_pid=
    done
    echo
}

for s in "${scenario_list[@]}"; do
    "scenario_$s"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "$problems" -ne 0 ]; then
    say "bench-scale: $problems scenario(s) saw failed requests or streams"
    exit 1
fi
