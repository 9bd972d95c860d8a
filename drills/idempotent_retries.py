#!/usr/bin/env python3
"""Drill 9, idempotent-retries: clients with an Idempotency-Key each hang up mid-answer and
retry: whole answers, one upstream call, one charge and one history row per key.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time

from common import (
    TEXT, TransportFailure, close_writer, connect, drill_parser, http_request, mock_stats, one_shot,
    outcome_key, parse_sse, run_drill, verdict,
)


async def drill_idempotent_retries(args) -> int:
    """`clients` at once, each with its own key, X-Request-Id and text (half streaming),
    hang up in the middle of a 3-second answer and retry 1-4 s later on a new connection:
    every retry gets the whole answer with the first request's id, the upstream is called
    once per key, each key's tokens are charged once and the history holds one row per key."""
    auth = {"Authorization": f"Bearer {args.token}"}
    mock_before = (await mock_stats(args.mock_port))["requests"]
    rng = random.Random(9)
    delays = [rng.uniform(1.0, 4.0) for _ in range(args.clients)]
    problems: list[str] = []
    tokens: dict[str, int] = {}
    kinds: dict[str, int] = {}

    async def one(index: int) -> None:
        stream = index % 2 == 1
        request_id = f"drill-idem-{index}"
        key = f"drill-key-{index}-{rng.randrange(1 << 30)}"
        # 3 s either way: a whole answer after 3 s, or 30 deltas 100 ms apart.
        directive = "deltas=30,delta-delay-ms=100" if stream else "latency-ms=3000"
        body = json.dumps({"task": "summarize", "text": f"{TEXT} ({index}) [mock:{directive}]", **({"stream": True} if stream else {})},
                          ensure_ascii=False).encode()
        headers = {"Idempotency-Key": key, **auth}
        reader, writer = await connect(args.port)
        writer.write(http_request("POST", "/api/process", body, keep_alive=False, headers={"X-Request-Id": request_id, **headers}))
        await writer.drain()
        await asyncio.sleep(args.hang_up_after)
        close_writer(writer, reset=True)
        await asyncio.sleep(delays[index])
        try:
            response, _, _ = await one_shot(args.port, http_request("POST", "/api/process", body, keep_alive=False, headers=headers), 30.0)
        except TransportFailure as failure:
            problems.append(f"{request_id}: retry {failure}")
            return
        kinds[response.headers.get("idempotent-replayed", "none")] = kinds.get(response.headers.get("idempotent-replayed", "none"), 0) + 1
        if response.status != 200:
            problems.append(f"{request_id}: retry {outcome_key(response)}")
            return
        if response.headers.get("x-request-id") != request_id:
            problems.append(f"{request_id}: retry's X-Request-Id {response.headers.get('x-request-id')}")
        if stream:
            events, _, format_problems = parse_sse(response.body)
            names = [name for name, _ in events]
            if format_problems or not names or names[0] != "start" or names[-1] != "done":
                problems.append(f"{request_id}: retry's stream {names[:4]}…{names[-1:]} {format_problems[:1]}")
                return
            done = json.loads(events[-1][1])
            text = "".join(json.loads(data)["delta"] for name, data in events if name == "delta")
            if text.strip() != done["result"].strip() or done.get("requestId") != request_id:
                problems.append(f"{request_id}: the deltas do not add up to the result")
            usage = done.get("usage") or {}
        else:
            answer = response.json()
            if not answer.get("success") or not answer.get("result") or answer.get("requestId") != request_id:
                problems.append(f"{request_id}: retry's body {str(answer)[:80]}")
            usage = answer.get("usage") or {}
        tokens[request_id] = int(usage.get("totalTokens", 0))

    await asyncio.gather(*(one(index) for index in range(args.clients)))
    upstream_calls = (await mock_stats(args.mock_port))["requests"] - mock_before
    # The rows are written after the answers: wait for all of them, with a deadline.
    rows: set[str] = set()
    charged = requests_today = None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        rows = set()
        cursor = None
        while True:
            path = "/api/history?limit=100" + (f"&before={cursor}" if cursor else "")
            response, _, _ = await one_shot(args.port, http_request("GET", path, keep_alive=False, headers=auth), 10.0)
            page = response.json()
            rows.update(item["id"] for item in page["items"])
            cursor = page.get("nextCursor")
            if not cursor:
                break
        usage, _, _ = await one_shot(args.port, http_request("GET", "/api/usage", keep_alive=False, headers=auth), 10.0)
        today = usage.json()["today"]
        charged, requests_today = today["totalTokens"], today["requests"]
        if len(rows) >= args.clients and requests_today >= args.clients:
            break
        await asyncio.sleep(0.2)
    wanted = {f"drill-idem-{index}" for index in range(args.clients)}
    expected_tokens = sum(tokens.values())
    ok = (not problems and upstream_calls == args.clients and rows == wanted and requests_today == args.clients
          and charged == expected_tokens and len(tokens) == args.clients)
    return verdict("idempotent-retries", ok,
                   f"{args.clients} keys (half streamed), hang-up after {args.hang_up_after:.1f} s of a 3 s answer, retry 1-4 s later: "
                   f"{len(tokens)} retries answered whole ({kinds.get('true', 0)} replayed or joined), upstream calls {upstream_calls}, "
                   f"history rows {len(rows & wanted)} (of {len(rows)}), requests today {requests_today}, "
                   f"tokens charged {charged} (the answers' {expected_tokens})"
                   + (f" — {'; '.join(problems[:4])}" if problems else ""))


def main() -> int:
    parser = drill_parser(__doc__)
    parser.add_argument("--mock-port", type=int, required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--hang-up-after", type=float, default=1.5, help="seconds into the 3 s answer")
    return run_drill("idempotent-retries", drill_idempotent_retries, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
