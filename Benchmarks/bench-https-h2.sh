#!/usr/bin/env bash
# A cold HTTPClient's burst over HTTPS and HTTP/2: COUNT requests at once (bench-client burst,
# BENCH_BURST_CLIENT=curl) through nginx (ssl http2, a private CA made here with openssl)
# in front of mock-upstream answering after LATENCY_MS. Prints bench-client's burst lines
# and the TLS connections nginx accepted for them (distinct $connection in its access log).
#
#   Benchmarks/bench-https-h2.sh [count=1000] [latency_ms=1000]
#   BENCH_BIN=<dir>   take bench-client and mock-upstream from <dir> (another checkout's
#                     release build) instead of building this one's
#   HTTP2=            (set and empty) nginx without http2: an https host answering in HTTP/1.1
# Needs nginx-light and openssl.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-1000}
latency=${2:-1000}

if [ -z "${BENCH_BIN:-}" ]; then
    swift build -c release --product mock-upstream >/dev/null
    swift build -c release --product bench-client >/dev/null
    BENCH_BIN=$(swift build -c release --show-bin-path)
fi
bin=$BENCH_BIN

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The CA and a certificate for 127.0.0.1.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/ca.key" \
    -out "$work/ca.pem" -days 2 -subj "/CN=bench CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/server.key" \
    -out "$work/server.csr" -subj "/CN=127.0.0.1" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$work/ext.cnf"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -set_serial 1 -days 2 \
    -extfile "$work/ext.cnf" -out "$work/server.pem" 2>/dev/null

"$bin/mock-upstream" --port 0 --api-key bench-key --latency-ms "$latency" >"$work/mock.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q 'listening on' "$work/mock.out" && break; sleep 0.05; done
mock=$(sed -n 's/.*listening on \(http:\/\/[^/]*\).*$/\1/p' "$work/mock.out")  # scheme, host and port

port=$(free_port)
user=""; [ "$(id -u)" = 0 ] && user="user root;"
cat >"$work/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 16384;
$user
pid $work/nginx.pid;
error_log $work/error.log warn;
events { worker_connections 8192; }
http {
    log_format connections '\$connection \$connection_requests \$server_protocol \$status';
    access_log $work/access.log connections;
    client_body_temp_path $work/body; proxy_temp_path $work/proxy; fastcgi_temp_path $work/fastcgi;
    uwsgi_temp_path $work/uwsgi; scgi_temp_path $work/scgi;
    server {
        listen 127.0.0.1:$port ssl${HTTP2- http2};
        ssl_certificate $work/server.pem;
        ssl_certificate_key $work/server.key;
        location / {
            proxy_pass $mock;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
CONF
nginx -p "$work" -e "$work/error.log" -c "$work/nginx.conf" &
pids+=($!)
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done

printf '{"model":"bench-model","messages":[{"role":"user","content":"a short text"}]}' >"$work/body.json"
BENCH_BURST_CLIENT=curl BENCH_CA_FILE="$work/ca.pem" BENCH_TOKEN=bench-key BENCH_EXPECT='"choices":' \
    "$bin/bench-client" burst "https://127.0.0.1:$port/v1/chat/completions" "$count" "$work/body.json"
for _ in $(seq 100); do [ "$(wc -l <"$work/access.log")" -ge "$count" ] && break; sleep 0.05; done
echo "nginx: $(wc -l <"$work/access.log") requests on $(cut -d' ' -f1 "$work/access.log" | sort -u | wc -l) TLS connections ($(cut -d' ' -f3 "$work/access.log" | sort | uniq -c | tr -s ' ' | tr '\n' ' '))"
