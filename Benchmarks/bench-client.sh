#!/usr/bin/env bash
# Benchmark the upstream client against mock-upstream, in one run:
#   1. small completions at 64 concurrent calls for 10 s (requests/s, p50, p99);
#   2. 5,000 calls in flight at once against a 2 s upstream (wall time, client RSS).
#
#   Benchmarks/bench-client.sh [concurrency=64] [seconds=10] [inflight=5000]
set -euo pipefail
cd "$(dirname "$0")/.."
concurrency=${1:-64}
seconds=${2:-10}
inflight=${3:-5000}

swift build -c release --product mock-upstream >/dev/null
swift build -c release --product bench-client >/dev/null
bin=$(swift build -c release --show-bin-path)

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

start_mock() {  # start_mock NAME ARGS... (not in a subshell: the pid must reach the trap)
    local name=$1; shift
    "$bin/mock-upstream" --port 0 --api-key bench-key "$@" >"$work/$name.out" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do grep -q 'listening on' "$work/$name.out" && break; sleep 0.05; done
}
url_of() { sed -n 's/.*listening on \(.*\)$/\1/p' "$work/$1.out"; }
start_mock fast --delta-delay-ms 0
start_mock slow --latency-ms 2000
fast=$(url_of fast)
slow=$(url_of slow)

"$bin/bench-client" throughput "$fast" "$concurrency" "$seconds"
"$bin/bench-client" inflight "$slow" "$inflight"
