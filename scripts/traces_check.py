#!/usr/bin/env python3
"""The checks of `make traces-check` (scripts/traces-check.sh starts what they need).

Sends a plain /api/process request that carries a caller's traceparent, a stream, a /v1 call
that falls back from a dead upstream to a live one, a refused request and a job; then reads
every span back through Phoenix's API (scripts/phoenix_spans.py) and checks: each request is
one trace with one server span, its upstream attempts its children (one span an attempt, the
failed ones with error.type), the GenAI attributes, the first token's event of the stream, the
job's chunks under the job's request span, the traceparent the upstream saw naming the
attempt's span, the caller's traceparent joined, the access log's trace_id, and that no text,
answer or credential appears anywhere in a span. Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import phoenix_spans  # noqa: E402

TEXT = ("شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی جدید به ناوگان حمل‌ونقل عمومی "
        "پایتخت اضافه می‌شود و ایستگاه‌های شارژ سریع در پایانه‌ها نصب شده است.")
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
problems: list[str] = []


def check(condition: bool, message: str) -> bool:
    if not condition:
        problems.append(message)
    return condition


def call(method: str, url: str, body: dict | None = None, headers: dict | None = None) -> tuple[int, dict, bytes]:
    data = json.dumps(body, ensure_ascii=False).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--mock", required=True)
    parser.add_argument("--phoenix", required=True)
    parser.add_argument("--project", required=True)
    parser.add_argument("--log", required=True, help="the gateway's log (its access lines carry trace_id)")
    parser.add_argument("--secret", action="append", default=[], help="a credential no span may hold")
    args = parser.parse_args()
    gateway = args.gateway

    # 1. A plain request that joins the caller's trace (TRACE_CONTEXT_FROM=any here).
    status, headers, body = call("POST", f"{gateway}/api/process", {"task": "summarize", "text": TEXT},
                                 {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01", "tracestate": "vendor=abc"})
    check(status == 200, f"plain request answered {status}: {body[:200]!r}")
    answer = json.loads(body).get("result", "") if status == 200 else ""
    plain_id = headers.get("x-request-id", "")
    # 2. A stream, by a caller with a token.
    token = args.secret[-1]
    status, headers, body = call("POST", f"{gateway}/api/process", {"task": "summarize", "text": TEXT, "stream": True},
                                 {"Authorization": f"Bearer {token}"})
    check(status == 200 and b"event: done" in body, f"stream answered {status}: {body[-200:]!r}")
    stream_id = headers.get("x-request-id", "")
    # 3. /v1 through the dead upstream (refused twice: an attempt and its retry) to the live one.
    status, headers, body = call("POST", f"{gateway}/v1/chat/completions",
                                 {"model": "chat-alias", "messages": [{"role": "user", "content": TEXT}]})
    check(status == 200 and headers.get("x-upstream") == "live", f"/v1 answered {status} from {headers.get('x-upstream')}")
    openai_id = headers.get("x-request-id", "")
    # 4. A refused request: a task that does not exist.
    status, headers, body = call("POST", f"{gateway}/api/process", {"task": "translate", "text": TEXT})
    check(status == 400, f"refused request answered {status}")
    refused_id = headers.get("x-request-id", "")
    # 5. A job, followed to its end.
    status, headers, body = call("POST", f"{gateway}/api/jobs", {"task": "summarize", "text": (TEXT + " ") * 40})
    check(status == 202, f"job answered {status}: {body[:200]!r}")
    job_request_id = headers.get("x-request-id", "")
    job = json.loads(body) if status == 202 else {}
    deadline = time.monotonic() + 60
    while job and job.get("status") not in ("succeeded", "failed", "cancelled") and time.monotonic() < deadline:
        time.sleep(0.2)
        _, _, body = call("GET", f"{gateway}/api/jobs/{job['jobId']}")
        job = json.loads(body)
    check(job.get("status") == "succeeded", f"job ended {job.get('status')}")

    # Every call goes to the dead upstream first (an attempt and a retry, both refused), then
    # to the live one: 5 spans for each of the plain request, the stream and /v1 (the server's,
    # 3 attempts and the strict ledger commit), 1 for the refused request, and the job's request
    # span with a chunk span and 3 attempts for each of its calls.
    calls = job.get("progress", {}).get("total", 1) if job else 1
    expected = 5 * 3 + 1 + 1 + 4 * calls
    # The limiter's decisions are spans too (one a request that reached it).
    deadline = time.monotonic() + 60
    spans: list[dict] = []
    while time.monotonic() < deadline:
        spans = [phoenix_spans.line(s) for s in phoenix_spans.fetch_spans(args.phoenix, args.project) or []]
        if len([s for s in spans if s["name"] != "rate limit"]) >= expected:
            break
        time.sleep(0.5)
    by_id = {s["span_id"]: s for s in spans}
    servers = {s["attributes"].get("textgateway.request_id"): s for s in spans
               if "http.request.method" in s["attributes"]}

    def children(parent: dict, name_prefix: str = "") -> list[dict]:
        return sorted((s for s in spans if s["parent_id"] == parent["span_id"] and s["name"].startswith(name_prefix)),
                      key=lambda s: s["start_time"])

    def fallback(what: str, attempts: list[dict]) -> bool:
        """Two refused attempts on the dead upstream (the second a retry), then the live one's answer."""
        upstreams = [(s["attributes"].get("textgateway.upstream"), s["attributes"].get("error.type")) for s in attempts]
        return (check(len(attempts) == 3 and upstreams[-1] == ("live", None)
                      and all(name == "dead" and error for name, error in upstreams[:-1]),
                      f"{what} attempts: {upstreams} (wanted two failed on dead, then live)")
                and check(attempts[1]["attributes"].get("http.request.resend_count") == 1,
                          f"{what}: the retry on the dead upstream has no http.request.resend_count")
                and check(all(s["status_code"] == "ERROR" for s in attempts[:-1]), f"{what}: failed attempts not errors"))

    print(f"traces-check: {len(spans)} spans in Phoenix ({expected} expected besides the limiter's)")
    # 1. The plain request: the caller's trace joined, one attempt under it, GenAI attributes.
    plain = servers.get(plain_id)
    if check(plain is not None, f"no server span for the plain request {plain_id}"):
        check(plain["trace_id"] == CALLER_TRACE, f"the plain request's trace {plain['trace_id']} is not the caller's")
        check(plain["parent_id"] == CALLER_SPAN, f"the plain request's parent {plain['parent_id']} is not the caller's span")
        attempts = children(plain, "chat ")
        if fallback("plain request", attempts):
            a = attempts[-1]["attributes"]
            for key, value in (("gen_ai.operation.name", "chat"), ("gen_ai.system", "openai"),
                               ("gen_ai.request.model", "traces-model"), ("gen_ai.response.model", "traces-model"),
                               ("textgateway.upstream", "live"), ("server.address", "127.0.0.1")):
                check(a.get(key) == value, f"plain attempt: {key} = {a.get(key)!r}, not {value!r}")
            check(isinstance(a.get("gen_ai.usage.input_tokens"), int) and isinstance(a.get("gen_ai.usage.output_tokens"), int),
                  f"plain attempt: usage {a.get('gen_ai.usage.input_tokens')!r}/{a.get('gen_ai.usage.output_tokens')!r}")
            check(a.get("gen_ai.response.finish_reasons") == ["stop"], f"plain attempt: finish reasons {a.get('gen_ai.response.finish_reasons')!r}")
            seen = json.loads(urllib.request.urlopen(f"{args.mock}/mock/traceparents", timeout=10).read())
            wanted = f"00-{CALLER_TRACE}-{attempts[-1]['span_id']}-01"
            check(wanted in seen, f"the upstream never saw traceparent {wanted} (it saw {seen[:6]})")
        p = plain["attributes"]
        check(p.get("http.route") == "/api/process" and p.get("http.response.status_code") == 200,
              f"plain server span: route {p.get('http.route')!r}, status {p.get('http.response.status_code')!r}")
        check(p.get("textgateway.caller.kind") == "guest" and "enduser.id" not in p, "plain server span: caller kind or user id")
    # 2. The stream: its attempt has the first token's event; the caller's kind and plan, not its id.
    stream = servers.get(stream_id)
    if check(stream is not None, f"no server span for the stream {stream_id}"):
        attempts = children(stream, "chat ")
        if fallback("stream", attempts):
            events = [e["name"] for e in attempts[-1]["events"]]
            check("first_token" in events, f"stream attempt: no first_token event ({events})")
        check(stream["attributes"].get("textgateway.caller.kind") == "token"
              and stream["attributes"].get("textgateway.caller.plan") == "pro",
              f"stream server span: caller {stream['attributes'].get('textgateway.caller.kind')!r}/"
              f"{stream['attributes'].get('textgateway.caller.plan')!r}")
        check(stream["trace_id"] != CALLER_TRACE and stream["parent_id"] is None, "the stream is not a trace of its own")
    # 3. /v1's fallback: two refused attempts on the dead upstream, then the live one's answer.
    openai = servers.get(openai_id)
    if check(openai is not None, f"no server span for the /v1 call {openai_id}"):
        attempts = children(openai, "chat ")
        fallback("/v1", attempts)
    # The limiter's decision and the strict commit, each a child of the request it served.
    for what, request_id in (("plain", plain_id), ("stream", stream_id), ("/v1", openai_id)):
        server = servers.get(request_id)
        if server is None:
            continue
        limits = children(server, "rate limit")
        check(len(limits) == 1 and limits[0]["attributes"].get("textgateway.rate_limit.decision") == "allowed",
              f"{what}: rate limit spans {[s['attributes'] for s in limits]}")
        commits = children(server, "ledger commit")
        check(len(commits) == 1, f"{what}: {len(commits)} ledger commit spans (LEDGER_DURABILITY=strict)")
    # 4. The refused request: its server span says why, and nothing was called.
    refused = servers.get(refused_id)
    if check(refused is not None, f"no server span for the refused request {refused_id}"):
        check(refused["attributes"].get("error.type") == "invalid_task" or bool(refused["attributes"].get("error.type")),
              f"refused: error.type {refused['attributes'].get('error.type')!r}")
        check(refused["attributes"].get("http.response.status_code") == 400, "refused: status")
        check(not children(refused, "chat "), "refused: it has attempt spans")
    # 5. The job: each chunk a child of the job's request span, each with its attempt.
    job_span = servers.get(job_request_id)
    if check(job_span is not None, f"no server span for the job's request {job_request_id}"):
        chunks = children(job_span, "job chunk")
        check(len(chunks) == calls, f"job: {len(chunks)} chunk spans, {calls} calls")
        for chunk in chunks:
            check(chunk["trace_id"] == job_span["trace_id"], "job: a chunk in another trace")
            fallback("job chunk", children(chunk, "chat "))
    # The log's trace ids: each traced request's line names its trace.
    with open(args.log, encoding="utf-8") as handle:
        lines = [line for line in handle if " request request_id=" in line]
    for request_id, span in servers.items():
        line = next((line for line in lines if f"request_id={request_id} " in line), "")
        check(f"trace_id={span['trace_id']}" in line, f"the log line of {request_id} lacks trace_id={span['trace_id']}")
    # Nothing secret: no text, no answer, no credential, in any name, attribute or event.
    forbidden = [TEXT[:24], TEXT[-24:], answer[:24] if answer else "\x00", *args.secret, "Bearer "]
    blob = json.dumps(spans, ensure_ascii=False)
    for secret in forbidden:
        check(secret not in blob, f"a span holds {secret[:12]!r}…")
    # One span an attempt: no span id twice.
    check(len(by_id) == len(spans), f"{len(spans) - len(by_id)} span ids repeated")
    if problems:
        for problem in problems:
            print(f"  !! {problem}")
        print(f"FAIL traces-check: {len(problems)} problem(s) in {len(spans)} spans")
        return 1
    print(f"PASS traces-check: {len(spans)} spans in {len(servers)} traces read back from Phoenix: the caller's "
          f"traceparent joined; each call 3 attempt spans (2 refused on the dead upstream, the retry with its "
          f"resend count, then the live one's answer with the GenAI attributes; the stream's with its first_token "
          f"event); none for the refused request; {calls} chunk(s) under the job's request; the limiter's "
          f"decision and the strict ledger commit under each answered request; the upstream saw the attempt's "
          f"traceparent; trace_id in every access line; no text, answer or credential in any span")
    return 0


if __name__ == "__main__":
    sys.exit(main())
