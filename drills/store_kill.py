#!/usr/bin/env python3
"""Drill 6, store-kill, under LEDGER_DURABILITY=strict, in two phases: `load` (requests in
flight, SIGKILL to the gateway once half are answered, their ids written to --answered), then
`verify` against a gateway restarted on the same store: every answered request is in the
history and no ledger row was dropped.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from common import (
    TransportFailure, drill_parser, http_request, one_shot, process_body, run_drill, verdict,
)


async def ledger_dropped(port: int) -> float | None:
    response, _, _ = await one_shot(port, http_request("GET", "/metrics", keep_alive=False), 5.0)
    for line in response.body.decode().splitlines():
        if line.startswith("textgateway_ledger_rows_dropped_total "):
            return float(line.split()[1])
    return None


async def drill_store_kill(args) -> int:
    """Load: `requests` at once, with upstream latencies spread over a second and a half, each
    its own connection and X-Request-Id; SIGKILL to the gateway once about half are answered.
    Verify (a restarted gateway on the same store): every answered id is in the history."""
    auth = {"Authorization": f"Bearer {args.token}"}
    if args.phase == "load":
        answered: list[str] = []
        problems: list[str] = []
        half = asyncio.Event()

        async def one(index: int) -> None:
            request_id = f"drill-store-{index}"
            latency = 100 + (index * 1400) // args.requests
            raw = http_request("POST", "/api/process", process_body(f"latency-ms={latency}"), keep_alive=False,
                               headers={"X-Request-Id": request_id, **auth})
            try:
                response, _, _ = await one_shot(args.port, raw, 30.0)
            except TransportFailure:
                return  # in flight at the kill: no answer, nothing promised
            if response.status == 200:
                answered.append(request_id)
                if len(answered) >= args.requests // 2:
                    half.set()
            else:
                problems.append(f"{request_id}: {response.status}")

        tasks = [asyncio.create_task(one(index)) for index in range(args.requests)]
        await asyncio.wait_for(half.wait(), 30)
        dropped = await ledger_dropped(args.port)
        os.kill(args.gateway_pid, signal.SIGKILL)
        await asyncio.gather(*tasks)
        with open(args.answered, "w") as file:
            file.write("\n".join(answered) + "\n")
        ok = not problems and dropped == 0 and len(answered) >= args.requests // 2
        return verdict("store-kill (before the kill)", ok,
                       f"{len(answered)} of {args.requests} answered before SIGKILL, dropped rows {dropped}"
                       + (f"; not 200: {problems[:3]}" if problems else ""))
    answered = {line for line in open(args.answered).read().split() if line}
    kept: set[str] = set()
    cursor = None
    while True:
        path = "/api/history?limit=100" + (f"&before={cursor}" if cursor else "")
        response, _, _ = await one_shot(args.port, http_request("GET", path, keep_alive=False, headers=auth), 10.0)
        if response.status != 200:
            return verdict("store-kill", False, f"history answered {response.status}")
        page = response.json()
        kept.update(item["id"] for item in page["items"])
        cursor = page["nextCursor"]
        if not cursor:
            break
    missing = sorted(answered - kept)
    dropped = await ledger_dropped(args.port)
    return verdict("store-kill", not missing and dropped == 0,
                   f"{len(answered)} answered before SIGKILL, {len(answered & kept)} of them in the history after the restart"
                   f" ({len(kept)} rows in all), dropped rows {dropped}" + (f"; missing {missing[:5]}" if missing else ""))


def main() -> int:
    parser = drill_parser(__doc__)
    parser.add_argument("--phase", choices=["load", "verify"], required=True)
    parser.add_argument("--gateway-pid", type=int, default=0)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--token", required=True)
    parser.add_argument("--answered", required=True, help="file of the ids answered before the kill")
    return run_drill("store-kill", drill_store_kill, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
