#!/usr/bin/env python3
"""Drill 11, traces: steady load on a gateway that traces every request (always_on) into a
collector (a mock-upstream's OTLP endpoint) while drills/drills.sh freezes the collector
with SIGSTOP for 30 s and thaws it (`stop` and `resume` lines in --marks): no request fails
or slows beyond the noise while it is frozen, the spans that cannot wait are dropped and
counted, and the export resumes once it is back.
"""

from __future__ import annotations

import asyncio
import collections
import sys

from common import (SteadyLoad, drill_parser, http_request, mock_stats, one_shot, percentile, read_marks,
                    run_drill, say, verdict)


async def span_counters(port: int) -> dict[str, float]:
    """textgateway_trace_spans_total by outcome."""
    response, _, _ = await one_shot(port, http_request("GET", "/metrics", keep_alive=False), 5.0)
    found: dict[str, float] = collections.defaultdict(float)
    for line in response.body.decode().splitlines():
        if line.startswith("textgateway_trace_spans_total{"):
            name, value = line.rsplit(" ", 1)
            outcome = name.split('outcome="', 1)[1].split('"', 1)[0]
            found[outcome] += float(value)
    return dict(found)


async def drill_traces(args) -> int:
    load = SteadyLoad(args, hard=args.margin + 10)
    samples: list[tuple[str, dict[str, float], int]] = []

    async def sample(label: str, collector: bool = True) -> None:
        counters = await span_counters(args.port)
        stats = await mock_stats(args.collector_port) if collector else {}
        samples.append((label, counters, stats.get("spans", -1)))

    async def watch() -> None:
        # A sample once the load is steady (drills.sh freezes the collector 3 s later), one when
        # it is thawed (the gateway's counters only: they cover the freeze), one at the end.
        while not load.ready:
            await asyncio.sleep(0.05)
        await sample("before")
        while "resume" not in read_marks(args.marks):
            await asyncio.sleep(0.1)
        await sample("frozen", collector=False)

    watcher = asyncio.create_task(watch())
    trouble = await load.run_until(args.marks, "resume", args.after_resume, args.deadline)
    await watcher
    await asyncio.sleep(args.flush)
    await sample("after")
    records = load.records
    found = read_marks(args.marks)
    if trouble or "stop" not in found or "resume" not in found:
        return verdict("traces", False, trouble or f"marks missing: {found}")
    stop_at, resume_at = found["stop"], found["resume"]
    good = ("200", "stream done")
    bad = [r for r in records if r[2] not in good or r[4]]
    before = [r[1] - r[0] for r in records if r[1] < stop_at]
    frozen = [r[1] - r[0] for r in records if stop_at + 1 < r[0] and r[1] < resume_at]
    after = [r[1] - r[0] for r in records if r[0] > resume_at + 1]
    p = {name: (percentile(values, 0.5) * 1000, percentile(values, 0.99) * 1000) if values else (0, 0)
         for name, values in (("before", before), ("frozen", frozen), ("after", after))}
    counters = {label: values for label, values, _ in samples}
    collected = {label: spans for label, _, spans in samples}

    def dropped(label: str) -> float:
        values = counters.get(label, {})
        return values.get("dropped_queue_full", 0) + values.get("dropped_export_failed", 0)

    dropped_while_frozen = dropped("frozen") - dropped("before")
    exported_after = counters["after"].get("exported", 0) - counters["frozen"].get("exported", 0)
    collected_after = collected["after"] - collected["before"]
    say(f"  load: {args.clients} keep-alive clients ({load.streamers} streaming), every request traced; collector "
        f"frozen (SIGSTOP) {resume_at - stop_at:.1f} s, load kept {args.after_resume:.0f} s after the thaw")
    say(f"  outcomes: {dict(sorted(collections.Counter(r[2] for r in records).items()))}")
    say("  latency p50/p99 ms: " + ", ".join(f"{name} {v[0]:.1f}/{v[1]:.1f} ({n} requests)" for (name, v), n in
                                             zip(p.items(), (len(before), len(frozen), len(after)))))
    say(f"  spans: {dict((k, int(v)) for k, v in sorted(counters['after'].items()))}; dropped while frozen "
        f"{dropped_while_frozen:.0f}; exported after the thaw {exported_after:.0f}; the collector took "
        f"{collected['before']} before the freeze and {collected['after']} in all")
    for record in bad[:8]:
        say(f"  !! {record[2]} after {record[1] - record[0]:.2f} s: {record[4]}")
    problems = []
    if bad:
        problems.append(f"{len(bad)} requests failed")
    if not frozen or not after:
        problems.append("no requests measured while frozen or after")
    # Latency while frozen: the export is off the requests' path, so only the machine's noise
    # moves it (the bound is wide on purpose: a shared CI machine).
    elif p["frozen"][1] > 3 * max(p["before"][1], 1) + 25:
        problems.append(f"p99 while frozen {p['frozen'][1]:.1f} ms against {p['before'][1]:.1f} ms before")
    if dropped_while_frozen <= 0:
        problems.append("no span was counted as dropped while the collector was frozen")
    if exported_after <= 0 or collected_after <= 0:
        problems.append("the export did not resume after the thaw")
    figures = (f"{len(records)} requests, {len(bad)} failed; p99 {p['before'][1]:.1f} ms before, "
               f"{p['frozen'][1]:.1f} ms frozen, {p['after'][1]:.1f} ms after; {dropped_while_frozen:.0f} spans "
               f"dropped and counted while frozen; {exported_after:.0f} exported after the thaw"
               + (f" — {'; '.join(problems)}" if problems else ""))
    return verdict("traces", not problems, figures)


def main() -> int:
    parser = drill_parser(__doc__)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--stream-share", type=float, default=0.1, help="fraction of the clients that stream")
    parser.add_argument("--collector-port", type=int, required=True)
    parser.add_argument("--marks", required=True)
    parser.add_argument("--ready", required=True)
    parser.add_argument("--after-resume", type=float, default=8.0)
    parser.add_argument("--flush", type=float, default=2.0, help="seconds for the last batches after the load")
    parser.add_argument("--deadline", type=float, default=90.0)
    return run_drill("traces", drill_traces, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
