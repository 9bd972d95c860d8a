#!/usr/bin/env bash
# Do connections that arrive together while the server is idle end up using every core once
# their requests need the CPU? `make bench-spread` (part of `make bench`).
#
# The HTTP core (bench-server) answers `GET /work?us=WORK_US` after computing for WORK_US
# microseconds. wrk opens CONNECTIONS connections at once against the idle server and keeps
# them busy: new connections are packed onto one loop while the loops are idle, so only
# moving connections between requests (a saturated loop hands kept-alive ones to an idle
# loop while the machine has CPU to spare) lets the second loop take its part. Runs, in
# turn, the server with one loop (the ceiling of a single loop) and with one loop per core,
# a fresh server for every run, and reports medians: requests/s, p50/p99 and each loop's
# CPU time.
#
# Settings (environment): ROUNDS=3 DURATION=5s CONNECTIONS=64 WORK_US=200
# Needs wrk (apt-get install -y wrk); installs nothing itself.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh

rounds=${ROUNDS:-3}
duration=${DURATION:-5s}
connections=${CONNECTIONS:-64}
work_us=${WORK_US:-200}
build_flags=(--static-swift-stdlib)
command -v wrk >/dev/null || die "needs wrk: apt-get install -y wrk"
case "$rounds$connections$work_us" in *[!0-9]*) die "ROUNDS, CONNECTIONS and WORK_US must be whole numbers" ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-spread.XXXXXX")
server_pid=
stop_on_exit "$work" server_pid

say "bench-spread: building bench-server (release)"
build_release bench-server
cores=$(nproc)

# loop_cpu PID: "name ticks" per event-loop thread of PID (http-N: user + system clock ticks).
loop_cpu() {
    local stat
    for stat in /proc/"$1"/task/*/stat; do
        awk '{ sub(/^[^(]*\(/, ""); name = $1; sub(/\).*/, "", name); rest = $0; sub(/^[^)]*\) /, "", rest);
               split(rest, f, " "); if (name ~ /^(loop|http)-[0-9]+$/) print name, f[12] + f[13] }' "$stat" 2>/dev/null
    done | sort
}

echo "TextGateway connection spread — $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $cores cores, $(cpu_model); $(uname -sr)"
echo "wrk -t2 -c$connections -d$duration against GET /work?us=$work_us, opened at once on an idle server; $rounds rounds"
echo
for round in $(seq "$rounds"); do
    for loops in 1 "$cores"; do
        say "bench-spread: round $round/$rounds, $loops loop(s)"
        "$bin/bench-server" --port 0 --loops "$loops" >"$work/server.out" 2>&1 &
        server_pid=$!
        for _ in $(seq 100); do grep -q 'listening on' "$work/server.out" && break; sleep 0.05; done
        address=$(sed -n 's/.*listening on //p' "$work/server.out")
        [ -n "$address" ] || die "bench-server did not start: $(cat "$work/server.out")"
        sleep 0.3  # idle: the loops' load windows show no work
        before=$(loop_cpu "$server_pid")
        wrk -t2 -c"$connections" -d"$duration" --latency "http://$address/work?us=$work_us" >"$work/wrk.$loops.$round.txt"
        after=$(loop_cpu "$server_pid")
        join <(echo "$before") <(echo "$after") | awk '{ printf "%s=%d ", $1, $3 - $2 }' >"$work/cpu.$loops.$round.txt"
        stop "$server_pid"
        server_pid=
        grep -q 'Non-2xx' "$work/wrk.$loops.$round.txt" && die "non-2xx responses: $(cat "$work/wrk.$loops.$round.txt")"
    done
done

python3 - "$work" "$rounds" "$cores" "$duration" "$(getconf CLK_TCK)" <<'PY'
import re, statistics, sys
work, rounds, cores, duration, ticks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
seconds = float(re.match(r"([\d.]+)", duration).group(1)) * {"s": 1, "m": 60}.get(duration[-1], 1)
def ms(value):
    number, unit = re.match(r"([\d.]+)(\w+)", value).groups()
    return float(number) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
rows = {}
print("| loops | requests/s | p50 ms | p99 ms | each loop's CPU time (the median run) |")
print("|---:|---:|---:|---:|---|")
for loops in sorted({1, cores}):
    runs = []
    for round in range(1, rounds + 1):
        text = open(f"{work}/wrk.{loops}.{round}.txt").read()
        cpu = open(f"{work}/cpu.{loops}.{round}.txt").read().split()
        share = " ".join(f"{name} {int(value) / ticks / seconds:.0%}" for name, value in (item.split("=") for item in cpu))
        runs.append((float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)), share))
        runs[-1] += (ms(re.search(r"\s50%\s+(\S+)", text).group(1)), ms(re.search(r"\s99%\s+(\S+)", text).group(1)))
    rps = statistics.median(run[0] for run in runs)
    median_run = sorted(runs)[len(runs) // 2]
    rows[loops] = rps
    print(f"| {loops} | {rps:.0f} | {statistics.median(run[2] for run in runs):.2f} | {statistics.median(run[3] for run in runs):.2f} | {median_run[1]} |")
print()
if cores > 1:
    print(f"{cores} loops against 1: {rows[cores] / rows[1]:.2f}x the requests/s (ideal {cores}x, less what wrk takes)")
PY
