#!/usr/bin/env bash
# Arize Phoenix as a real OpenTelemetry collector for end-to-end checks of the gateway's trace
# export (OTLP/HTTP, protobuf), from PyPI only.
#
#   scripts/phoenix.sh install        → a venv in $PHOENIX_DIR with arize-phoenix and
#                                       opentelemetry-proto; prints the venv's python
#   scripts/phoenix.sh start WORKDIR  → Phoenix in the background on free loopback ports, all its
#                                       state (sqlite, pid, http_port, log) in WORKDIR; prints
#                                       PHOENIX_URL=http://127.0.0.1:PORT (OTLP: $PHOENIX_URL/v1/traces)
#   scripts/phoenix.sh stop WORKDIR   → stops the Phoenix that `start WORKDIR` started, by its pid
#
# e.g.  eval "$(scripts/phoenix.sh start "$work/phoenix")"   # sets PHOENIX_URL; progress on stderr
#
# PHOENIX_DIR defaults to /var/cache/textgateway/phoenix (as root; else
# ~/.cache/textgateway/phoenix), outside any clone, so a machine installs it once (about a
# minute, 860 MB) and every later run reuses it; `install` is idempotent (marker file
# `installed` holds the versions). `start` installs first when needed and takes about 10 s.
# PHOENIX_START_TIMEOUT (seconds, default 120) bounds the wait for Phoenix to answer. Read
# spans back with scripts/phoenix_spans.py (what Phoenix keeps of a span: its header).
# Phoenix's OTLP endpoint takes only Content-Type application/x-protobuf (else 415), answers
# 422 to a body that is no ExportTraceServiceRequest, and 503 (no Retry-After) once 20,000
# spans wait; it stores only about 150 spans/s (SQLite, one savepoint a span), so keep tests
# small. On SIGTERM it drains its queue for 5 s and drops what is left. Needs python3 with venv.
set -euo pipefail
# shellcheck source=scripts/processes.sh
. "$(dirname "$0")/processes.sh"
PHOENIX_VERSION=20.26.1
OTEL_PROTO_VERSION=1.45.2
if [ "$(id -u)" = 0 ]; then default_dir=/var/cache/textgateway/phoenix; else default_dir=${XDG_CACHE_HOME:-$HOME/.cache}/textgateway/phoenix; fi
PHOENIX_DIR=${PHOENIX_DIR:-$default_dir}
PHOENIX_START_TIMEOUT=${PHOENIX_START_TIMEOUT:-120}
python=$PHOENIX_DIR/venv/bin/python
marker="arize-phoenix==$PHOENIX_VERSION opentelemetry-proto==$OTEL_PROTO_VERSION"

install() {
    if [ -x "$python" ] && [ "$(cat "$PHOENIX_DIR/installed" 2>/dev/null)" = "$marker" ]; then
        echo "$python"
        return 0
    fi
    mkdir -p "$PHOENIX_DIR"
    rm -rf "$PHOENIX_DIR/venv" "$PHOENIX_DIR/installed"
    python3 -m venv "$PHOENIX_DIR/venv" || die "python3 -m venv failed (apt-get install python3-venv)"
    say "phoenix.sh: installing arize-phoenix $PHOENIX_VERSION into $PHOENIX_DIR/venv (log: $PHOENIX_DIR/install.log)"
    "$python" -m pip install -q --disable-pip-version-check --upgrade pip >"$PHOENIX_DIR/install.log" 2>&1 ||
        die "pip upgrade failed: $(tail -3 "$PHOENIX_DIR/install.log")"
    "$python" -m pip install --disable-pip-version-check "arize-phoenix==$PHOENIX_VERSION" \
        "opentelemetry-proto==$OTEL_PROTO_VERSION" >>"$PHOENIX_DIR/install.log" 2>&1 ||
        die "pip install failed: $(tail -3 "$PHOENIX_DIR/install.log")"
    "$python" -c 'import phoenix, opentelemetry.proto.collector.trace.v1.trace_service_pb2' ||
        die "arize-phoenix installed but does not import"
    printf '%s\n' "$marker" >"$PHOENIX_DIR/installed"
    echo "$python"
}

# start WORKDIR: Phoenix from the venv in WORKDIR with a clean environment (no PHOENIX_* of the
# caller's applies: PHOENIX_SQL_DATABASE_URL would send it elsewhere), HTTP on 127.0.0.1 and
# OTLP/gRPC on free ports (Phoenix binds gRPC to [::], every interface, and has no switch to
# turn it off), no telemetry nor external resources; waits for /healthz.
start() {
    local work=$1 http_port grpc_port pid deadline started
    install >/dev/null
    mkdir -p "$work"
    work=$(cd "$work" && pwd)
    if [ -f "$work/pid" ] && kill -0 "$(cat "$work/pid")" 2>/dev/null; then
        die "Phoenix already runs from $work (pid $(cat "$work/pid")); stop it first"
    fi
    rm -f "$work/pid" "$work/http_port"
    started=$(now)
    for _ in $(seq 5); do
        http_port=$(free_port)
        grpc_port=$(free_port)
        [ "$http_port" != "$grpc_port" ] || continue
        (
            cd "$work"
            exec env -i PATH="$PATH" HOME="${HOME:-/tmp}" LANG=C.UTF-8 \
                PHOENIX_WORKING_DIR="$work" PHOENIX_HOST=127.0.0.1 PHOENIX_PORT="$http_port" \
                PHOENIX_GRPC_PORT="$grpc_port" PHOENIX_TELEMETRY_ENABLED=false \
                PHOENIX_ALLOW_EXTERNAL_RESOURCES=false PHOENIX_DISABLE_AGENT_ASSISTANT=true \
                "$python" -m phoenix.server.main serve
        ) </dev/null >"$work/log" 2>&1 &
        pid=$!
        echo "$pid" >"$work/pid"
        deadline=$((SECONDS + PHOENIX_START_TIMEOUT))
        while [ "$SECONDS" -lt "$deadline" ] && kill -0 "$pid" 2>/dev/null; do
            if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$http_port/healthz")" = 200 ]; then
                echo "$http_port" >"$work/http_port"
                say "phoenix.sh: Phoenix $PHOENIX_VERSION answers on 127.0.0.1:$http_port after $(since "$started") (pid $pid, log $work/log)"
                echo "PHOENIX_URL=http://127.0.0.1:$http_port"
                return 0
            fi
            sleep 0.2
        done
        stop "$pid"
        rm -f "$work/pid"
        grep -q 'address already in use\|Address already in use\|Failed to bind' "$work/log" || break
    done
    die "Phoenix did not answer within ${PHOENIX_START_TIMEOUT} s: $(tail -5 "$work/log")"
}

# stop WORKDIR: the Phoenix whose pid start wrote there; SIGTERM, SIGKILL after 5 s (stop of
# processes.sh, which reaps only children, so wait here until the pid is gone).
stop_phoenix() {
    local work=$1 pid
    [ -f "$work/pid" ] || { say "phoenix.sh: no $work/pid: nothing to stop"; return 0; }
    pid=$(cat "$work/pid")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        ! kill -0 "$pid" 2>/dev/null || die "pid $pid did not exit"
    fi
    rm -f "$work/pid"
    say "phoenix.sh: stopped Phoenix (pid $pid)"
}

case "${1:-}" in
    install) install ;;
    start) [ $# = 2 ] || die "usage: phoenix.sh start WORKDIR"; start "$2" ;;
    stop) [ $# = 2 ] || die "usage: phoenix.sh stop WORKDIR"; stop_phoenix "$2" ;;
    *) die "usage: phoenix.sh install | start WORKDIR | stop WORKDIR" ;;
esac
