# Shell helpers shared by the scripts of scripts/, Benchmarks/ and drills/ (sourced, not run).

# say MESSAGE: to standard error. die MESSAGE: the same after the script's name, then exit 1.
say() { printf '%s\n' "$*" >&2; }
die() { say "$(basename "$0" .sh): $*"; exit 1; }

# stop PID: politely (SIGTERM), then firmly after 5 s (SIGKILL), and reap it. Only ever
# called with the pids of processes the calling script started.
stop() {
    local pid=$1
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# port_in_use PORT: something already accepts connections on 127.0.0.1:PORT.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_text_gateway BIN_DIR RUN_DIR LOG VAR=VALUE... : runs BIN_DIR/text-gateway in RUN_DIR
# (so no .env of the project applies) with a clean environment of PATH, HOME and the given
# variables, on a free loopback port below the ephemeral range, and waits up to 10 s for its
# health check. Sets started_port and started_pid; returns 1, with the output in LOG, when
# it did not start. A port another process takes first is retried.
start_text_gateway() {
    local bin_dir=$1 run_dir=$2 log=$3 candidate
    shift 3
    started_port=
    started_pid=
    mkdir -p "$run_dir"
    for _ in $(seq 5); do
        candidate=$((20000 + RANDOM % 12000))
        port_in_use "$candidate" && continue
        (
            cd "$run_dir"
            exec env -i PATH="$PATH" HOME="${HOME:-/tmp}" "$@" \
                "$bin_dir/text-gateway" serve --hostname 127.0.0.1 --port "$candidate" --env production
        ) 2>"$log" &
        started_pid=$!
        for _ in $(seq 200); do
            kill -0 "$started_pid" 2>/dev/null || break
            if "$bin_dir/text-gateway" healthcheck --port "$candidate" >/dev/null 2>&1; then
                started_port=$candidate
                return 0
            fi
            sleep 0.05
        done
        stop "$started_pid"
        started_pid=
        grep -q 'Address already in use' "$log" || return 1
    done
    return 1
}

# mock_address FILE: the URL mock-upstream printed to FILE ("mock-upstream listening on
# http://…"), or nothing yet. The file may not exist yet: the shell that starts the mock in
# the background creates it.
mock_address() {
    sed -n 's/^mock-upstream listening on \(http:[^ ]*\)$/\1/p' "$1" 2>/dev/null || true
}

# await_mock_address PID FILE: waits up to 10 s for the mock-upstream with PID to print its
# address to FILE, and prints it; fails when the mock exits or stays silent.
await_mock_address() {
    local url
    for _ in $(seq 200); do
        url=$(mock_address "$2")
        [ -n "$url" ] && { printf '%s\n' "$url"; return 0; }
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# write_nginx_conf DIR PORT UPSTREAM_HOSTPORT CONNECTIONS [LISTEN_OPTIONS] [unbuffered]:
# DIR/nginx.conf for nginx as a plain reverse proxy on 127.0.0.1:PORT to UPSTREAM_HOSTPORT over
# kept-alive connections: one worker per core, CONNECTIONS connections per worker (a proxied
# request takes two) and the descriptors for them, no access log. LISTEN_OPTIONS go on the
# listen line (e.g. reuseport, so the kernel spreads connections evenly over the workers);
# unbuffered passes each piece of an answer on as it comes (proxy_buffering off), as nginx
# is set up in front of event streams.
write_nginx_conf() {
    local dir=$1 port=$2 upstream=$3 connections=$4 listen_options=${5:-} buffering= files hard
    case "${6:-}" in
        '') ;;
        unbuffered) buffering='proxy_buffering off;' ;;
        *) die "write_nginx_conf: unknown option '$6'" ;;
    esac
    files=$((connections + 64))
    hard=$(ulimit -Hn)
    [ "$hard" != unlimited ] && [ "$files" -gt "$hard" ] && files=$hard
    mkdir -p "$dir"
    cat >"$dir/nginx.conf" <<CONF
worker_processes $(nproc);
worker_rlimit_nofile $files;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections $connections; }
http {
    access_log off;
    server_tokens off;
    keepalive_requests 1000000;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    upstream mock { server $upstream; keepalive 512; keepalive_requests 1000000; }
    server {
        listen 127.0.0.1:$port${listen_options:+ $listen_options};
        location / {
            proxy_pass http://mock;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_read_timeout 60s;${buffering:+
            $buffering}
        }
    }
}
CONF
}

# start_redis_server LOG [PORT]: a redis-server of the caller's own on 127.0.0.1 (PORT, else a
# free one), without persistence; waits until it accepts. Sets redis_port and redis_pid.
start_redis_server() {
    redis_port=${2:-$(free_port)}
    redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no >>"$1" 2>&1 &
    redis_pid=$!
    for _ in $(seq 100); do port_in_use "$redis_port" && return 0; sleep 0.05; done
    die "redis-server did not start on $redis_port: $(tail -3 "$1")"
}

# start_postgres_cluster DIR: a PostgreSQL 15 cluster of the caller's own in DIR (made), on a
# free loopback port, with a database `textgateway` its user `textgateway` owns; as the
# postgres user when run as root (Postgres refuses root). Sets postgres_port and
# postgres_url. Stop it with stop_postgres_cluster DIR.
postgres_bin=/usr/lib/postgresql/15/bin
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
start_postgres_cluster() {
    local dir=$1
    [ -x "$postgres_bin/pg_ctl" ] || die "needs PostgreSQL 15 (apt-get install -y postgresql)"
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir" && chmod o+x "$(dirname "$dir")"; fi
    as_postgres "$postgres_bin/initdb" -D "$dir/data" -A trust -U textgateway -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
        die "initdb failed: $(tail -3 "$dir/initdb.log")"
    postgres_port=$(free_port)
    as_postgres "$postgres_bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
        -o "-p $postgres_port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null ||
        die "postgres did not start: $(tail -3 "$dir/server.log")"
    as_postgres "$postgres_bin/createdb" -h 127.0.0.1 -p "$postgres_port" -U textgateway textgateway || die "createdb failed"
    postgres_url="postgres://textgateway@127.0.0.1:$postgres_port/textgateway"
}
stop_postgres_cluster() {
    [ -d "$1/data" ] || return 0
    as_postgres "$postgres_bin/pg_ctl" -D "$1/data" -m fast stop >/dev/null 2>&1 || true
}

# cpu_ticks PID...: CPU time (user + system, in clock ticks) of the processes and all their
# threads, from /proc.
cpu_ticks() {
    local pid total=0 stat fields
    for pid in "$@"; do
        for stat in /proc/"$pid"/task/*/stat; do
            [ -r "$stat" ] || continue
            fields=$(sed 's/.*) //' "$stat" 2>/dev/null) || continue
            read -r -a fields <<<"$fields"
            total=$((total + fields[11] + fields[12]))  # utime, stime (fields 14 and 15 of stat)
        done
    done
    echo "$total"
}

# free_port: a loopback TCP port nothing listens on now, below the kernel's ephemeral range
# (21000-32767; the Swift tests take theirs from 10000-20999): no outgoing connection on the
# machine is ever handed it, so it stays free until the server started on it binds it, however
# many connections the other CI lanes make meanwhile.
free_port() {
    python3 -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
top = min(low, 32768)
for _ in range(1000):
    port = random.randrange(21000, top) if top > 21000 else 0
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    print(s.getsockname()[1])
    break
else:
    raise SystemExit("no free port")
'
}

# libcurl_dir DIR: DIR as an absolute path (the gateways start in their own directories),
# empty for an empty DIR; dies unless DIR holds a libcurl.so.4 (Benchmarks/curl-head.sh).
libcurl_dir() {
    [ -n "$1" ] || return 0
    [ -e "$1/libcurl.so.4" ] || die "no libcurl.so.4 in $1"
    (cd "$1" && pwd)
}

# wrk_run_lines WORK_DIR TICKS TARGET...: one line of figures (Benchmarks/wrk-runs.awk) per
# wrk output WORK_DIR/<target>.c<connections>.r<round>.txt of each TARGET, in that order;
# TICKS is the clock ticks a second for the CPU columns (empty: none).
wrk_run_lines() {
    local work=$1 ticks=$2 target file name c
    shift 2
    for target in "$@"; do
        for file in "$work/$target".c*.r*.txt; do
            name=$(basename "$file" .txt)
            c=${name#*.c}; c=${c%%.*}
            awk -v target="$target" -v c="$c" -v ticks="$ticks" -f Benchmarks/wrk-runs.awk "$file"
        done
    done
}

# build_products CONFIGURATION PRODUCT...: `swift build -c CONFIGURATION` (debug or release) of
# each product with the caller's build_flags array (progress to stderr), then sets bin to the
# directory holding them. build_release PRODUCT...: the same, release. With BIN set to a
# directory that holds every product already (CI: the image's own text-gateway, copied out of
# it), nothing is built and bin is that directory.
build_products() {
    local configuration=$1 product
    shift
    if [ -n "${BIN:-}" ]; then
        for product in "$@"; do
            [ -x "$BIN/$product" ] || die "BIN=$BIN has no executable $product"
        done
        bin=$(cd "$BIN" && pwd)
        say "using $* from $bin (BIN; not built)"
        return
    fi
    for product in "$@"; do
        swift build -c "$configuration" --product "$product" ${build_flags[@]+"${build_flags[@]}"} >&2
    done
    bin=$(swift build -c "$configuration" --show-bin-path ${build_flags[@]+"${build_flags[@]}"})
}
build_release() { build_products release "$@"; }

# stop_on_exit WORK_DIR PID_VARIABLE...: when the script exits (or gets INT/TERM), stops the
# processes whose pids the named variables hold at that moment, in that order, and a Postgres
# cluster started in WORK_DIR/postgres, removes WORK_DIR, and keeps the script's exit status.
stop_on_exit() {
    exit_work=$1
    shift
    exit_pid_variables=("$@")
    trap stop_started_processes EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}
stop_started_processes() {
    local status=$? variable
    trap - EXIT INT TERM
    for variable in "${exit_pid_variables[@]}"; do stop "${!variable:-}"; done
    stop_postgres_cluster "$exit_work/postgres"
    rm -rf "$exit_work"
    exit "$status"
}

# cpu_model: the CPU's model name, for the machine line of a benchmark's output.
cpu_model() {
    local model
    model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)
    printf '%s\n' "${model:-unknown CPU}"
}

# interleaved_rounds ROUNDS RUN TARGET...: for each round, each connection count of the
# caller's connection_list array and each target, `RUN target connections output` into
# "$work/<target>.c<connections>.r<round>.txt" — every round starting with the next target
# — then dies if any run saw answers other than 2xx or 3xx (its figures would not measure
# successful requests). RUN is the caller's function that runs wrk; the prefix of the
# progress lines is the script's name.
interleaved_rounds() {
    local rounds=$1 run=$2 round c target out problems=0
    shift 2
    local targets=("$@") count=$#
    for round in $(seq "$rounds"); do
        local order=("${targets[@]:$(((round - 1) % count))}" "${targets[@]:0:$(((round - 1) % count))}")
        for c in "${connection_list[@]}"; do
            for target in "${order[@]}"; do
                say "$(basename "$0" .sh): round $round/$rounds, $c connections, $target"
                out="$work/$target.c$c.r$round.txt"
                "$run" "$target" "$c" "$duration" "$out"
                if grep -q 'Non-2xx or 3xx responses' "$out"; then
                    problems=$((problems + 1))
                    say "!!!!!! $target at $c connections, round $round: $(grep 'Non-2xx or 3xx responses' "$out")"
                fi
            done
        done
    done
    [ "$problems" -eq 0 ] || die "$problems run(s) saw non-2xx responses: these figures do not measure successful requests"
}

# pick_container_engine: sets engine to docker when its engine answers, else podman, and
# engine_build_flags to what a build needs (podman: the docker format, which keeps
# HEALTHCHECK). With podman, makes the base images the Dockerfile names when they are missing
# (scripts/container-bases.sh: no registry is needed).
pick_container_engine() {
    local started
    if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
        engine=docker
        engine_build_flags=()
        return 0
    fi
    engine=podman
    engine_build_flags=(--format docker)
    if ! command -v podman >/dev/null || ! podman image exists docker.io/library/swift:6.3-bookworm ||
        ! podman image exists docker.io/library/debian:bookworm-slim; then
        say "$(basename "$0" .sh): making the base images (scripts/container-bases.sh)"
        started=$(date +%s)
        scripts/container-bases.sh >&2
        say "$(basename "$0" .sh): base images made in $(($(date +%s) - started)) s"
    fi
}

# now, since START: a wall-clock reading, and the seconds since one ("12.3 s").
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
