#!/usr/bin/env bash
# Long texts as jobs against a slow upstream (mock-upstream answering after LATENCY_MS), on
# the default SQLite store: the wall time of one 200,000-character summary and the upstream
# calls it made, then JOBS such jobs at once with the gateway's RSS sampled while they run.
#
#   Benchmarks/bench-jobs.sh                 # LATENCY_MS=300 CHARACTERS=200000 JOBS=20 ROUNDS=3
#   JOB_CONCURRENCY=… JOB_WORKERS=… JOB_CHUNK_TOKENS=…   passed to the gateway
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/processes.sh
. scripts/processes.sh
latency=${LATENCY_MS:-300}
characters=${CHARACTERS:-200000}
jobs=${JOBS:-20}
rounds=${ROUNDS:-3}
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS:-}"

work=$(mktemp -d)
mock_pid=
gateway_pid=
stop_on_exit "$work" gateway_pid mock_pid
build_release mock-upstream text-gateway

"$bin/mock-upstream" --port 0 --api-key bench --latency-ms "$latency" --loops 2 >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_url=$(await_mock_address "$mock_pid" "$work/mock.out") || die "mock-upstream did not start"
mock_port=${mock_url##*:}
mock_port=${mock_port%%/*}
start_text_gateway "$bin" "$work/gateway" "$work/gateway.log" \
    DARVAREH_BASE_URL="$mock_url" DARVAREH_API_KEY=bench DARVAREH_MODEL_ID=bench-model RATE_LIMITS=off LOG_LEVEL=warning \
    MAX_BODY_BYTES=4194304 JOB_MAX_ACTIVE_PER_USER="$jobs" \
    ${JOB_CONCURRENCY:+JOB_CONCURRENCY=$JOB_CONCURRENCY} ${JOB_WORKERS:+JOB_WORKERS=$JOB_WORKERS} \
    ${JOB_CHUNK_TOKENS:+JOB_CHUNK_TOKENS=$JOB_CHUNK_TOKENS} || { cat "$work/gateway.log" >&2; die "text-gateway did not start"; }
gateway_pid=$started_pid

echo "TextGateway jobs — $(date -u '+%Y-%m-%d %H:%M:%S UTC'); $(nproc) cores; upstream latency ${latency} ms"
python3 - "$started_port" "$mock_port" "$gateway_pid" "$characters" "$jobs" "$rounds" <<'PYTHON'
import asyncio, json, statistics, sys, time
sys.path.insert(0, "drills")
from common import long_text, job_request, rss_kib

port, mock_port, pid, characters, jobs, rounds = (int(value) for value in sys.argv[1:])

async def mock_requests() -> int:
    return json.loads((await job_request(mock_port, "GET", "/mock/stats")).body)["requests"]

async def run(count: int, seed: int) -> tuple[list[float], list[dict], int, int]:
    bodies = [json.dumps({"task": "summarize", "text": long_text(characters, seed * 1000 + index)}, ensure_ascii=False).encode()
              for index in range(count)]
    calls_before = await mock_requests()
    start = time.monotonic()
    answers = await asyncio.gather(*(job_request(port, "POST", "/api/jobs", body) for body in bodies))
    ids = [answer.json()["jobId"] for answer in answers if answer.status == 202]
    assert len(ids) == count, [answer.status for answer in answers]
    ended, states, peak = {}, {}, 0
    while len(ended) < count:
        peak = max(peak, rss_kib(pid))
        for job in ids:
            if job not in ended:
                states[job] = (await job_request(port, "GET", f"/api/jobs/{job}")).json()
                if states[job]["status"] in ("succeeded", "failed", "cancelled"):
                    ended[job] = time.monotonic() - start
        await asyncio.sleep(0.1)
    assert all(state["status"] == "succeeded" for state in states.values()), [state["status"] for state in states.values()]
    return sorted(ended.values()), list(states.values()), await mock_requests() - calls_before, peak

async def main() -> None:
    idle = rss_kib(pid)
    walls, calls = [], []
    for round in range(rounds):
        wall, states, upstream, _ = await run(1, round)
        walls.append(wall[0])
        calls.append(upstream)
        print(f"one job of {characters} characters, round {round + 1}: {wall[0]:.2f} s, {upstream} upstream calls "
              f"({states[0]['progress']['total']} items), {states[0]['usage']['totalTokens']} tokens", flush=True)
    print(f"one job: median {statistics.median(walls):.2f} s, {statistics.median(calls):.0f} upstream calls")
    wall, states, upstream, peak = await run(jobs, 100)
    print(f"{jobs} jobs of {characters} characters at once: all done in {wall[-1]:.2f} s (median {statistics.median(wall):.2f} s), "
          f"{upstream} upstream calls; gateway RSS {idle / 1024:.0f} MiB idle, {peak / 1024:.0f} MiB peak while they ran, "
          f"{rss_kib(pid) / 1024:.0f} MiB after")

asyncio.run(main())
PYTHON
