#!/usr/bin/env python3
"""Drill 1, upstream-restart: steady load while drills/drills.sh SIGKILLs the mock and restarts it
on the same port (the script writes `kill <epoch>` / `restart <epoch>` lines to --marks once
--ready exists): contract statuses only, bounded latency, no reset or hung connection, and
recovery without restarting the gateway.
"""

from __future__ import annotations

import collections
import sys

from common import SteadyLoad, drill_parser, percentile, read_marks, run_drill, say, verdict


async def drill_upstream_restart(args) -> int:
    timeout = args.upstream_timeout
    latency_bound = timeout + args.margin
    load = SteadyLoad(args, hard=timeout + args.margin + 10)
    streamers = load.streamers
    trouble = await load.run_until(args.marks, "restart", args.after_restart, args.deadline)
    records = load.records
    found = read_marks(args.marks)
    if trouble or "kill" not in found or "restart" not in found:
        return verdict("upstream-restart", False, trouble or f"marks missing: {found}")
    kill_at, restart_at = found["kill"], found["restart"]

    counts = collections.Counter(record[2] for record in records)
    latencies = [end - start for start, end, _, _, _ in records]
    bad = [record for record in records if record[4] or record[2].startswith("transport")]
    before = [r for r in records if r[1] < kill_at]
    good = ("200", "stream done")
    before_bad = [r for r in before if r[2] not in good]
    in_flight_at_kill = [r for r in records if r[0] < kill_at < r[1]]
    down = [r for r in records if kill_at + 0.5 < r[0] and r[1] < restart_at]
    successes_after = sorted(r[1] for r in records if r[2] in good and r[1] > restart_at)
    first_success = successes_after[0] if successes_after else None
    recover = (first_success - restart_at) if first_success else None
    settled = [r for r in records if first_success and r[0] > first_success + 1.0]
    settled_bad = [r for r in settled if r[2] not in good]
    slow = [r for r in records if r[1] - r[0] > latency_bound]

    say(f"  load: {args.clients} keep-alive clients ({streamers} streaming); mock SIGKILLed at +{kill_at - records[0][0]:.1f} s, "
        f"restarted on the same port {restart_at - kill_at:.1f} s later; load kept {args.after_restart:.0f} s after")
    say(f"  outcomes: {dict(sorted(counts.items()))}")
    say(f"  before the kill: {len(before)} answers, {len(before_bad)} failed; in flight at the kill: "
        f"{len(in_flight_at_kill)} -> {dict(collections.Counter(r[2] for r in in_flight_at_kill))}")
    say(f"  while down: {len(down)} answers -> {dict(collections.Counter(r[2] for r in down))}")
    say(f"  after recovery (+1 s): {len(settled)} answers, {len(settled_bad)} failed")
    say(f"  latency: p50 {percentile(latencies, 0.5) * 1000:.0f} ms, p99 {percentile(latencies, 0.99) * 1000:.0f} ms, "
        f"max {max(latencies) * 1000:.0f} ms (bound {latency_bound:.1f} s)")
    for record in (bad + slow + before_bad + settled_bad)[:8]:
        offset = record[0] - kill_at
        say(f"  !! {record[2]} after {record[1] - record[0]:.2f} s, started {abs(offset):.2f} s "
            f"{'before' if offset < 0 else 'after'} the kill: {record[4]}")

    ok = (not bad and not slow and not before_bad and recover is not None and recover <= args.recover_within
          and not settled_bad and len(down) > 0)
    problems = []
    if bad:
        problems.append(f"{len(bad)} non-contract answers or transport failures")
    if slow:
        problems.append(f"{len(slow)} slower than {latency_bound:.1f} s")
    if before_bad:
        problems.append(f"{len(before_bad)} failures before the kill")
    if recover is None or recover > args.recover_within:
        problems.append(f"no recovery within {args.recover_within:.0f} s of the restart")
    if settled_bad:
        problems.append(f"{len(settled_bad)} failures after recovery")
    if not down:
        problems.append("no requests answered while the upstream was down")
    figures = (f"{len(records)} requests, " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
               + f"; max latency {max(latencies):.2f} s (bound {latency_bound:.1f} s); "
               + (f"recovered {recover:.2f} s after the restart" if recover is not None else "did not recover")
               + (f" — {'; '.join(problems)}" if problems else ""))
    return verdict("upstream-restart", ok, figures)


def main() -> int:
    parser = drill_parser(__doc__)
    parser.add_argument("--clients", type=int, default=150)
    parser.add_argument("--stream-share", type=float, default=0.1, help="fraction of the clients that stream")
    parser.add_argument("--upstream-timeout", type=float, required=True)
    parser.add_argument("--marks", required=True)
    parser.add_argument("--ready", required=True)
    parser.add_argument("--after-restart", type=float, default=6.0)
    parser.add_argument("--recover-within", type=float, default=5.0)
    parser.add_argument("--deadline", type=float, default=60.0)
    return run_drill("upstream-restart", drill_upstream_restart, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
