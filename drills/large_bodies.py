#!/usr/bin/env python3
"""Drill 5, large-bodies: bodies just under MAX_BODY_BYTES, and one byte over, each sent
--repeats times on one connection: each its contract answer, with the gateway's CPU per request.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from common import (
    KeepAliveConnection, TEXT, check_error, check_success, cpu_ticks, drill_parser, http_request,
    process_body, run_drill, say, verdict,
)


async def drill_large_bodies(args) -> int:
    """Bodies just under MAX_BODY_BYTES whose text is long, made of emoji, all whitespace,
    whitespace with combining marks, one letter with all the marks (one character, of
    combining or of spacing marks), or short
    inside a body's worth of whitespace or of an unknown field: each gets its contract
    answer, and the CPU each costs is reported."""
    limit = args.max_body_bytes
    tick = os.sysconf("SC_CLK_TCK")

    def body(text: str, **extra) -> bytes:
        return json.dumps({"task": "summarize", "text": text, **extra}, ensure_ascii=False).encode()

    def fill(unit: str, room: int) -> str:
        """`unit` repeated to take about `room` bytes inside a JSON string (escapes counted)."""
        size = len(json.dumps(unit, ensure_ascii=False).encode()) - 2
        return unit * max(room // size, 1)

    room = limit - 64
    cases = [  # name, body, wanted: status and code (200: a result)
        ("long Persian text", body(fill("متن فارسی ساده برای آزمون شمارش نویسه‌ها. ", room)), (413, "text_too_long")),
        ("long text with emoji", body(fill("👩‍💻 متن با ایموجی 🇮🇷 و نیم‌فاصله. ", room)), (413, "text_too_long")),
        ("only whitespace", body(fill(" \n\u3000", room)), (400, "text_too_short")),
        ("whitespace with combining marks", body(fill(" \u0301", room)), (400, "text_too_short")),
        ("one letter with a body's worth of combining marks", body("a" + fill("\u0301", room)), (400, "text_too_short")),
        ("one letter with a body's worth of spacing marks", body("\u0915" + fill("\u0903", room)), (400, "text_too_short")),
        ("a text inside whitespace", body(fill(" \n", (room - len(TEXT.encode())) // 2) + TEXT + fill(" \n", (room - len(TEXT.encode())) // 2)), (200, None)),
        ("a text beside a large unknown field", body(TEXT, padding=fill("x", room - len(TEXT.encode()) * 2)), (200, None)),
        ("one byte over the limit", body("a" * (limit + 1 - len(body("")))), (413, "body_too_large")),
    ]
    problems: list[str] = []
    figures: list[str] = []
    connection = KeepAliveConnection(args.port)
    for name, raw_body, (status, code) in cases:
        if (len(raw_body) > limit) != (code == "body_too_large"):
            problems.append(f"{name}: the drill's body is {len(raw_body)} bytes against a limit of {limit}")
            continue
        raw = http_request("POST", "/api/process", raw_body)
        before = cpu_ticks(args.gateway_pid)
        slowest = 0.0
        for _ in range(args.repeats):
            start = time.monotonic()
            response = await asyncio.wait_for(connection.request(raw), 30)
            slowest = max(slowest, time.monotonic() - start)
            found = check_success(response) if status == 200 else check_error(response, status, code)
            if found:
                problems.append(f"{name}: {'; '.join(found)}")
                break
        cpu_ms = (cpu_ticks(args.gateway_pid) - before) * 1000 / tick / args.repeats
        figures.append(f"{name} {len(raw_body) / 1048576:.2f} MiB: {status} {code or 'result'}, {cpu_ms:.1f} ms CPU, slowest {slowest * 1000:.1f} ms")
    connection.close()
    # And the gateway still answers an ordinary request at once.
    response = await asyncio.wait_for(KeepAliveConnection(args.port).request(http_request("POST", "/api/process", process_body())), 10)
    problems += [f"ordinary request after: {problem}" for problem in check_success(response)]
    for line in figures:
        say(f"  {line}")
    return verdict("large-bodies", not problems,
                   f"{len(cases)} kinds × {args.repeats}" + ("" if not problems else "; " + " | ".join(problems[:4])))


def main() -> int:
    parser = drill_parser(__doc__)
    parser.add_argument("--gateway-pid", type=int, required=True)
    parser.add_argument("--max-body-bytes", type=int, default=1048576)
    parser.add_argument("--repeats", type=int, default=10, help="times each body is sent")
    return run_drill("large-bodies", drill_large_bodies, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
