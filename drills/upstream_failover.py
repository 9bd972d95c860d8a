#!/usr/bin/env python3
"""Drill 7, upstream-failover: steady load on two upstreams while drills/drills.sh SIGKILLs the first,
restarts it, then kills both (`kill`, `restart` and `both-down` lines in --marks): no request
fails while the second is up, X-Upstream says who answered, the first takes the load back
after its cooldown, and with both down every request gets its contract status.
"""

from __future__ import annotations

import collections
import sys

from common import SteadyLoad, drill_parser, percentile, read_marks, run_drill, say, verdict


async def drill_upstream_failover(args) -> int:
    timeout = args.upstream_timeout
    latency_bound = timeout + args.margin
    load = SteadyLoad(args, hard=timeout + args.margin + 10)
    streamers = load.streamers
    trouble = await load.run_until(args.marks, "both-down", args.after_both_down, args.deadline)
    records = load.records
    found = read_marks(args.marks)
    if trouble or any(name not in found for name in ("kill", "restart", "both-down")):
        return verdict("upstream-failover", False, trouble or f"marks missing: {found}")
    kill_at, restart_at, down_at = found["kill"], found["restart"], found["both-down"]
    good = ("200", "stream done")

    def phase(first: float, last: float) -> list:
        return [r for r in records if first <= r[0] and r[1] < last]

    # While the second upstream is up (from the first answers until both go down), nothing
    # fails, except a stream the kill cut after its first bytes reached the client: the
    # gateway never retries once the client has a byte.
    up = [r for r in records if r[1] < down_at]
    cut_streams = [r for r in up if r[2].startswith("stream error") and r[0] < kill_at < r[1]]
    up_bad = [r for r in up if r[2] not in good and r not in cut_streams]
    before = phase(0, kill_at)
    during = phase(kill_at + 0.5, restart_at)
    back = phase(restart_at + args.cooldown + 1.5, down_at)
    after_down = [r for r in records if r[0] > down_at + 0.5]
    after_down_bad = [r for r in after_down if r[2] not in ("502 upstream_error", "stream error upstream_error", "504 upstream_timeout")]
    transport = [r for r in records if r[2].startswith("transport") or r[4]]
    slow = [r for r in records if r[1] - r[0] > latency_bound]

    def upstreams(rows: list) -> dict:
        return dict(collections.Counter(r[3] or "-" for r in rows if r[2] in good))

    latencies = [end - start for start, end, _, _, _ in records]
    say(f"  load: {args.clients} keep-alive clients ({streamers} streaming); upstream a SIGKILLed, restarted "
        f"{restart_at - kill_at:.1f} s later (cooldown {args.cooldown:g} s); both down {down_at - restart_at:.1f} s after that")
    say(f"  outcomes: {dict(sorted(collections.Counter(r[2] for r in records).items()))}")
    say(f"  answered by: before the kill {upstreams(before)}; a down {upstreams(during)}; "
        f"a back (+cooldown +1.5 s) {upstreams(back)}")
    say(f"  while b was up: {len(up)} answers, {len(up_bad)} failed, {len(cut_streams)} streams cut mid-answer by the kill")
    say(f"  both down: {len(after_down)} answers -> {dict(collections.Counter(r[2] for r in after_down))}")
    say(f"  latency: p50 {percentile(latencies, 0.5) * 1000:.0f} ms, p99 {percentile(latencies, 0.99) * 1000:.0f} ms, "
        f"max {max(latencies) * 1000:.0f} ms (bound {latency_bound:.1f} s)")
    for record in (up_bad + after_down_bad + transport + slow)[:8]:
        say(f"  !! {record[2]} after {record[1] - record[0]:.2f} s, started {record[0] - kill_at:+.2f} s from the kill: {record[4]}")

    problems = []
    unnamed = [r for r in records if r[2] in good and not r[3]]
    if unnamed:
        problems.append(f"{len(unnamed)} answers without X-Upstream")
    if up_bad:
        problems.append(f"{len(up_bad)} failed while the second upstream was up")
    if not during or any(r[3] != "b" for r in during if r[2] in good):
        problems.append("not every answer came from b while a was down")
    if not back or any(r[3] != "a" for r in back if r[2] in good):
        problems.append("a did not take the load back after its cooldown")
    if not after_down:
        problems.append("no answers while both were down")
    if after_down_bad:
        problems.append(f"{len(after_down_bad)} non-contract answers while both were down")
    if transport:
        problems.append(f"{len(transport)} transport failures or malformed answers")
    if slow:
        problems.append(f"{len(slow)} slower than {latency_bound:.1f} s")
    figures = (f"{len(records)} requests; while b was up {len(up)} answered, {len(up_bad)} failed "
               f"({len(cut_streams)} streams cut by the kill); a down: {upstreams(during)}; a back: {upstreams(back)}; "
               f"both down: {dict(collections.Counter(r[2] for r in after_down))}; max latency {max(latencies):.2f} s "
               f"(bound {latency_bound:.1f} s)" + (f" — {'; '.join(problems)}" if problems else ""))
    return verdict("upstream-failover", not problems, figures)


def main() -> int:
    parser = drill_parser(__doc__)
    parser.add_argument("--clients", type=int, default=150)
    parser.add_argument("--stream-share", type=float, default=0.1, help="fraction of the clients that stream")
    parser.add_argument("--upstream-timeout", type=float, required=True)
    parser.add_argument("--cooldown", type=float, required=True, help="UPSTREAM_COOLDOWN_SECONDS")
    parser.add_argument("--marks", required=True)
    parser.add_argument("--ready", required=True)
    parser.add_argument("--after-both-down", type=float, default=4.0)
    parser.add_argument("--deadline", type=float, default=90.0)
    return run_drill("upstream-failover", drill_upstream_failover, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
