"""What the fault drills share: drills/drills.sh runs one file per drill, and each imports this.

Python 3.11 standard library only. Every request is one asyncio coroutine on a raw socket
speaking HTTP/1.1 by hand (Content-Length request bodies; responses framed by
Content-Length, chunked encoding or the end of the connection), and every wait is bounded,
so a hang becomes a FAIL rather than a hung script.

Here: the HTTP client, the contract checks (errors, answers, SSE streams), the gateway's
process seen through /proc, the steady load of drills 1 and 7, the long texts of drill 8 (and
Benchmarks/bench-jobs.sh), and each drill's command line and verdict: detail lines, then one
`PASS drill-name: …` or `FAIL drill-name: …` line with its figures; exit status 0 is PASS,
1 is FAIL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import struct
import time

HOST = "127.0.0.1"
# 20+ characters of Persian news text; a `[mock:…]` directive is appended when a drill
# scripts the upstream (the gateway forwards the user's text, so the mock sees it).
TEXT = (
    "شهرداری تهران اعلام کرد که از ابتدای مهرماه ۱۲۰ دستگاه اتوبوس برقی جدید به ناوگان "
    "حمل‌ونقل عمومی پایتخت اضافه می‌شود و ایستگاه‌های شارژ سریع در پایانه‌ها نصب شده است."
)
ERROR_CONTENT_TYPE = "application/json; charset=utf-8"


def say(line: str = "") -> None:
    print(line, flush=True)


# MARK: - HTTP/1.1 client


class TransportFailure(Exception):
    """A request that got no complete HTTP response: refused, reset, cut short, timed out."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail


class Response:
    __slots__ = ("status", "headers", "body", "framing")

    def __init__(self, status: int, headers: dict[str, str], body: bytes, framing: str) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.framing = framing  # "length", "chunked" (terminal chunk seen) or "close"

    def json(self):
        return json.loads(self.body)


def process_body(directive: str = "", stream: bool = False, task: str = "summarize") -> bytes:
    text = TEXT + (f" [mock:{directive}]" if directive else "")
    body: dict = {"task": task, "text": text}
    if stream:
        body["stream"] = True
    return json.dumps(body, ensure_ascii=False).encode()


def http_request(method: str, path: str, body: bytes = b"", keep_alive: bool = True,
                 headers: dict[str, str] | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}"]
    if body or method == "POST":
        lines.append("Content-Type: application/json")
        lines.append(f"Content-Length: {len(body)}")
    if not keep_alive:
        lines.append("Connection: close")
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def connect(port: int, timeout: float = 5.0) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    try:
        return await asyncio.wait_for(asyncio.open_connection(HOST, port, limit=1 << 20), timeout)
    except ConnectionRefusedError:
        raise TransportFailure("refused") from None
    except (asyncio.TimeoutError, TimeoutError):
        raise TransportFailure("connect_timeout") from None
    except OSError as error:
        raise TransportFailure("connect_error", str(error)) from None


async def read_response(reader: asyncio.StreamReader, head_request: bool = False) -> Response:
    """One response: status line, headers, then the body as its framing says."""
    try:
        line = await reader.readline()
        if not line:
            raise TransportFailure("eof_before_response")
        if not line.endswith(b"\n"):
            raise TransportFailure("eof_in_head")
        parts = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise TransportFailure("bad_status_line", repr(line[:80]))
        status = int(parts[1])
        headers: dict[str, str] = {}
        while True:
            field = await reader.readline()
            if not field.endswith(b"\n"):
                raise TransportFailure("eof_in_head")
            if field in (b"\r\n", b"\n"):
                break
            name, _, value = field.decode("latin-1").partition(":")
            key = name.strip().lower()
            headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
        if head_request or status in (204, 304) or 100 <= status < 200:
            return Response(status, headers, b"", "length")
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = bytearray()
            while True:
                size_line = await reader.readline()
                if not size_line.endswith(b"\n"):
                    raise TransportFailure("eof_in_chunked_body", f"after {len(body)} bytes, no terminal chunk")
                size = int(size_line.split(b";")[0].strip(), 16)
                if size == 0:
                    while True:  # trailer section
                        trailer = await reader.readline()
                        if not trailer.endswith(b"\n"):
                            raise TransportFailure("eof_in_trailers")
                        if trailer in (b"\r\n", b"\n"):
                            break
                    return Response(status, headers, bytes(body), "chunked")
                chunk = await reader.readexactly(size + 2)
                if chunk[-2:] != b"\r\n":
                    raise TransportFailure("bad_chunk", "chunk data not followed by CRLF")
                body += chunk[:-2]
        if "content-length" in headers:
            return Response(status, headers, await reader.readexactly(int(headers["content-length"])), "length")
        return Response(status, headers, await reader.read(), "close")
    except asyncio.IncompleteReadError as error:
        raise TransportFailure("eof_in_body", f"{len(error.partial)} of {error.expected} bytes") from None
    except (ConnectionResetError, BrokenPipeError):
        raise TransportFailure("reset") from None
    except ValueError as error:
        raise TransportFailure("protocol", str(error)) from None


async def expect_eof(reader: asyncio.StreamReader, timeout: float = 3.0) -> str | None:
    """After a `Connection: close` response the server must close: None when it did."""
    try:
        rest = await asyncio.wait_for(reader.read(1024), timeout)
    except (asyncio.TimeoutError, TimeoutError):
        return f"connection not closed {timeout:.0f} s after the response"
    except (ConnectionResetError, BrokenPipeError):
        return "connection reset after the response"
    return None if rest == b"" else f"{len(rest)} unexpected bytes after the response"


def close_writer(writer: asyncio.StreamWriter, reset: bool = False) -> None:
    try:
        if reset:  # SO_LINGER 0: close() sends RST instead of FIN
            sock = writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        else:
            writer.close()
    except OSError:
        pass


async def one_shot(port: int, raw: bytes, timeout: float, check_close: bool = False,
                   head_request: bool = False) -> tuple[Response, float, str | None]:
    """Connect, send `raw` (which should say `Connection: close`), read the response.
    Returns (response, seconds, close problem or None). Raises TransportFailure."""
    start = time.monotonic()
    reader, writer = await connect(port, timeout)
    try:
        writer.write(raw)
        try:
            response = await asyncio.wait_for(read_response(reader, head_request), timeout)
        except (asyncio.TimeoutError, TimeoutError):
            raise TransportFailure("hang", f"no complete response within {timeout:.1f} s") from None
        elapsed = time.monotonic() - start
        problem = await expect_eof(reader) if check_close else None
        return response, elapsed, problem
    finally:
        close_writer(writer)


class KeepAliveConnection:
    """One client connection reused for sequential requests (reopened when the server closes it)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.reused = False

    async def request(self, raw: bytes) -> Response:
        if self.writer is None:
            self.reader, self.writer = await connect(self.port)
            self.reused = False
        else:
            self.reused = True
        try:
            self.writer.write(raw)
            await self.writer.drain()
        except (ConnectionResetError, BrokenPipeError):
            self.close()
            raise TransportFailure("reset", "while sending") from None
        try:
            response = await read_response(self.reader)
        except BaseException:
            self.close()
            raise
        if response.headers.get("connection", "").lower() == "close" or response.framing == "close":
            self.close()
        return response

    def close(self) -> None:
        if self.writer is not None:
            close_writer(self.writer)
        self.reader = self.writer = None


# MARK: - Contract checks


def check_error(response: Response, status: int | set[int], codes: str | set[str]) -> list[str]:
    """A gateway error: the status, JSON `{error, reason, message, code, requestId}`, headers."""
    statuses = {status} if isinstance(status, int) else status
    wanted = {codes} if isinstance(codes, str) else codes
    problems = []
    if response.status not in statuses:
        problems.append(f"status {response.status}, wanted {sorted(statuses)}")
    if response.headers.get("content-type") != ERROR_CONTENT_TYPE:
        problems.append(f"Content-Type {response.headers.get('content-type')!r}")
    request_id = response.headers.get("x-request-id")
    if not request_id:
        problems.append("no X-Request-Id header")
    try:
        body = response.json()
    except ValueError:
        return problems + [f"body is not JSON: {response.body[:120]!r}"]
    if not isinstance(body, dict):
        return problems + ["body is not a JSON object"]
    if body.get("error") is not True:
        problems.append(f"error={body.get('error')!r}")
    if body.get("code") not in wanted:
        problems.append(f"code {body.get('code')!r}, wanted {sorted(wanted)}")
    if not isinstance(body.get("message"), str) or not body.get("message") or body.get("reason") != body.get("message"):
        problems.append("reason/message missing or different")
    if body.get("requestId") != request_id:
        problems.append(f"requestId {body.get('requestId')!r} != X-Request-Id {request_id!r}")
    return problems


def check_success(response: Response) -> list[str]:
    """A 200 `{success: true, result, requestId, usage}`."""
    if response.status != 200:
        return [f"status {response.status}"]
    try:
        body = response.json()
    except ValueError:
        return [f"body is not JSON: {response.body[:120]!r}"]
    problems = []
    if body.get("success") is not True:
        problems.append(f"success={body.get('success')!r}")
    if not isinstance(body.get("result"), str) or not body["result"]:
        problems.append("empty result")
    if body.get("requestId") != response.headers.get("x-request-id"):
        problems.append("requestId != X-Request-Id")
    usage = body.get("usage", "missing")
    if usage is not None and not (isinstance(usage, dict) and {"inputTokens", "outputTokens", "totalTokens"} <= usage.keys()):
        problems.append(f"usage {usage!r}")
    return problems


def outcome_key(response: Response) -> str:
    """`200`, or `<status> <code>` for a JSON error."""
    if response.status == 200:
        return "200"
    try:
        code = response.json().get("code")
    except (ValueError, AttributeError):
        code = "non-json"
    return f"{response.status} {code}"


def parse_sse(body: bytes) -> tuple[list[tuple[str, str]], int, list[str]]:
    """Events as (name, data), comment lines seen, and format problems."""
    problems: list[str] = []
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return [], 0, ["stream is not UTF-8"]
    events: list[tuple[str, str]] = []
    comments = 0
    name: str | None = None
    data: list[str] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    else:
        problems.append("stream does not end with a newline")
    for line in lines:
        line = line.removesuffix("\r")
        if line == "":
            if name is not None or data:
                events.append((name or "message", "\n".join(data)))
            name, data = None, []
        elif line.startswith(":"):
            comments += 1
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
            else:
                problems.append(f"unexpected field {field!r}")
    if name is not None or data:
        problems.append("last event not terminated by a blank line")
        events.append((name or "message", "\n".join(data)))
    return events, comments, problems


def check_stream(response: Response, terminal: str, code: str | None = None, status: int | None = None,
                 deltas: int | None = None) -> tuple[list[str], str]:
    """An SSE answer: `start`, `delta`s whose `text` grows by each `delta` in order, then
    exactly one terminal event (`done`, or `error` with the error JSON plus `status`), and
    a complete chunked body. Returns (problems, summary such as `start,delta×5,error`)."""
    problems: list[str] = []
    if response.status != 200:
        return [f"status {response.status} {response.body[:160]!r}"], f"HTTP {response.status}"
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        problems.append(f"Content-Type {response.headers.get('content-type')!r}")
    if response.framing != "chunked":
        problems.append(f"body framing {response.framing}, wanted chunked with a terminal chunk")
    request_id = response.headers.get("x-request-id")
    events, _comments, format_problems = parse_sse(response.body)
    problems += format_problems
    names = [name for name, _ in events]
    summary = ",".join(f"{n}×{c}" if c > 1 else n for n, c in _runs(names))
    decoded = []
    for name, data in events:
        try:
            decoded.append((name, json.loads(data)))
        except ValueError:
            problems.append(f"{name} event data is not JSON: {data[:80]!r}")
            return problems, summary
    if not decoded or decoded[0][0] != "start":
        return problems + ["first event is not start"], summary
    if decoded[0][1] != {"requestId": request_id}:
        problems.append(f"start data {decoded[0][1]!r}, wanted requestId {request_id!r}")
    text = ""
    seen_deltas = 0
    index = 1
    while index < len(decoded) and decoded[index][0] == "delta":
        data = decoded[index][1]
        if data.get("requestId") != request_id:
            problems.append("delta requestId differs")
        delta = data.get("delta")
        if not isinstance(delta, str) or not delta:
            problems.append(f"delta #{seen_deltas + 1} has no text")
            delta = ""
        if data.get("text") != text + delta:
            problems.append(f"delta #{seen_deltas + 1}: text is not the previous text plus the delta (out of order?)")
        text = data.get("text") if isinstance(data.get("text"), str) else text + delta
        seen_deltas += 1
        index += 1
    rest = decoded[index:]
    terminals = [name for name, _ in rest if name in ("done", "error")]
    if len(rest) != 1 or len(terminals) != 1:
        problems.append(f"after the deltas: {[name for name, _ in rest]}, wanted exactly one terminal event")
    if "done" in names and terminal == "error":
        problems.append("a done event in a failed stream")
    if deltas is not None and seen_deltas != deltas:
        problems.append(f"{seen_deltas} deltas, wanted {deltas}")
    if rest:
        name, data = rest[-1]
        if name != terminal:
            problems.append(f"terminal event {name} {json.dumps(data, ensure_ascii=False)[:160]}, wanted {terminal}")
        elif terminal == "done":
            if data.get("result") != text or data.get("requestId") != request_id or "usage" not in data:
                problems.append("done: result/requestId/usage wrong")
        else:
            if data.get("error") is not True or data.get("code") != code or data.get("status") != status:
                problems.append(f"error event {data.get('code')!r}/{data.get('status')!r}, wanted {code}/{status}")
            if not data.get("message") or data.get("reason") != data.get("message") or data.get("requestId") != request_id:
                problems.append("error event: message/reason/requestId wrong")
    return problems, summary


def _runs(names: list[str]):
    out: list[list] = []
    for name in names:
        if out and out[-1][0] == name:
            out[-1][1] += 1
        else:
            out.append([name, 1])
    return out


# MARK: - Process observation (Linux /proc)


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sockets_to_port(pid: int, port: int) -> int:
    """The process's TCP sockets whose remote port is `port` (its connections to the mock)."""
    inodes = set()
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                next(handle)
                for line in handle:
                    fields = line.split()
                    if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[9] in inodes:
                        count += 1
        except FileNotFoundError:
            pass
    return count


def stat_fields(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name: [0] is the state letter, [11]
    and [12] the user and system CPU in clock ticks."""
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()


def process_state(pid: int) -> str | None:
    """The state letter from /proc/<pid>/stat, or None when the process is gone."""
    try:
        return stat_fields(pid)[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def cpu_ticks(pid: int) -> int:
    """User + system CPU of a process, in clock ticks (all its threads)."""
    fields = stat_fields(pid)
    return int(fields[11]) + int(fields[12])


async def gateway_gauges(port: int) -> dict[str, float]:
    response, _, _ = await one_shot(port, http_request("GET", "/metrics", keep_alive=False), 5.0)
    gauges = {}
    for line in response.body.decode().splitlines():
        if line.startswith(("textgateway_requests_in_flight ", "textgateway_open_connections ")):
            name, value = line.split()
            gauges[name] = float(value)
    return gauges


async def mock_stats(port: int) -> dict:
    response, _, _ = await one_shot(port, http_request("GET", "/mock/stats", keep_alive=False), 5.0)
    return response.json()


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def verdict(name: str, ok: bool, figures: str) -> int:
    say(f"{'PASS' if ok else 'FAIL'} {name}: {figures}")
    return 0 if ok else 1


# MARK: - Steady load (drills 1 and 7)


class SteadyLoad:
    """Keep-alive clients sending /api/process (a share of them streamed) until stopped, each
    answer recorded as (start, end, outcome, X-Upstream, problems); the ready file gets a line
    once the load is steady."""

    def __init__(self, args, hard: float) -> None:
        self.args = args
        self.hard = hard
        self.records: list[tuple[float, float, str, str, str]] = []
        self.stop = asyncio.Event()
        self.answers = 0
        self.ready = False
        self.streamers = round(args.clients * args.stream_share)

    async def client(self, stream: bool) -> None:
        raw = http_request("POST", "/api/process", process_body(stream=stream))
        connection = KeepAliveConnection(self.args.port)
        while not self.stop.is_set():
            start = time.time()
            try:
                response = await asyncio.wait_for(connection.request(raw), self.hard)
            except (asyncio.TimeoutError, TimeoutError):
                connection.close()
                self.records.append((start, time.time(), "transport hang", "", f"no answer within {self.hard:.0f} s"))
                continue
            except TransportFailure as failure:
                self.records.append((start, time.time(), f"transport {failure.kind}", "", failure.detail))
                await asyncio.sleep(0.05)
                continue
            key, problems = self.classify(response, stream)
            self.records.append((start, time.time(), key, response.headers.get("x-upstream", ""), "; ".join(problems)))
            self.answers += 1
            if not self.ready and self.answers >= self.args.clients * 2:
                self.ready = True
                with open(self.args.ready, "w") as handle:
                    handle.write(f"{time.time():.6f}\n")
        connection.close()

    @staticmethod
    def classify(response: Response, stream: bool) -> tuple[str, list[str]]:
        """The outcome's name and what breaks the contract in it. A stream ends with `done`, or
        `error` upstream_error (502) / upstream_timeout (504)."""
        key = outcome_key(response)
        if stream and key == "200":
            events, _, _ = parse_sse(response.body)
            last = events[-1] if events else ("", "{}")
            try:
                data = json.loads(last[1])
            except ValueError:
                data = {}
            if last[0] == "error" and data.get("code") in ("upstream_error", "upstream_timeout"):
                return f"stream error {data['code']}", check_stream(response, "error", data["code"], 502 if data["code"] == "upstream_error" else 504)[0]
            name = "stream done" if last[0] == "done" else f"stream {last[0] or 'empty'} {data.get('code', '')}".rstrip()
            return name, check_stream(response, "done")[0]
        if key == "200":
            return key, check_success(response)
        if key in ("502 upstream_error", "504 upstream_timeout"):
            return key, check_error(response, response.status, key.split()[1])
        return key, [f"not a contract outcome for a failing upstream: {key} {response.body[:160]!r}"]

    async def run_until(self, marks_path: str, last_mark: str, after: float, deadline: float) -> str | None:
        """Runs the clients until `after` seconds past the script's `last_mark`; what went wrong, if anything."""
        tasks = [asyncio.create_task(self.client(stream=index < self.streamers)) for index in range(self.args.clients)]
        trouble = f"the script did not write its marks within {deadline:.0f} s (marks: {read_marks(marks_path)})"
        end = time.time() + deadline
        while time.time() < end:
            found = read_marks(marks_path)
            if last_mark in found and time.time() >= found[last_mark] + after:
                trouble = None
                break
            await asyncio.sleep(0.1)
        self.stop.set()
        await asyncio.wait(tasks, timeout=self.hard + 5)
        for task in tasks:
            task.cancel()
        return trouble


def read_marks(path: str) -> dict[str, float]:
    """The script's `name epoch` lines."""
    found = {}
    try:
        with open(path) as handle:
            for line in handle:
                parts = line.split()
                if len(parts) == 2:
                    found[parts[0]] = float(parts[1])
    except FileNotFoundError:
        pass
    return found


# MARK: - Long texts as jobs (drill 8, Benchmarks/bench-jobs.sh)


def long_text(characters: int, seed: int) -> str:
    """Numbered Persian sentences (each unique) up to `characters`."""
    sentences = []
    total = 0
    index = 0
    while total < characters:
        index += 1
        sentence = (f"در گزارش شمارهٔ {seed}-{index} آمده است که شهرداری ۱۲۰ دستگاه اتوبوس برقی به ناوگان "
                    f"حمل‌ونقل عمومی اضافه می‌کند و ایستگاه‌های شارژ سریع را در پایانه‌ها نصب کرده است.")
        sentences.append(sentence)
        total += len(sentence) + 1
    return " ".join(sentences)[:characters].rsplit(" ", 1)[0] + "."


async def job_request(port: int, method: str, path: str, body: bytes = b"") -> Response:
    response, _, _ = await one_shot(port, http_request(method, path, body, keep_alive=False), 60)
    return response

# MARK: - Command line


def drill_parser(description: str | None) -> argparse.ArgumentParser:
    """A drill's command line, with the options every drill takes."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True, help="the gateway's port")
    parser.add_argument("--margin", type=float, default=1.5, help="seconds allowed beyond a timeout")
    return parser


def run_drill(name: str, drill, args: argparse.Namespace) -> int:
    """`drill(args)`'s exit status; a FAIL when a request fails outside the drill's checks or the drill hangs."""
    try:
        return asyncio.run(drill(args))
    except TransportFailure as failure:
        return verdict(name, False, f"unexpected transport failure: {failure}")
    except (asyncio.TimeoutError, TimeoutError):
        return verdict(name, False, "the drill itself timed out (something hung)")
