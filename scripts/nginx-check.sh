#!/usr/bin/env bash
# docs/nginx.conf as shipped, in front of two gateways: requests are balanced over both, an
# instance that is down is passed over, and nginx's own errors (a body over
# client_max_body_size, no instance answering, none answering in time, a request it cannot
# read) are the contract's JSON with the request's id — never nginx's HTML.
#
#   scripts/nginx-check.sh          (BIN=<dir with release text-gateway and mock-upstream> to skip the build)
#
# Needs nginx (nginx-light), curl and python3. Prints a PASS/FAIL line a check; exits 1 on a FAIL.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh
for tool in nginx curl python3; do command -v "$tool" >/dev/null || die "needs $tool (apt-get install -y nginx-light curl python3)"; done

build_flags=(--static-swift-stdlib)
if [ -n "${BIN:-}" ]; then bin=$BIN; else build_release mock-upstream text-gateway; fi

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-nginx-check.XXXXXX")
mock_pid= first_pid= second_pid= nginx_pid= silent_pid= started_pid=
stop_on_exit "$work" nginx_pid first_pid second_pid silent_pid started_pid mock_pid

"$bin/mock-upstream" --port 0 --loops 1 --latency-ms 0 --api-key k >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || die "mock-upstream did not start"
gateway() { # NAME
    start_text_gateway "$bin" "$work/$1" "$work/$1.log" DARVAREH_BASE_URL="$mock_url" DARVAREH_API_KEY=k \
        DARVAREH_MODEL_ID=m DATABASE_URL=off LOG_LEVEL=warning TRUSTED_PROXIES=127.0.0.1/32 || die "text-gateway $1 did not start"
}
gateway first
first_port=$started_port first_pid=$started_pid
gateway second
second_port=$started_port second_pid=$started_pid

# The shipped file with this run's ports and paths; a second server block answers nothing in
# time (a listener that never replies) for the 504 check, with a 1 s read timeout.
silent_port=$(free_port)
python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $silent_port)); s.listen(16)
held = []
while True:
    c, _ = s.accept(); held.append(c)
" &
silent_pid=$!
nginx_port=$(free_port)
slow_port=$(free_port)
mkdir -p "$work/nginx"
sed -e "s/127.0.0.1:8081/127.0.0.1:$first_port/; s/127.0.0.1:8082/127.0.0.1:$second_port/" \
    -e "s|listen 80;|listen 127.0.0.1:$nginx_port;|" \
    -e "s|/var/log/nginx/text-gateway.access.log|$work/nginx/access.log|" docs/nginx.conf >"$work/nginx/text-gateway.conf"
python3 - "$work/nginx/text-gateway.conf" "$silent_port" "$slow_port" <<'PY'
import sys
path, silent, slow = sys.argv[1:]
text = open(path).read()
server = text[text.index("server {"):]
slow_server = (server.replace("proxy_pass http://text_gateway;", "proxy_pass http://127.0.0.1:%s;" % silent)
               .replace("proxy_read_timeout    120s;", "proxy_read_timeout    1s;"))
import re
slow_server = re.sub(r"listen 127\.0\.0\.1:\d+;", "listen 127.0.0.1:%s;" % slow, slow_server)
open(path, "a").write("\n" + slow_server)
PY
cat >"$work/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 256; }
http {
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    include $work/nginx/text-gateway.conf;
}
CONF
nginx -t -q -c "$work/nginx/nginx.conf" -p "$work/nginx" || die "nginx refuses docs/nginx.conf"
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" &
nginx_pid=$!
for _ in $(seq 100); do port_in_use "$nginx_port" && break; sleep 0.05; done

failures=0
check() { # NAME CONDITION...
    local name=$1
    shift
    if "$@"; then echo "PASS $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}
body='{"task":"summarize","text":"شهرداری تهران اعلام کرد که اتوبوس‌های برقی جدید به ناوگان اضافه می‌شود."}'
post() { # URL OUT [curl args...]
    local url=$1 out=$2
    shift 2
    curl -sS -o "$out.body" -D "$out.head" -w '%{http_code}' -H 'Content-Type: application/json' "$@" "$url" || echo 000
}
# json_error FILE CODE ID: the body is the contract's error JSON with CODE and requestId ID
# (or any 32 hex digits when ID is "nginx"), sent as application/json with X-Request-Id.
json_error() {
    python3 - "$@" <<'PY'
import json, re, sys
path, code, rid = sys.argv[1:]
head = open(path + ".head", encoding="latin-1").read().lower()
body = json.load(open(path + ".body", encoding="utf-8"))
ok = body.get("error") is True and body.get("code") == code and body.get("message") == body.get("reason") and body["message"]
ok = ok and "content-type: application/json; charset=utf-8" in head and ("x-request-id: " + body["requestId"].lower()) in head
ok = ok and (re.fullmatch("[0-9a-f]{32}", body["requestId"]) if rid == "nginx" else body["requestId"] == rid)
sys.exit(0 if ok else 1)
PY
}
base="http://127.0.0.1:$nginx_port"

status=$(post "$base/api/process" "$work/ok" --data-binary "$body" -H 'X-Request-Id: nginx-check-1')
check "a request through nginx is answered by a gateway (200)" [ "$status" = 200 ]
check "the client's well-formed X-Request-Id reaches the gateway and comes back" grep -qi '^x-request-id: nginx-check-1' "$work/ok.head"

head -c 1200000 /dev/zero | tr '\0' 'a' >"$work/big.txt"
status=$(post "$base/api/process" "$work/big" --data-binary "@$work/big.txt" -H 'X-Request-Id: big-1')
check "a body over client_max_body_size is 413" [ "$status" = 413 ]
check "the 413 is the contract's JSON (body_too_large) with the request's id" json_error "$work/big" body_too_large big-1

status=$(post "$base/api/process" "$work/quote" --data-binary "@$work/big.txt" -H 'X-Request-Id: a"b')
check "a malformed X-Request-Id is replaced by nginx's id, never copied into the JSON" json_error "$work/quote" body_too_large nginx

status=$(printf 'GET /api/health HTTP/1.1\r\n\r\n' | python3 -c "
import socket, sys
s = socket.create_connection(('127.0.0.1', $nginx_port)); s.sendall(sys.stdin.buffer.read())
data = b''
while True:
    chunk = s.recv(65536)
    if not chunk: break
    data += chunk
head, _, body = data.partition(b'\r\n\r\n')
open('$work/bad.head', 'wb').write(head); open('$work/bad.body', 'wb').write(body)
print(head.split()[1].decode())")
check "a request nginx cannot read (HTTP/1.1 without Host) is 400 in the contract's JSON" json_error "$work/bad" invalid_request nginx

stop "$first_pid"
first_pid=
all=yes
for index in $(seq 10); do
    status=$(post "$base/api/process" "$work/one-down" --data-binary "$body")
    [ "$status" = 200 ] || all=no
done
check "with one instance down, every request is answered by the other (10 of 10)" [ "$all" = yes ]

stop "$second_pid"
second_pid=
status=$(post "$base/api/process" "$work/down" --data-binary "$body" -H 'X-Request-Id: down-1')
check "with no instance up, 502 in the contract's JSON (gateway_unavailable) with Retry-After" \
    sh -c "[ '$status' = 502 ] && grep -qi '^retry-after: 1' '$work/down.head'"
check "the 502's body" json_error "$work/down" gateway_unavailable down-1

status=$(post "http://127.0.0.1:$slow_port/api/process" "$work/slow" --data-binary "$body" -H 'X-Request-Id: slow-1')
check "no answer in time is 504" [ "$status" = 504 ]
check "the 504's body" json_error "$work/slow" gateway_timeout slow-1

[ "$failures" -eq 0 ] || die "$failures check(s) failed"
echo "nginx-check: all passed"
