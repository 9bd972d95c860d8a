# Shell helpers shared by scripts/demo.sh and Benchmarks/bench-gateway.sh (sourced, not run).

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
