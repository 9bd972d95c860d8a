#!/usr/bin/env python3
"""Drill 2, upstream-faults: slow, garbage, empty and failing upstream answers, plain and
streamed: 504 at the timeout, the contract's 502 and 503 errors, and a cut or failing stream
ends with one `error` event (never `done`) and a complete chunked body.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import time

from common import (
    TransportFailure, check_error, check_stream, drill_parser, http_request, one_shot, outcome_key,
    process_body, run_drill, say, verdict,
)


async def drill_upstream_faults(args) -> int:
    timeout = args.upstream_timeout
    first_token = args.first_token_timeout
    hard = max(timeout, first_token) + args.margin + 10
    plain_cases = [
        # name, directive, count, status, code, latency window (min, max) or None
        ("slow", "latency-ms=%d" % int((timeout + 4) * 1000), args.slow_requests, 504, "upstream_timeout",
         (timeout - 0.05, timeout + args.margin)),
        ("garbage-body", "body=garbage", 50, 502, "upstream_error", None),
        ("empty-body", "body=empty", 50, 502, "upstream_error", None),
        ("empty-content", "body=no-content", 50, 502, "empty_result", None),
        ("no-choices", "body=no-choices", 50, 502, "empty_result", None),
        ("upstream-500", "status=500", 50, 502, "upstream_error", None),
        ("upstream-429", "status=429,retry-after=7", 50, 503, "upstream_busy", None),
        # A stream whose upstream never answers: no answer began, so the JSON error, not a stream.
        ("stream-slow", "latency-ms=%d" % int((first_token + 4) * 1000), 50, 504, "upstream_timeout",
         (first_token - 0.05, first_token + args.margin), True),
    ]
    stream_cases = [
        # name, directive, count, terminal, code, status, deltas, latency window
        ("stream-normal", "", 50, "done", None, None, 5, None),
        ("stream-cut-abort", "cut-stream=abort", 50, "error", "upstream_error", 502, 5, None),
        ("stream-cut-clean", "cut-stream=clean", 50, "error", "upstream_error", 502, 5, None),
        ("stream-error-after", "stream-error-after=2", 50, "error", "upstream_error", 502, 2, None),
        ("stream-empty", "body=no-content", 50, "error", "empty_result", 502, 0, None),
    ]

    async def plain(case) -> tuple[str, list[str], float]:
        name, directive, _count, status, code, _window, *streamed = case
        raw = http_request("POST", "/api/process", process_body(directive, stream=bool(streamed)), keep_alive=False)
        try:
            response, elapsed, close_problem = await one_shot(args.port, raw, hard, check_close=True)
        except TransportFailure as failure:
            return outcome_text(failure), [str(failure)], 0.0
        problems = check_error(response, status, code)
        if close_problem:
            problems.append(close_problem)
        if code == "upstream_busy" and response.headers.get("retry-after") != "7":
            problems.append(f"Retry-After {response.headers.get('retry-after')!r}, wanted the upstream's 7")
        return outcome_key(response), problems, elapsed

    async def streamed(case) -> tuple[str, list[str], float]:
        name, directive, _count, terminal, code, status, deltas, _window = case
        raw = http_request("POST", "/api/process", process_body(directive, stream=True), keep_alive=False)
        try:
            response, elapsed, close_problem = await one_shot(args.port, raw, hard, check_close=True)
        except TransportFailure as failure:
            return outcome_text(failure), [str(failure)], 0.0
        problems, summary = check_stream(response, terminal, code, status, deltas)
        if close_problem:
            problems.append(close_problem)
        return summary, problems, elapsed

    def outcome_text(failure: TransportFailure) -> str:
        return f"transport {failure.kind}"

    jobs = []
    for case in plain_cases:
        jobs += [(case[0], case[5], plain(case)) for _ in range(case[2])]
    for case in stream_cases:
        jobs += [(case[0], case[7], streamed(case)) for _ in range(case[2])]
    started = time.monotonic()
    results = await asyncio.gather(*(job[2] for job in jobs))
    wall = time.monotonic() - started

    by_case: dict[str, list] = collections.defaultdict(list)
    windows: dict[str, tuple[float, float] | None] = {}
    for (name, window, _), result in zip(jobs, results):
        by_case[name].append(result)
        windows[name] = window
    failed = 0
    summaries: list[str] = []
    timed: list[str] = []
    for name, outcomes in by_case.items():
        counts = collections.Counter(outcome for outcome, _, _ in outcomes)
        problems = collections.Counter(p for _, ps, _ in outcomes for p in ps)
        elapsed = [e for _, _, e in outcomes if e > 0]
        window = windows[name]
        late = [e for e in elapsed if window and not (window[0] <= e <= window[1])]
        ok = not problems and not late and len(elapsed) == len(outcomes)
        failed += 0 if ok else 1
        timing = (f"latency min {min(elapsed):.2f} s max {max(elapsed):.2f} s" if elapsed else "no answers")
        if window:
            timing += f" (wanted {window[0]:.2f}–{window[1]:.2f} s; {len(late)} outside)"
        say(f"  {'ok  ' if ok else 'BAD '} {name}: {len(outcomes)} × {', '.join(f'{k} ({v})' for k, v in counts.items())}; {timing}")
        for problem, count in problems.most_common(4):
            say(f"       !! {count} × {problem}")
        if not ok:
            summaries.append(name)
        if window and elapsed:
            timed.append(f"{name} {min(elapsed):.2f}–{max(elapsed):.2f} s")
    return verdict("upstream-faults", failed == 0,
                   f"{len(jobs)} requests in {wall:.1f} s, {len(by_case) - failed}/{len(by_case)} cases right"
                   + (f" (wrong: {', '.join(summaries)})" if summaries else "")
                   + f"; timeouts answered at {', '.join(timed)} (timeouts {timeout:g} s / first token {first_token:g} s)")


def main() -> int:
    parser = drill_parser(__doc__)
    parser.add_argument("--upstream-timeout", type=float, required=True)
    parser.add_argument("--first-token-timeout", type=float, required=True)
    parser.add_argument("--slow-requests", type=int, default=200)
    return run_drill("upstream-faults", drill_upstream_faults, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
