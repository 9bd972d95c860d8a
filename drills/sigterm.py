#!/usr/bin/env python3
"""Drill 4, sigterm: SIGTERM with requests in flight (the drill sends it; drills/drills.sh reaps the
gateway and reports its exit status in --exit-file as `<status> <epoch>`): every request in
flight answered 200, new connections refused (or 503) once the gateway stops accepting, which it
does within the margin (those before are served), exit 0 within the grace period.
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import sys
import time

from common import (
    TransportFailure, check_success, close_writer, connect, drill_parser, expect_eof,
    gateway_gauges, http_request, one_shot, outcome_key, process_body, process_state, read_response,
    run_drill, say, verdict,
)


async def drill_sigterm(args) -> int:
    pid, port = args.gateway_pid, args.port
    grace = args.grace
    hard = grace + args.margin + 10
    sent = 0
    all_sent = asyncio.Event()
    results: list[tuple[str, str, float]] = []  # outcome, problem, seconds

    async def one(index: int) -> None:
        nonlocal sent
        raw = http_request("POST", "/api/process", process_body(), keep_alive=False,
                           headers={"X-Request-Id": f"drill-sigterm-{index}"})
        start = time.monotonic()
        try:
            reader, writer = await connect(port, 10)
        except TransportFailure as failure:
            results.append((f"transport {failure.kind}", "could not connect before the signal", 0.0))
            sent += 1
            if sent == args.requests:
                all_sent.set()
            return
        try:
            writer.write(raw)
            await writer.drain()
            sent += 1
            if sent == args.requests:
                all_sent.set()
            try:
                response = await asyncio.wait_for(read_response(reader), hard)
            except (asyncio.TimeoutError, TimeoutError):
                results.append(("transport hang", f"no answer within {hard:.0f} s", time.monotonic() - start))
                return
            except TransportFailure as failure:
                results.append((f"transport {failure.kind}", failure.detail, time.monotonic() - start))
                return
            elapsed = time.monotonic() - start
            problems = check_success(response)
            if response.headers.get("x-request-id") != f"drill-sigterm-{index}":
                problems.append("X-Request-Id not echoed")
            close_problem = await expect_eof(reader)
            if close_problem:
                problems.append(close_problem)
            results.append((outcome_key(response), "; ".join(problems), elapsed))
        except (ConnectionResetError, BrokenPipeError):
            results.append(("transport reset", "while sending", time.monotonic() - start))
        finally:
            close_writer(writer)

    load_started = time.monotonic()
    tasks = [asyncio.create_task(one(i)) for i in range(args.requests)]
    try:
        await asyncio.wait_for(all_sent.wait(), 15)
    except (asyncio.TimeoutError, TimeoutError):
        for task in tasks:
            task.cancel()
        return verdict("sigterm", False, f"only {sent} of {args.requests} requests could be sent within 15 s")
    sent_at = time.monotonic()
    await asyncio.sleep(max(0.0, args.signal_after - 0.15))
    try:
        gauges = await gateway_gauges(port)
        in_flight = gauges.get("textgateway_requests_in_flight", -1) - 1  # minus the /metrics request itself
    except TransportFailure:
        in_flight = -1
    await asyncio.sleep(max(0.0, sent_at + args.signal_after - time.monotonic()))
    os.kill(pid, signal.SIGTERM)
    signal_at = time.monotonic()
    signal_epoch = time.time()

    probes: collections.Counter = collections.Counter()
    probe_log: list[tuple[float, str]] = []  # seconds after the signal, outcome
    probe_problems: list[str] = []
    exited_at: list[float] = []

    async def watch_exit() -> None:
        while time.monotonic() < signal_at + hard:
            state = process_state(pid)
            if state is None or state in ("Z", "X"):
                exited_at.append(time.monotonic())
                return
            await asyncio.sleep(0.02)

    async def probe() -> None:
        # New connections after the signal, each with its time: answered while the gateway had
        # not yet acted on the signal (a loaded machine takes a moment), then refused (the
        # listener is closed) or 503. Judged below, once all are in.
        await asyncio.sleep(0.1)
        while not exited_at and time.monotonic() < signal_at + grace + args.margin:
            alive = not exited_at
            at = time.monotonic() - signal_at
            try:
                response, _, _ = await one_shot(port, http_request("POST", "/api/process", process_body("latency-ms=0"), keep_alive=False), 3.0)
                key = f"answered {outcome_key(response)}"
            except TransportFailure as failure:
                key = failure.kind + ("" if alive else " (after exit)")
            probes[key] += 1
            probe_log.append((at, key))
            await asyncio.sleep(0.1)

    watcher = asyncio.create_task(watch_exit())
    prober = asyncio.create_task(probe())
    await asyncio.wait_for(asyncio.gather(*tasks), hard + 5)
    await watcher
    await prober
    # The script reaps the gateway and writes its exit status.
    status_line = None
    deadline = time.monotonic() + hard
    while time.monotonic() < deadline:
        try:
            with open(args.exit_file) as handle:
                status_line = handle.read().split()
            if len(status_line) == 2:
                break
        except FileNotFoundError:
            pass
        await asyncio.sleep(0.05)
    exit_status = int(status_line[0]) if status_line and len(status_line) == 2 else None
    exit_after = (exited_at[0] - signal_at) if exited_at else (
        float(status_line[1]) - signal_epoch if status_line and len(status_line) == 2 else None)

    # The gateway stops accepting within the margin; until then a new connection is served
    # (200: one left in the listen backlog is taken and served as the listener closes). Only a
    # connection completed in the instant between that and the close is reset: the last before
    # the first refusal. After it, every new connection is refused (or 503).
    first_refused = next((at for at, key in probe_log if key.startswith("refused")), None)
    for index, (at, key) in enumerate(probe_log):
        if key.startswith("refused") or key == "answered 503":
            continue
        if first_refused is not None and at < first_refused:
            if key == "answered 200":
                continue
            if key == "reset" and probe_log[index + 1][1].startswith("refused"):
                continue
        probe_problems.append(f"a new connection {at:.2f} s after the signal: {key}")
    if probe_log and (first_refused is None or first_refused > args.margin):
        probe_problems.append(f"new connections still accepted {args.margin:.1f} s after the signal")

    counts = collections.Counter(outcome for outcome, _, _ in results)
    bad = [r for r in results if r[0] != "200" or r[1]]
    slowest = max((r[2] for r in results), default=0.0)
    say(f"  {args.requests} requests sent over {sent_at - load_started:.2f} s, "
        f"SIGTERM {signal_at - sent_at:.2f} s after the last was sent ({in_flight:.0f} in flight per /metrics just before)")
    say(f"  outcomes: {dict(counts)}; slowest {slowest:.2f} s")
    say(f"  new connections after the signal: {dict(probes) or 'none tried'}"
        + (f", the first refused {first_refused:.2f} s after it" if first_refused is not None else ""))
    say(f"  gateway exit: status {exit_status}, {exit_after:.2f} s after SIGTERM (grace {grace:.0f} s)" if exit_after is not None
        else "  gateway exit: not seen")
    for outcome, problem, seconds in bad[:8]:
        say(f"  !! {outcome} after {seconds:.2f} s: {problem}")
    for problem in collections.Counter(probe_problems).most_common(4):
        say(f"  !! {problem[1]} × {problem[0]}")
    ok = (not bad and not probe_problems and exit_status == 0 and exit_after is not None
          and exit_after <= grace + args.margin)
    problems = []
    if bad:
        problems.append(f"{len(bad)} in-flight requests not answered 200")
    if probe_problems:
        problems.append(f"{len(probe_problems)} new connections not as they should be")
    if exit_status != 0:
        problems.append(f"exit status {exit_status}")
    if exit_after is None or exit_after > grace + args.margin:
        problems.append("no exit within the grace period")
    return verdict("sigterm", ok,
                   f"{counts.get('200', 0)}/{args.requests} in-flight requests answered 200, "
                   f"exit status {exit_status} {exit_after if exit_after is not None else float('nan'):.2f} s after SIGTERM "
                   f"(grace {grace:.0f} s + {args.margin:.1f} s), new connections: {dict(probes)}"
                   + (f" — {'; '.join(problems)}" if problems else ""))


def main() -> int:
    parser = drill_parser(__doc__)
    parser.add_argument("--gateway-pid", type=int, required=True)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--grace", type=float, required=True)
    parser.add_argument("--signal-after", type=float, default=0.3)
    parser.add_argument("--exit-file", required=True)
    return run_drill("sigterm", drill_sigterm, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
