#!/usr/bin/env bash
# deploy/compose.yaml's arrangement from Debian's packages: docs/nginx.conf as shipped in front
# of two gateways that share one redis-server and one Postgres cluster (both of this run's
# own). Checked as a client sees it: a limit holds across the instances, a caller's history
# and the cache are shared, Redis away leaves the service up, an instance killed under load
# fails only the requests it held (the limit stays exact), an instance that is down is passed
# over, and nginx's own errors (a body over client_max_body_size, no instance
# answering, none in time, a request it cannot read) are the contract's JSON with the
# request's id — never nginx's HTML.
#
#   scripts/instances-check.sh      (BIN=<dir with release text-gateway and mock-upstream> to skip the build;
#                                    SWIFT_BUILD_FLAGS=... extra `swift build` flags)
#
# Needs nginx (nginx-light), redis-server, postgresql, curl and python3; run as root, it runs
# Postgres as the postgres user. Prints a PASS/FAIL line a check; exits 1 on a FAIL.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh
for tool in nginx redis-server curl python3; do
    command -v "$tool" >/dev/null || die "needs $tool (apt-get install -y nginx-light redis-server postgresql curl python3)"
done

read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS:-}"
build_release mock-upstream text-gateway

work=$(mktemp -d "${TMPDIR:-/tmp}/textgateway-instances-check.XXXXXX")
mock_pid= first_pid= second_pid= nginx_pid= silent_pid= started_pid= redis_pid= drill_pid=
stop_on_exit "$work" drill_pid nginx_pid first_pid second_pid silent_pid started_pid mock_pid redis_pid
start_postgres_cluster "$work/postgres"
start_redis_server "$work/redis.log"

"$bin/mock-upstream" --port 0 --loops 1 --latency-ms 0 --api-key k >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || die "mock-upstream did not start"
alice=tgk_instances_check_alice_0000000000000001
bob=tgk_instances_check_bob_000000000000000000001
carol=tgk_instances_check_carol_0000000000000001
dave=tgk_instances_check_dave_00000000000000000001
token_entry() { printf '%s:%s:%s' "$(printf '%s' "$1" | sha256sum | cut -d' ' -f1)" "$2" "$3"; }
gateway() { # NAME
    start_text_gateway "$bin" "$work/$1" "$work/$1.log" DARVAREH_BASE_URL="$mock_url" DARVAREH_API_KEY=k \
        DARVAREH_MODEL_ID=m LOG_LEVEL=warning TRUSTED_PROXIES=127.0.0.1/32 \
        REDIS_URL="redis://127.0.0.1:$redis_port" DATABASE_URL="$postgres_url" \
        REDIS_TIMEOUT_MS=2000 \
        CACHE_TTL_SECONDS=60 PLANS="guest:-:-:-,default:-:-:-,limited:10:-:-,drill:200:-:-" AUTH_REQUIRED=off \
        GATEWAY_TOKENS="$(token_entry "$alice" alice default),$(token_entry "$bob" bob limited),$(token_entry "$carol" carol limited),$(token_entry "$dave" dave drill)" \
        || die "text-gateway $1 did not start: $(tail -3 "$work/$1.log")"
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

# Several instances as one: Redis holds the limits and the cache, Postgres the history.
# (REDIS_TIMEOUT_MS is 2000 above, not 50: a busy CI machine's slow reply must not count as
# Redis away, which would decide some requests locally; the drill below checks none was.)
first="http://127.0.0.1:$first_port" second="http://127.0.0.1:$second_port"
answered=0 refused=0 retry_after=yes
for index in $(seq 30); do
    [ $((index % 2)) = 0 ] && target=$first || target=$second
    status=$(post "$target/api/process" "$work/limit" --data-binary "$body" -H "Authorization: Bearer $bob")
    case $status in
        200) answered=$((answered + 1)) ;;
        429) refused=$((refused + 1)); grep -qi '^retry-after: [1-9]' "$work/limit.head" || retry_after=no ;;
    esac
done
check "a plan of 10 a minute, 30 requests over both instances: exactly 10 answered ($answered), 20 refused ($refused)" \
    [ "$answered-$refused" = 10-20 ]
check "every refusal carries Retry-After" [ "$retry_after" = yes ]

status=$(post "$first/api/process" "$work/history" --data-binary "$body" -H "Authorization: Bearer $alice" -H 'X-Request-Id: shared-history-1')
history_shared() {
    curl -sS -H "Authorization: Bearer $alice" "$second/api/history/shared-history-1" -o /dev/null -w '%{http_code}' | grep -q 200
}
seen=no
for _ in $(seq 100); do if history_shared; then seen=yes; break; fi; sleep 0.05; done
check "a request answered by one instance is in the caller's history on the other (Postgres)" \
    sh -c "[ '$status' = 200 ] && [ $seen = yes ]"

cached='{"task":"titles","text":"این متن برای آزمودن حافظهٔ مشترک پاسخ‌ها میان دو نمونهٔ دروازه نوشته شده است."}'
post "$first/api/process" "$work/miss" --data-binary "$cached" -H "Authorization: Bearer $alice" >/dev/null
post "$second/api/process" "$work/hit" --data-binary "$cached" -H "Authorization: Bearer $alice" >/dev/null
check "the other instance answers the same request from the shared cache (X-Cache: HIT)" \
    sh -c "grep -qi '^x-cache: miss' '$work/miss.head' && grep -qi '^x-cache: hit' '$work/hit.head'"

metric() { # URL NAME: the value of an unlabelled metric
    curl -sS "$1/metrics" | awk -v name="$2" '$1 == name { print $2 }'
}
stop "$redis_pid"
redis_pid=
all=yes
for index in $(seq 6); do
    [ $((index % 2)) = 0 ] && target=$first || target=$second
    status=$(post "$target/api/process" "$work/redis-down" --data-binary "$body" -H "Authorization: Bearer $carol" --max-time 5)
    [ "$status" = 200 ] || all=no
done
check "with Redis away, REDIS_FAILURE_MODE=local answers (6 of 6)" [ "$all" = yes ]
check "and /metrics says so (textgateway_redis_up 0)" [ "$(metric "$first" textgateway_redis_up)" = 0 ]
start_redis_server "$work/redis.log" "$redis_port"
back=no
for _ in $(seq 600); do
    if [ "$(metric "$first" textgateway_redis_up)" = 1 ] && [ "$(metric "$second" textgateway_redis_up)" = 1 ]; then back=yes; break; fi
    sleep 0.05
done
check "Redis back: both instances use it again by themselves, every connection (textgateway_redis_up 1)" \
    [ "$back" = yes ]
local_decisions() { # the sum of both instances' decisions made without Redis
    for url in "$first" "$second"; do
        curl -sS "$url/metrics" | awk '$1 == "textgateway_rate_limit_decisions_total{backend=\"local\"}" { print $2 }'
    done | awk '{ sum += $1 } END { print sum + 0 }'
}
local_before=$(local_decisions)

# The drill: 16 clients through nginx as one caller with a plan of 200 a minute, 400 requests
# of 100 ms each; one instance killed (SIGKILL) while they run. Only the requests in flight on
# it fail (nginx's 502 in the contract's JSON, or a cut connection); the rest are answered; Redis admitted exactly
# 200, so the answered ones and the failed ones together are at least 200, the answered at most.
python3 - "$base" "$dave" "$work/drill" <<'PY' &
import http.client, json, sys, threading, urllib.parse
base, token, out = sys.argv[1:]
url = urllib.parse.urlparse(base)
body = json.dumps({"task": "summarize", "text": "شهرداری تهران اعلام کرد که اتوبوس‌های برقی جدید به ناوگان اضافه می‌شود. [mock:latency-ms=100]"}).encode()
lock, counts, left = threading.Lock(), {}, [400]
def client():
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    while True:
        with lock:
            if left[0] == 0: return
            left[0] -= 1
        try:
            connection.request("POST", "/api/process", body, {"Content-Type": "application/json", "Authorization": "Bearer " + token})
            response = connection.getresponse()
            data = response.read()
            kind = str(response.status)
            if response.status == 502 and json.loads(data).get("code") != "gateway_unavailable": kind = "502-not-json"
        except Exception:
            kind = "transport"
            connection.close()
            connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        with lock:
            counts[kind] = counts.get(kind, 0) + 1
            if sum(counts.values()) == 40: open(out + ".running", "w").close()
threads = [threading.Thread(target=client) for _ in range(16)]
for thread in threads: thread.start()
for thread in threads: thread.join()
open(out, "w").write(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
PY
drill_pid=$!
# Killed once 40 answers are in: mid-run, with requests in flight on both instances.
for _ in $(seq 200); do [ -e "$work/drill.running" ] && break; sleep 0.05; done
# Every decision so far was Redis's: a local one (a connection down, or a reply past the
# timeout) would make the count below inexact for a reason the drill is not about.
local_during=$(($(local_decisions) - local_before))
kill -KILL "$first_pid"
wait "$first_pid" 2>/dev/null || true
first_pid=
wait "$drill_pid"
read -r -a drill <<<"$(cat "$work/drill")"
count() { local item; for item in "${drill[@]}"; do [ "${item%%=*}" = "$1" ] && { echo "${item#*=}"; return; }; done; echo 0; }
# A request in flight on the killed instance fails as nginx's 502 when nothing of its answer
# had left the instance, as a cut connection when some had; nothing else may go wrong.
ok=$(count 200) limited=$(count 429) failed=$(($(count 502) + $(count transport)))
check "drill, one instance killed under load: every request is 200, 429, nginx's JSON 502 or cut in flight (${drill[*]})" \
    [ $((ok + limited + failed)) = 400 ]
check "drill: only requests in flight on the killed instance failed ($failed, at most one a client)" [ "$failed" -le 16 ]
check "drill: every decision before the kill was Redis's ($local_during made locally)" [ "$local_during" = 0 ]
check "drill: the limit stayed exact across the kill (answered $ok <= 200 <= answered + failed $((ok + failed)))" \
    sh -c "[ $ok -le 200 ] && [ $((ok + failed)) -ge 200 ]"

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

# deploy/compose.yaml cannot run here (no container engine): at least every setting it gives
# the gateways is one the gateway reads (.env.example lists them all).
unknown=$(sed -n '/^  environment: &gateway-environment/,/^  [a-z_]*:/s/^    \([A-Z_][A-Z0-9_]*\):.*/\1/p' deploy/compose.yaml |
    while read -r name; do grep -q "^$name=" .env.example || echo "$name"; done)
check "deploy/compose.yaml sets only variables the gateway reads${unknown:+ (unknown: $unknown)}" [ -z "$unknown" ]

[ "$failures" -eq 0 ] || die "$failures check(s) failed"
echo "instances-check: all passed"
