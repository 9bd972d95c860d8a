#!/usr/bin/env python3
"""Drill 3, disconnects: thousands of clients hanging up mid-request against a slow upstream,
round after round, then leak checks: the in-flight gauge, connections, upstream sockets, fds
and RSS back to baseline, and a normal request still answered.
"""

from __future__ import annotations

import asyncio
import collections
import statistics
import sys
import time

from common import (
    TransportFailure, check_success, close_writer, connect, drill_parser, fd_count, gateway_gauges,
    http_request, mock_stats, one_shot, outcome_key, process_body, rss_kib, run_drill, say,
    sockets_to_port, verdict,
)


async def drill_disconnects(args) -> int:
    pid, gport, mport = args.gateway_pid, args.port, args.mock_port
    hard = 10.0

    async def observe() -> dict:
        figures = {"fds": fd_count(pid), "rss_kib": rss_kib(pid), "to_mock": sockets_to_port(pid, mport)}
        gauges = await gateway_gauges(gport)
        stats = await mock_stats(mport)
        figures["in_flight"] = gauges.get("textgateway_requests_in_flight", -1)
        figures["open_connections"] = gauges.get("textgateway_open_connections", -1)
        figures["mock_open"] = stats.get("openConnections", -1)
        figures["mock_in_flight"] = stats.get("inFlight", -1)
        figures["mock_requests"] = stats.get("requests", 0)
        figures["mock_cancelled"] = stats.get("cancelled", 0)
        return figures

    def settled(now: dict) -> dict[str, bool]:
        return {
            "in-flight gauge": now["in_flight"] <= baseline["in_flight"],
            "open connections": now["open_connections"] <= baseline["open_connections"],
            "mock connections": now["mock_open"] <= baseline["mock_open"] and now["mock_in_flight"] == 0,
            "sockets to mock": now["to_mock"] <= baseline["to_mock"],
            "gateway fds": now["fds"] <= baseline["fds"],
        }

    async def one(index: int, stream: bool, reset: bool, outcome: collections.Counter, closed_at: list) -> None:
        raw = http_request("POST", "/api/process", process_body(stream=stream), keep_alive=False,
                           headers={"X-Request-Id": f"drill-disconnect-{index}"})
        try:
            reader, writer = await connect(gport, hard)
        except TransportFailure as failure:
            outcome[f"connect {failure.kind}"] += 1
            return
        received = b""
        eof = False
        try:
            writer.write(raw)
            await writer.drain()
            deadline = time.monotonic() + args.hold
            while (left := deadline - time.monotonic()) > 0:
                try:
                    data = await asyncio.wait_for(reader.read(65536), left)
                except (asyncio.TimeoutError, TimeoutError):
                    break
                if not data:
                    eof = True
                    break
                received += data
        except (ConnectionResetError, BrokenPipeError):
            outcome["reset by the gateway"] += 1
            return
        finally:
            close_writer(writer, reset=reset)
            closed_at.append(time.monotonic())
        kind = "stream" if stream else "plain"
        if eof:
            outcome[f"{kind}: gateway closed first"] += 1
        elif stream:
            outcome["stream: start seen, then hung up" if b"event: start" in received else "stream: hung up before start"] += 1
        else:
            outcome["plain: hung up before the answer" if not received else f"plain: answered before the hang-up ({received[:12]!r})"] += 1

    # Warm-up: a small burst of the same hang-ups, then normal requests, so that what the
    # gateway creates once (a loop's timer, pooled upstream connections, curl's handles)
    # exists before the baseline is taken.
    warm_outcome: collections.Counter = collections.Counter()
    await asyncio.wait_for(asyncio.gather(*(
        one(-1 - i, stream=i % 2 == 1, reset=i % 4 == 3, outcome=warm_outcome, closed_at=[])
        for i in range(min(100, args.requests)))), hard + args.hold + 30)
    await asyncio.sleep(1.0)
    for _ in range(4):
        warm, _, _ = await one_shot(gport, http_request("POST", "/api/process", process_body("latency-ms=0"), keep_alive=False), hard)
        if check_success(warm):
            return verdict("disconnects", False, f"a warm-up request failed: {check_success(warm)}")
    await asyncio.sleep(0.5)
    baseline = await observe()
    say(f"  baseline: gateway fds {baseline['fds']}, RSS {baseline['rss_kib'] / 1024:.1f} MiB, sockets to the mock "
        f"{baseline['to_mock']}, in-flight gauge {baseline['in_flight']:.0f} (this /metrics request), open connections "
        f"{baseline['open_connections']:.0f}; mock open connections {baseline['mock_open']} (this /mock/stats one included), in flight {baseline['mock_in_flight']}")

    rounds = []
    all_ok = True
    # A stream may not have had its `start` event yet when a busy machine hangs it up.
    expected_outcomes = {"stream: start seen, then hung up", "stream: hung up before start", "plain: hung up before the answer"}
    for round_number in range(1, args.rounds + 1):
        outcome: collections.Counter = collections.Counter()
        closed_at: list[float] = []
        peak = {"rss_kib": 0, "fds": 0, "to_mock": 0}
        done = asyncio.Event()

        async def sample_peak() -> None:
            while not done.is_set():
                try:
                    peak["rss_kib"] = max(peak["rss_kib"], rss_kib(pid))
                    peak["fds"] = max(peak["fds"], fd_count(pid))
                    peak["to_mock"] = max(peak["to_mock"], sockets_to_port(pid, mport))
                except OSError:
                    pass
                await asyncio.sleep(0.1)

        sampler = asyncio.create_task(sample_peak())
        started = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(
            one(i, stream=i % 2 == 1, reset=i % 4 == 3, outcome=outcome, closed_at=closed_at)
            for i in range(args.requests))), hard + args.hold + 30)
        done.set()
        await sampler
        last_close = max(closed_at) if closed_at else time.monotonic()
        # Poll until every figure is back at its baseline, or the settle time is over.
        settle_times: dict[str, float | None] = {}
        now = await observe()
        while True:
            elapsed = time.monotonic() - last_close
            for name, ok in settled(now).items():
                if ok and settle_times.get(name) is None:
                    settle_times[name] = elapsed
                elif not ok:
                    settle_times[name] = None
            if all(v is not None for v in settle_times.values()) or elapsed > args.settle:
                break
            await asyncio.sleep(0.1)
            now = await observe()
        unexpected = {k: v for k, v in outcome.items() if k not in expected_outcomes}
        not_settled = [name for name, t in settle_times.items() if t is None]
        say(f"  round {round_number}: {args.requests} requests (half streamed, 1 in 4 closed with RST) sent and hung up "
            f"after {args.hold:.1f} s, over {last_close - started:.1f} s; outcomes {dict(outcome)}")
        say(f"    peak during: gateway fds {peak['fds']}, sockets to the mock {peak['to_mock']}, RSS {peak['rss_kib'] / 1024:.1f} MiB; "
            f"mock requests +{now['mock_requests'] - baseline['mock_requests']}, cancelled +{now['mock_cancelled'] - baseline['mock_cancelled']}")
        say(f"    after {time.monotonic() - last_close:.1f} s: in-flight gauge {now['in_flight']:.0f}, open connections "
            f"{now['open_connections']:.0f}, mock open {now['mock_open']} / in flight {now['mock_in_flight']}, sockets to the mock "
            f"{now['to_mock']}, gateway fds {now['fds']}, RSS {now['rss_kib'] / 1024:.1f} MiB")
        say("    back to baseline: " + ", ".join(
            f"{name} {'%.1f s' % t if t is not None else 'NO'}" for name, t in settle_times.items()))
        ok = not unexpected and not not_settled and peak["to_mock"] > 0
        if peak["to_mock"] == 0:
            say("    !! no gateway→mock sockets seen during the burst: the drill did not reach the upstream")
        if unexpected:
            say(f"    !! unexpected outcomes: {unexpected}")
        rounds.append({"rss": now["rss_kib"], "settle": settle_times, "ok": ok, "peak": peak, "unexpected": unexpected})
        all_ok = all_ok and ok

    # The allocator keeps what the first bursts needed and still steps up now and then (one
    # round +20 MiB, the next flat); a leak grows by about the same amount every round. So the
    # leak figure is the median of the round-to-round growths from round 2 on: one allocator
    # step does not move it, a steady leak does.
    growth_kib = rounds[-1]["rss"] - baseline["rss_kib"]
    growth_bound_kib = args.rss_kib_per_request * args.requests
    if len(rounds) >= 4:
        steps = [later["rss"] - earlier["rss"] for earlier, later in zip(rounds[1:], rounds[2:])]
        leak_kib = statistics.median(steps) / args.requests
        leak_text = (f"rounds 2→{len(rounds)} {(rounds[-1]['rss'] - rounds[1]['rss']) / 1024:+.1f} MiB, median step "
                     f"{statistics.median(steps) / 1024:+.1f} MiB = {leak_kib:.2f} KiB per request (bound {args.leak_kib_per_request:g})")
    else:
        leak_kib = 0.0
        leak_text = "leak check needs 4 rounds"
    rss_ok = growth_kib <= growth_bound_kib and leak_kib <= args.leak_kib_per_request
    after, _, _ = await one_shot(gport, http_request("POST", "/api/process", process_body("latency-ms=0"), keep_alive=False), hard)
    after_ok = not check_success(after)
    say(f"  RSS: baseline {baseline['rss_kib'] / 1024:.1f} MiB, after each round "
        + ", ".join(f"{r['rss'] / 1024:.1f}" for r in rounds)
        + f" MiB; kept {growth_kib / 1024:+.1f} MiB (bound {growth_bound_kib / 1024:.0f} MiB = {args.rss_kib_per_request:g} KiB per concurrent request); {leak_text}")
    say(f"  a normal request afterwards: {outcome_key(after)}")
    worst = max((t or 0.0) for r in rounds for t in r["settle"].values())
    stuck = sorted({n for r in rounds for n, t in r["settle"].items() if t is None})
    unexpected_total: collections.Counter = collections.Counter()
    for r in rounds:
        unexpected_total.update(r["unexpected"])
    figures = (f"{args.rounds}×{args.requests} hang-ups; "
               + (f"NOT back to baseline within {args.settle:.1f} s: {stuck}" if stuck
                  else f"all figures back to baseline within {worst:.1f} s")
               + (f"; unexpected client outcomes {dict(unexpected_total)}" if unexpected_total else "")
               + ("; no sockets to the mock seen in a round" if any(r["peak"]["to_mock"] == 0 for r in rounds) else "")
               + ("" if rss_ok else "; RSS over its bound")
               + f"; peak {max(r['peak']['fds'] for r in rounds)} gateway fds / {max(r['peak']['to_mock'] for r in rounds)} sockets to the mock"
               + f"; RSS {baseline['rss_kib'] / 1024:.0f} -> {rounds[-1]['rss'] / 1024:.0f} MiB ({leak_text})"
               + f"; normal request after: {outcome_key(after)}")
    return verdict("disconnects", all_ok and rss_ok and after_ok, figures)


def main() -> int:
    parser = drill_parser(__doc__)
    parser.add_argument("--gateway-pid", type=int, required=True)
    parser.add_argument("--mock-port", type=int, required=True)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--hold", type=float, default=0.5, help="seconds before a client hangs up")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--settle", type=float, default=3.0, help="seconds allowed to get back to baseline")
    parser.add_argument("--rss-kib-per-request", type=float, default=96.0,
                        help="RSS the gateway may keep after the bursts, per concurrent request")
    parser.add_argument("--leak-kib-per-request", type=float, default=6.0,
                        help="RSS growth per request allowed from round 2 on")
    return run_drill("disconnects", drill_disconnects, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
