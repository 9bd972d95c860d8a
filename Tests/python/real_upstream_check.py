"""TextGateway in front of a real model server (make real-upstream-check).

scripts/real-upstream-check.sh starts llama.cpp's llama-server (SmolLM2-135M-Instruct, a small
context window, /metrics on) and two release text-gateways in front of it (answers capped at
64 tokens, and at 300 for the hang-up), then runs this with the three addresses. Each step prints PASS or FAIL with its time and the model's usage:
the four tasks, a stream (start, deltas, done with usage), /v1 plain and streamed with usage,
format: json constrained by the server to the task's schema, the model's context overflowing
(413 text_too_long on /api/process, OpenAI's 400 context_length_exceeded on /v1), a client
hanging up mid-stream (the server's slot stopped within 50 tokens of the 300 it may make, read
from its /metrics), and a job chunked to fit the window. Only the standard library: it runs on any python3.
Exits 1 when a step fails.
"""
import argparse
import http.client
import json
import re
import socket
import sys
import time
import urllib.parse

NEWS = (
    "شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی جدید به ناوگان حمل‌ونقل عمومی "
    "پایتخت اضافه می‌شود. این اتوبوس‌ها در خطوط پرتردد مرکز شهر به کار گرفته خواهند شد و انتظار می‌رود "
    "آلودگی هوا و صدا در این مناطق کاهش یابد. به گفته مسئولان، ایستگاه‌های شارژ سریع نیز در پایانه‌های "
    "اصلی نصب شده است."
)
NOTE = (
    "سلام بچه‌ها، خواستم بگم جلسه فردا که قرار بود ساعت ده باشه افتاده به ساعت دوازده، چون مدیر پروژه "
    "دیرتر می‌رسه. لطفا گزارش‌های هفتگی رو تا قبل از جلسه آماده کنید."
)
# A short English text for format: json: this small model tends to copy its input into the
# answer, and a JSON string cut off at MAX_TOKENS is no JSON at all (what is checked is the
# gateway's handling of a schema-constrained answer, not the model's writing). In English the
# copy is about 30 tokens, well inside the check's 64; the Persian sentence took 176. Only
# summarize: asked for a rewrite or key points as JSON, SmolLM2-135M repeats itself until
# MAX_TOKENS, which the gateway rightly answers 502 invalid_model_output.
SHORT = "Tehran adds 120 electric buses to its fleet from autumn."
# Paragraphs of a long report, for the job: distinct sentences so the chunks differ.
CITIES = ["تهران", "اصفهان", "شیراز", "تبریز", "مشهد", "کرج", "قم", "اهواز", "رشت", "یزد", "کرمان", "همدان"]

failures = 0
TIMEOUT = 360


def report(ok, name, started, detail=""):
    global failures
    if not ok:
        failures += 1
    print(f"{'PASS' if ok else 'FAIL'}  {name:<52} {time.monotonic() - started:6.1f} s  {detail}", flush=True)


def usage_text(usage):
    if not usage:
        return "usage: none"
    if "inputTokens" in usage:
        return f"usage: in {usage['inputTokens']}, out {usage['outputTokens']}, total {usage['totalTokens']}"
    return f"usage: prompt {usage['prompt_tokens']}, completion {usage['completion_tokens']}, total {usage['total_tokens']}"


def request(base, method, path, body=None, headers=None):
    url = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=TIMEOUT)
    payload = json.dumps(body, ensure_ascii=False).encode() if body is not None else None
    all_headers = {"Content-Type": "application/json"} if payload else {}
    all_headers.update(headers or {})
    connection.request(method, path, body=payload, headers=all_headers)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, dict((k.lower(), v) for k, v in response.getheaders()), data


def events(base, path, body):
    """POSTs body and yields (event, data) pairs of the text/event-stream answer."""
    url = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=TIMEOUT)
    connection.request("POST", path, body=json.dumps(body, ensure_ascii=False).encode(),
                       headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {response.read()[:300]!r}")
    event, data = "message", []
    for raw in response:
        line = raw.decode().rstrip("\r\n")
        if line == "":
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    connection.close()


def metric(llama, name):
    status, _, data = request(llama, "GET", "/metrics")
    if status != 200:
        raise RuntimeError(f"llama-server /metrics: HTTP {status}")
    match = re.search(rf"^{re.escape(name)}\s+([0-9.eE+-]+)$", data.decode(), re.M)
    return float(match.group(1)) if match else None


def step_tasks(gateway):
    for task, text in [("summarize", NEWS), ("rewrite", NOTE), ("key-points", NEWS), ("titles", NEWS)]:
        started = time.monotonic()
        status, _, data = request(gateway, "POST", "/api/process", {"task": task, "text": text})
        answer = json.loads(data) if data else {}
        usage = answer.get("usage") or {}
        ok = status == 200 and answer.get("success") is True and answer.get("result", "").strip() != "" \
            and usage.get("inputTokens", 0) > 0 and usage.get("outputTokens", 0) > 0
        report(ok, f"/api/process {task}", started, usage_text(usage) if ok else f"HTTP {status} {data[:200]!r}")


def step_stream(gateway):
    started = time.monotonic()
    names, deltas, done = [], 0, None
    try:
        for event, data in events(gateway, "/api/process", {"task": "summarize", "text": NEWS, "stream": True}):
            names.append(event)
            if event == "delta":
                deltas += 1
            if event == "done":
                done = json.loads(data)
        ok = names[0] == "start" and names[-1] == "done" and deltas >= 2 and set(names[1:-1]) == {"delta"} \
            and done["result"].strip() != "" and (done.get("usage") or {}).get("outputTokens", 0) > 0
        report(ok, "/api/process stream: start, deltas, done", started,
               f"{deltas} deltas, {usage_text(done.get('usage'))}" if ok else f"events {names[:5]}…{names[-2:]}")
    except Exception as error:  # noqa: BLE001 - a step reports, the next one runs
        report(False, "/api/process stream: start, deltas, done", started, str(error))


def step_v1(gateway):
    started = time.monotonic()
    body = {"model": "default", "messages": [{"role": "user", "content": "Name three colours."}], "max_tokens": 40}
    status, _, data = request(gateway, "POST", "/v1/chat/completions", body)
    answer = json.loads(data) if data else {}
    usage = answer.get("usage") or {}
    ok = status == 200 and answer.get("object") == "chat.completion" \
        and answer["choices"][0]["message"]["content"].strip() != "" and usage.get("completion_tokens", 0) > 0
    report(ok, "/v1/chat/completions", started, usage_text(usage) if ok else f"HTTP {status} {data[:200]!r}")

    started = time.monotonic()
    body = dict(body, stream=True, stream_options={"include_usage": True})
    pieces, usage, finished = [], None, False
    try:
        for _, data in events(gateway, "/v1/chat/completions", body):
            if data == "[DONE]":
                finished = True
                continue
            chunk = json.loads(data)
            for choice in chunk.get("choices", []):
                pieces.append(choice.get("delta", {}).get("content") or "")
            if chunk.get("usage"):
                usage = chunk["usage"]
        ok = finished and "".join(pieces).strip() != "" and usage is not None and usage["completion_tokens"] > 0
        report(ok, "/v1/chat/completions stream, include_usage", started,
               f"{len(pieces)} chunks, {usage_text(usage)}" if ok else f"[DONE] {finished}, usage {usage}")
    except Exception as error:  # noqa: BLE001
        report(False, "/v1/chat/completions stream, include_usage", started, str(error))


def step_json(gateway):
    for task, key in [("summarize", "summary")]:
        started = time.monotonic()
        status, _, data = request(gateway, "POST", "/api/process", {"task": task, "text": SHORT, "format": "json"})
        answer = json.loads(data) if data else {}
        value = (answer.get("data") or {}).get(key)
        ok = status == 200 and value not in (None, "", []) and answer.get("result", "").strip() != ""
        report(ok, f"/api/process {task} format: json", started,
               f"data.{key} {json.dumps(value, ensure_ascii=False)[:60]}…, {usage_text(answer.get('usage'))}"
               if ok else f"HTTP {status} {data[:200]!r}")


def step_overflow(gateway):
    # 12,000 characters: the longest text /api/process takes, far past the model's window.
    text = (NEWS + " ") * (12000 // (len(NEWS) + 1))
    started = time.monotonic()
    status, _, data = request(gateway, "POST", "/api/process", {"task": "summarize", "text": text})
    answer = json.loads(data) if data else {}
    ok = status == 413 and answer.get("code") == "text_too_long"
    report(ok, "context overflow: /api/process → 413 text_too_long", started,
           f"{len(text)} characters" if ok else f"HTTP {status} {data[:200]!r}")

    started = time.monotonic()
    status, _, data = request(gateway, "POST", "/v1/chat/completions",
                              {"model": "default", "messages": [{"role": "user", "content": text}]})
    error = (json.loads(data) if data else {}).get("error") or {}
    ok = status == 400 and error.get("code") == "context_length_exceeded" and error.get("param") == "messages"
    report(ok, "context overflow: /v1 → 400 context_length_exceeded", started,
           "" if ok else f"HTTP {status} {data[:200]!r}")


def step_hang_up(gateway, llama):
    """Starts a long stream, reads four deltas, hangs up, and counts the tokens made after.

    llama-server decodes one token at a time for its one slot, and counts its decodes live
    (llamacpp:n_decode_total): a slot the gateway let go makes a few more before it is free; one
    left working makes the rest of its 300. Counted, not timed, so a loaded machine's pace
    decides nothing (beside CI's builds a token took up to 0.75 s)."""
    started = time.monotonic()
    url = urllib.parse.urlsplit(gateway)
    body = json.dumps({"task": "rewrite", "text": NEWS * 2, "stream": True}, ensure_ascii=False).encode()
    sock = socket.create_connection((url.hostname, url.port), timeout=TIMEOUT)
    sock.sendall(b"POST /api/process HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
                 + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    received = b""
    while received.count(b"event: delta") < 4 and b"event: done" not in received:
        piece = sock.recv(4096)
        if not piece:
            break
        received += piece
    busy = metric(llama, "llamacpp:requests_processing")
    decoded = metric(llama, "llamacpp:n_decode_total")
    hung_up = time.monotonic()
    sock.close()
    freed = None
    while time.monotonic() - hung_up < TIMEOUT:
        if metric(llama, "llamacpp:requests_processing") == 0:
            freed = time.monotonic() - hung_up
            break
        time.sleep(0.05)
    after = metric(llama, "llamacpp:n_decode_total") - decoded if freed is not None else None
    ok = received.count(b"event: delta") >= 4 and b"event: done" not in received and busy == 1 \
        and after is not None and after <= 50
    report(ok, "client hangs up mid-stream → the slot stops within 50 tokens", started,
           f"{after:.0f} tokens after the hang-up, free in {freed:.2f} s" if freed is not None
           else f"busy {busy}, not freed in {TIMEOUT} s")


def step_job(gateway, chunk_tokens):
    paragraphs = []
    for index, city in enumerate(CITIES[:7]):
        paragraphs.append(
            f"گزارش شماره {index + 1}: شورای شهر {city} اعلام کرد که در سال آینده {20 + index} پروژهٔ تازهٔ حمل‌ونقل "
            f"عمومی آغاز می‌شود. بودجهٔ این طرح‌ها {100 + 7 * index} میلیارد تومان برآورد شده و بخشی از آن صرف "
            f"خرید اتوبوس‌های برقی، ساخت ایستگاه‌های شارژ و نوسازی پایانه‌ها خواهد شد. کارشناسان می‌گویند "
            f"این برنامه اگر به موقع اجرا شود، ترافیک مرکز {city} را کاهش می‌دهد و کیفیت هوا را بهتر می‌کند."
        )
    text = "\n\n".join(paragraphs)
    started = time.monotonic()
    status, headers, data = request(gateway, "POST", "/api/jobs", {"task": "summarize", "text": text})
    if status != 202:
        report(False, "job: a long text chunked to the window", started, f"HTTP {status} {data[:200]!r}")
        return
    job_id = json.loads(data)["jobId"]
    job = {}
    while time.monotonic() - started < 600:
        status, _, data = request(gateway, "GET", f"/api/jobs/{job_id}")
        job = json.loads(data)
        if job.get("status") in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.5)
    progress = job.get("progress") or {}
    ok = job.get("status") == "succeeded" and progress.get("total", 0) >= 3 and (job.get("result") or "").strip() != ""
    report(ok, f"job: {len(text)} characters, JOB_CHUNK_TOKENS={chunk_tokens}", started,
           f"{progress.get('total')} calls, {usage_text(job.get('usage'))}" if ok
           else f"status {job.get('status')}, error {job.get('error')}, progress {progress}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--long-gateway", required=True, help="one whose MAX_TOKENS outlasts the hang-up's 2 s")
    parser.add_argument("--llama", required=True)
    parser.add_argument("--chunk-tokens", required=True)
    arguments = parser.parse_args()
    step_tasks(arguments.gateway)
    step_stream(arguments.gateway)
    step_v1(arguments.gateway)
    step_json(arguments.gateway)
    step_overflow(arguments.gateway)
    step_hang_up(arguments.long_gateway, arguments.llama)
    step_job(arguments.gateway, arguments.chunk_tokens)
    print(f"\nreal-upstream-check: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
