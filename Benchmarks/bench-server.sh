#!/usr/bin/env bash
# Benchmark the HTTP server core against nginx serving the same bytes, in one run.
#
#   Benchmarks/bench-server.sh [duration-seconds=10] [rounds=3] [connections=64]
#
# Needs wrk and nginx (Debian: apt-get install wrk nginx-light); installs nothing itself.
# Runs are interleaved (ours, nginx, ours, nginx, ...) and medians reported.
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${1:-10}
rounds=${2:-3}
connections=${3:-64}
threads=${WRK_THREADS:-2}

missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if [ ${#missing[@]} -gt 0 ]; then
    echo "bench-server needs: ${missing[*]}" >&2
    echo "install with: apt-get install -y ${missing[*]}" >&2
    exit 1
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

swift build -c release --product bench-server >/dev/null
bin=$(swift build -c release --show-bin-path)/bench-server

"$bin" --port 0 >"$work/server.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q 'listening on' "$work/server.out" && break; sleep 0.05; done
ours_port=$(sed -n 's/.*listening on .*:\([0-9]*\)$/\1/p' "$work/server.out")

nginx_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/nginx.conf" <<CONF
worker_processes $(nproc);
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    server_tokens off;
    client_body_temp_path $work/body;
    proxy_temp_path $work/proxy;
    fastcgi_temp_path $work/fastcgi;
    uwsgi_temp_path $work/uwsgi;
    scgi_temp_path $work/scgi;
    server {
        listen 127.0.0.1:$nginx_port;
        location / { default_type text/plain; return 200 "Hello, world!"; }
    }
}
CONF
"$nginx_bin" -c "$work/nginx.conf" -e "$work/nginx-error.log" &
pids+=($!)
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$nginx_port/" >/dev/null 2>&1 && break; sleep 0.05; done
curl -fs "http://127.0.0.1:$ours_port/" >/dev/null

echo "wrk -t$threads -c$connections -d${duration}s --latency, $rounds interleaved rounds, $(nproc) cores"
for round in $(seq "$rounds"); do
    for name in textgateway nginx; do
        port=$ours_port; [ "$name" = nginx ] && port=$nginx_port
        wrk -t"$threads" -c"$connections" -d"${duration}s" --latency "http://127.0.0.1:$port/" >"$work/$name.$round.txt"
    done
done

python3 - "$work" "$rounds" <<'PY'
import re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def ms(value, unit):
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
def parse(path):
    text = open(path).read()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    lat = {p: ms(v, u) for p, v, u in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)", text, re.M)}
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", text)
    return rps, lat["50"], lat["99"], errors.group(0) if errors else ""
rows = {}
for name in ("textgateway", "nginx"):
    runs = [parse(f"{work}/{name}.{r}.txt") for r in range(1, rounds + 1)]
    for run in runs:
        if run[3]:
            print(f"{name}: {run[3]}")
    rows[name] = tuple(statistics.median(run[i] for run in runs) for i in range(3))
print(f"{'server':<12} {'req/s':>10} {'p50 ms':>8} {'p99 ms':>8}")
for name, (rps, p50, p99) in rows.items():
    print(f"{name:<12} {rps:>10.0f} {p50:>8.3f} {p99:>8.3f}")
ours, ref = rows["textgateway"], rows["nginx"]
print(f"ratio: {ours[0] / ref[0]:.2f}x nginx req/s (goal >= 0.80), p99 {ours[2] / ref[2]:.2f}x nginx (goal <= 2.00)")
PY
