#!/usr/bin/env python3
"""Drill 10, budgets: three instances on one Redis, guests (200 addresses) and identified
callers sending hundreds of requests at once (plain, streamed, /v1 with `n`, jobs) against a
guests budget and a gateway budget: afterwards the ledger's summed cost is at most each budget,
every refusal is `429 budget_exceeded` with its scope, and the requests served used at least
90 % of each budget (reservations released promptly, not hoarded).

A client refused with `Retry-After: 1` (room that requests in flight hold) tries again after
that wait; one refused until the budget's period ends stops. The ledger is read from each
instance's SQLite store, the budgets' own sums from Redis.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from decimal import Decimal

from common import (
    TransportFailure, check_error, check_stream, check_success, drill_parser, http_request, long_text, one_shot,
    outcome_key, run_drill, verdict,
)

TASKS = ("summarize", "key-points", "titles", "rewrite")
TERMINAL_JOB_STATES = ("succeeded", "failed", "cancelled")


def micros(amount: str) -> int:
    """An amount of the currency (`0.05`) in micro-units, exactly."""
    return int(Decimal(amount) * 1_000_000)


def cost_micros(input_tokens: int, output_tokens: int, price_in: int, price_out: int) -> int:
    """What the tokens cost at prices in micro-units per million tokens, rounded up as the gateway does."""
    return -(-(input_tokens * price_in + output_tokens * price_out) // 1_000_000)


@dataclass
class Request:
    """One client's request (its attempts share everything but their X-Request-Id)."""

    index: int
    guest: bool
    kind: str  # plain, stream, v1, job
    port: int
    headers: dict[str, str]
    path: str
    body: bytes
    answers: int = 1  # `n` on /v1
    outcome: str = ""  # served, refused <scope>, problem
    attempts: list[str] = field(default_factory=list)  # X-Request-Id of each attempt
    served_id: str | None = None
    job_id: str | None = None
    job_state: str = ""


def worst_case(request: Request, max_tokens: int, price_in: int, price_out: int) -> int:
    """A lower bound of a request's worst case in micro-units as the gateway reserves it
    (docs/configuration.md, "Budgets"): its body at three bytes a token (a job's one call: its
    text) and `n` answers of MAX_TOKENS. The gateway adds its prompt around an /api/process text
    on top; the drill's texts are long enough that even this bound covers what they use."""
    size = len(json.loads(request.body)["text"].encode()) if request.kind == "job" else len(request.body)
    return cost_micros(size // 3, request.answers * max_tokens, price_in, price_out)


def plan(args, tokens: list[str]) -> list[Request]:
    """The offered load: guests and callers in their shares, each kind in turn, shuffled, spread
    round-robin over the instances. Texts differ in length (so in cost) and in mock latency."""
    rng = random.Random(10)
    guests = round(args.requests * args.guest_share)
    kinds = ("plain", "stream", "v1")
    people = [(True, kinds[i % 3]) for i in range(guests)] + [(False, kinds[i % 3]) for i in range(args.requests - guests)]
    # At least one job each for a guest and a caller, in place of a plain request.
    people[0] = (True, "job")
    people[guests] = (False, "job")
    rng.shuffle(people)
    ports = [args.port] + [int(port) for port in args.more_ports.split(",") if port]
    requests = []
    guest_number = caller_number = 0
    for index, (guest, kind) in enumerate(people):
        if guest:
            address = guest_number % args.guests
            guest_number += 1
            headers = {"X-Forwarded-For": f"10.77.{address // 250}.{address % 250 + 1}"}
        else:
            headers = {"Authorization": f"Bearer {tokens[caller_number % len(tokens)]}"}
            caller_number += 1
        chars = rng.randint(int(args.text_chars * 0.85), int(args.text_chars * 1.15))
        latency = rng.randint(args.latency_min_ms, args.latency_max_ms)
        directive = f"latency-ms={latency}" + (",deltas=5,delta-delay-ms=20" if kind == "stream" else "")
        text = f"{long_text(chars, 1000 + index)} [mock:{directive}]"
        answers = 1
        if kind == "v1":
            answers = args.choices
            path = "/v1/chat/completions"
            body = {"model": "default", "n": answers, "max_tokens": args.max_tokens,
                    "messages": [{"role": "user", "content": text}]}
        else:
            path = "/api/jobs" if kind == "job" else "/api/process"
            body = {"task": TASKS[index % len(TASKS)], "text": text}
            if kind == "stream":
                body["stream"] = True
        requests.append(Request(index, guest, kind, ports[index % len(ports)], headers, path,
                                json.dumps(body, ensure_ascii=False).encode(), answers))
    return requests


def scope_of(response, openai: bool) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    return (body.get("error") or {}).get("scope") if openai else body.get("scope")


def check_openai_refusal(response) -> list[str]:
    """`/v1`'s 429: OpenAI's error shape with the gateway's code and scope."""
    problems = []
    if not response.headers.get("content-type", "").startswith("application/json"):
        problems.append(f"Content-Type {response.headers.get('content-type')!r}")
    if not response.headers.get("x-request-id"):
        problems.append("no X-Request-Id header")
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return problems + [f"body is not JSON: {response.body[:120]!r}"]
    if not isinstance(error, dict) or error.get("code") != "budget_exceeded" or error.get("type") != "rate_limit_error" \
            or not error.get("message"):
        problems.append(f"error {str(error)[:160]}")
    return problems


class Drill:
    def __init__(self, args) -> None:
        self.args = args
        self.problems: list[str] = []
        self.retries = 0
        self.waits_by_scope: dict[str, int] = {}
        self.final_by_scope: dict[str, int] = {}
        self.deadline = 0.0
        self.local_offset = args.budget_offset_seconds

    def problem(self, request: Request, text: str) -> None:
        who = "guest" if request.guest else "caller"
        self.problems.append(f"#{request.index} ({who}, {request.kind}): {text}")

    def seconds_to_day_end(self) -> float:
        local = time.time() + self.local_offset
        return 86_400 - local % 86_400

    def refusal(self, request: Request, response) -> tuple[str | None, int | None]:
        """A 429 budget_exceeded's scope and Retry-After, after its checks; (None, None) when it is not one."""
        openai = request.path.startswith("/v1")
        problems = check_openai_refusal(response) if openai else check_error(response, 429, "budget_exceeded")
        scope = scope_of(response, openai)
        if scope not in ("guests", "gateway"):
            problems.append(f"scope {scope!r}, wanted guests or gateway")
        if request.guest and scope == "caller" or not request.guest and scope == "guests":
            problems.append(f"scope {scope!r} for a {'guest' if request.guest else 'caller'}")
        try:
            retry_after = int(response.headers.get("retry-after", ""))
        except ValueError:
            retry_after = None
            problems.append(f"Retry-After {response.headers.get('retry-after')!r}")
        if retry_after is not None and retry_after > 1 and abs(retry_after - self.seconds_to_day_end()) > 5:
            problems.append(f"Retry-After {retry_after}, neither 1 nor the budget day's end "
                            f"({self.seconds_to_day_end():.0f} s away)")
        if problems:
            self.problem(request, "refusal: " + "; ".join(problems))
            return None, None
        return scope, retry_after

    def check_served(self, request: Request, response) -> list[str]:
        if request.kind == "plain":
            return check_success(response)
        if request.kind == "stream":
            return check_stream(response, "done")[0]
        try:
            body = response.json()
        except ValueError:
            return [f"body is not JSON: {response.body[:120]!r}"]
        problems = []
        if len(body.get("choices") or []) != request.answers:
            problems.append(f"{len(body.get('choices') or [])} choices, wanted {request.answers}")
        if not isinstance(body.get("usage"), dict):
            problems.append("no usage")
        return problems

    async def run(self, request: Request) -> None:
        """Sends the request until it is served or refused for the period; a Retry-After of 1 is waited out."""
        rng = random.Random(request.index)
        while True:
            attempt = f"budgets-{request.index}-{len(request.attempts)}"
            request.attempts.append(attempt)
            raw = http_request("POST", request.path, request.body, keep_alive=False,
                               headers={"X-Request-Id": attempt, **request.headers})
            try:
                response, _, _ = await one_shot(request.port, raw, self.args.request_timeout)
            except TransportFailure as failure:
                request.outcome = "problem"
                self.problem(request, f"transport {failure}")
                return
            if request.kind == "job":
                # A submission calls no model, so reserves nothing: it is accepted whatever the
                # budgets hold, and the job's calls meet them.
                if response.status != 202:
                    request.outcome = "problem"
                    self.problem(request, f"submission answered {outcome_key(response)}, wanted 202")
                    return
                request.served_id = attempt
                request.job_id = response.json().get("jobId")
                await self.await_job(request)
                return
            if response.status == 200:
                problems = self.check_served(request, response)
                if problems:
                    request.outcome = "problem"
                    self.problem(request, "; ".join(problems[:3]))
                else:
                    request.outcome = "served"
                    request.served_id = attempt
                return
            if outcome_key(response) != "429 budget_exceeded" and not (response.status == 429 and request.kind == "v1"):
                request.outcome = "problem"
                self.problem(request, f"{outcome_key(response)} {response.body[:160]!r}")
                return
            scope, retry_after = self.refusal(request, response)
            if scope is None:
                request.outcome = "problem"
                return
            if retry_after > 1:
                request.outcome = f"refused {scope}"
                self.final_by_scope[scope] = self.final_by_scope.get(scope, 0) + 1
                return
            self.waits_by_scope[scope] = self.waits_by_scope.get(scope, 0) + 1
            wait = retry_after + rng.uniform(0, 0.3)
            if time.monotonic() + wait > self.deadline:
                request.outcome = "problem"
                self.problem(request, f"still refused with Retry-After 1 ({scope}) at the deadline after "
                                      f"{len(request.attempts)} attempts: reservations held too long")
                return
            self.retries += 1
            await asyncio.sleep(wait)

    async def await_job(self, request: Request) -> None:
        """Polls the job on its instance until it ends: succeeded, or failed with budget_exceeded."""
        state: dict = {}
        while time.monotonic() < self.deadline:
            raw = http_request("GET", f"/api/jobs/{request.job_id}", keep_alive=False, headers=request.headers)
            try:
                response, _, _ = await one_shot(request.port, raw, 10)
            except TransportFailure as failure:
                request.outcome = "problem"
                self.problem(request, f"GET the job: transport {failure}")
                return
            if response.status != 200:
                request.outcome = "problem"
                self.problem(request, f"GET the job: {outcome_key(response)}")
                return
            state = response.json()
            if state.get("status") in TERMINAL_JOB_STATES:
                break
            await asyncio.sleep(0.25)
        status = state.get("status")
        code = (state.get("error") or {}).get("code")
        request.job_state = status if status == "succeeded" else f"{status} {code}"
        if status == "succeeded":
            request.outcome = "served"
        elif status == "failed" and code == "budget_exceeded":
            request.outcome = "job budget_exceeded"
        else:
            request.outcome = "problem"
            self.problem(request, f"job ended {status!r} {code!r} (or not within the deadline)")


def read_ledger(paths: list[str]) -> list[dict]:
    rows = []
    for path in paths:
        try:
            connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        except sqlite3.Error:
            continue
        try:
            connection.row_factory = sqlite3.Row
            rows += [dict(row) for row in connection.execute(
                "SELECT request_id, user_id, route, status, code, input_tokens, output_tokens, cost_micros FROM requests")]
        except sqlite3.Error:
            pass
        finally:
            connection.close()
    return rows


def redis_call(connection: socket.socket, reply, *parts: str):
    """One command on a raw RESP connection: its reply (integers, bulk strings, arrays; None for nil)."""
    encoded = [part.encode() for part in parts]
    connection.sendall(b"*%d\r\n" % len(encoded) + b"".join(b"$%d\r\n%s\r\n" % (len(part), part) for part in encoded))

    def read():
        line = reply.readline()
        kind, rest = line[:1], line[1:].rstrip(b"\r\n")
        if kind == b"$":
            return None if rest == b"-1" else reply.read(int(rest) + 2)[:-2].decode()
        if kind == b"*":
            return None if rest == b"-1" else [read() for _ in range(int(rest))]
        if kind == b":":
            return int(rest)
        if kind == b"+":
            return rest.decode()
        raise OSError(f"Redis answered {line[:120]!r}")

    return read()


def redis_day_budgets(port: int, period_id: int) -> list[tuple[int, int]]:
    """The money budgets' counters of the day in Redis, as (used by requests that ended, held by
    requests running), smallest use first: with no plan budgets, the guests' and the gateway's.
    Found by their pattern (`tg:bg:{…}:d:m:<day>`), not by how an account's key is digested."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        reply = connection.makefile("rb")
        keys: list[str] = []
        cursor = "0"
        while True:
            cursor, found = redis_call(connection, reply, "SCAN", cursor, "MATCH", f"tg:bg:*:d:m:{period_id}", "COUNT", "1000")
            keys += found
            if cursor == "0":
                break
        sums = []
        for key in sorted(set(keys)):
            used, held = redis_call(connection, reply, "HMGET", key, "s", "f")
            sums.append((int(used or 0), int(held or 0)))
    return sorted(sums)


async def drill_budgets(args) -> int:
    started = time.monotonic()
    tokens = [f"{args.token_prefix}-{number:02d}" for number in range(1, args.callers + 1)]
    price_in, price_out = (micros(price) for price in args.prices.split("/"))
    guests_budget, gateway_budget = micros(args.guests_budget), micros(args.gateway_budget)
    requests = plan(args, tokens)

    def worst(request: Request) -> int:
        return worst_case(request, args.max_tokens, price_in, price_out)

    # Each request's worst case a small part of the budgets, so that 90 % of them is within reach.
    largest = max(worst(request) for request in requests)
    early_problems = []
    if largest > 0.03 * guests_budget:
        early_problems.append(f"a request's worst case ({largest} micros) is over 3 % of the guests budget: 90 % may be out of reach")
    drill = Drill(args)
    drill.deadline = started + args.deadline
    await asyncio.gather(*(drill.run(request) for request in requests))
    load_seconds = time.monotonic() - started
    problems = early_problems + drill.problems

    # The rows: every attempt's (refusals included) and each job's, written within moments of
    # the answers; waited for with a deadline.
    attempts = {attempt for request in requests for attempt in request.attempts if request.kind != "job"}
    jobs_ended = [request for request in requests if request.kind == "job" and request.job_state]
    rows: list[dict] = []
    wait_until = time.monotonic() + args.ledger_wait
    while True:
        rows = read_ledger(args.stores.split(","))
        seen = {row["request_id"] for row in rows}
        job_rows = [row for row in rows if row["route"] == "/api/jobs"]
        if (attempts <= seen and len(job_rows) >= len(jobs_ended)) or time.monotonic() > wait_until:
            break
        await asyncio.sleep(0.2)
    missing = attempts - {row["request_id"] for row in rows}
    if missing:
        problems.append(f"{len(missing)} attempts have no ledger row within {args.ledger_wait:.0f} s (e.g. {sorted(missing)[:3]})")
    if len(job_rows) < len(jobs_ended):
        problems.append(f"{len(job_rows)} job rows for {len(jobs_ended)} jobs ended")

    by_id = {row["request_id"]: row for row in rows}
    # A job's row without a cost (its tokens only): its one call priced here, as the budgets settled it.
    unpriced_job_rows = 0
    guests_spent = total_spent = 0
    for row in rows:
        cost = row["cost_micros"]
        if row["route"] == "/api/jobs" and cost is None:
            unpriced_job_rows += 1
            cost = cost_micros(row["input_tokens"] or 0, row["output_tokens"] or 0, price_in, price_out)
        cost = cost or 0
        total_spent += cost
        if row["user_id"] is None:
            guests_spent += cost
    # Each served request's use against the lower bound of what it reserved (its input at three
    # bytes a token and `n` answers of MAX_TOKENS, at the prices).
    over_reservation = []
    ratios = []
    for request in requests:
        row = by_id.get(request.served_id or "")
        if request.kind == "job" or request.outcome != "served" or row is None or row["cost_micros"] is None:
            continue
        reserved = worst(request)
        ratios.append(row["cost_micros"] / reserved)
        if row["cost_micros"] > reserved:
            over_reservation.append((request.index, row["cost_micros"], reserved, row["input_tokens"], len(request.body)))
    if over_reservation:
        index, used, reserved, input_tokens, body = max(over_reservation, key=lambda item: item[1] / item[2])
        problems.append(f"{len(over_reservation)} requests cost more than they reserved, e.g. #{index}: {used} micros "
                        f"for a reservation of {reserved} ({input_tokens} input tokens for a body of {body} bytes)")
    refused_rows = sum(1 for row in rows if row["code"] == "budget_exceeded")
    refusals_seen = sum(drill.waits_by_scope.values()) + sum(drill.final_by_scope.values())
    if refused_rows != refusals_seen and not missing:
        problems.append(f"{refused_rows} budget_exceeded rows in the ledger for {refusals_seen} refusals answered")

    # The budgets' own sums in Redis: what ended equals the ledger's, nothing is held any more.
    period_id = int((time.time() + args.budget_offset_seconds) // 86_400)
    redis_figures = ""
    try:
        counters = redis_day_budgets(args.redis_port, period_id)
        if len(counters) != 2:
            raise OSError(f"{len(counters)} money budgets of the day in Redis, wanted 2 (guests, gateway)")
        (guests_s, guests_f), (gateway_s, gateway_f) = counters
        redis_figures = f"; Redis: guests used {guests_s} held {guests_f}, gateway used {gateway_s} held {gateway_f}"
        if (guests_s, gateway_s) != (guests_spent, total_spent):
            problems.append(f"Redis's sums (guests {guests_s}, gateway {gateway_s}) differ from the ledger's "
                            f"({guests_spent}, {total_spent})")
        if guests_f or gateway_f:
            problems.append(f"reservations still held in Redis after every request ended (guests {guests_f}, gateway {gateway_f})")
    except (OSError, ValueError) as error:
        problems.append(f"reading the budgets from Redis: {error}")

    served = [request for request in requests if request.outcome == "served"]
    served_guests = sum(1 for request in served if request.guest)
    if guests_spent > guests_budget:
        problems.append(f"guests overspent: {guests_spent} > {guests_budget} micros")
    if total_spent > gateway_budget:
        problems.append(f"gateway overspent: {total_spent} > {gateway_budget} micros")
    if guests_spent < 0.9 * guests_budget:
        problems.append(f"guests used {guests_spent / guests_budget:.1%} of their budget, wanted at least 90 %")
    if total_spent < 0.9 * gateway_budget:
        problems.append(f"the gateway used {total_spent / gateway_budget:.1%} of its budget, wanted at least 90 %")
    # The demand exceeded the budgets: some request was refused for the rest of the period.
    # Which budget refuses a guest last is a race (the guests' may be nearly spent when the
    # gateway's runs out), so the guests' is shown spent by its use, not by a refusal of its own.
    if not any(drill.final_by_scope.get(scope) for scope in ("guests", "gateway")):
        problems.append("no request was refused for the period: the demand did not exceed the budgets")

    jobs = ", ".join(request.job_state or "?" for request in requests if request.kind == "job")
    kinds = {kind: sum(1 for request in served if request.kind == kind) for kind in ("plain", "stream", "v1", "job")}
    figures = (f"{len(requests)} requests at once over {1 + len([p for p in args.more_ports.split(',') if p])} instances "
               f"({round(args.requests * args.guest_share)} from {args.guests} guest addresses, the rest from {args.callers} callers), "
               f"{sum(len(request.attempts) for request in requests)} attempts: "
               f"served {len(served)} ({served_guests} guests; plain {kinds['plain']}, streamed {kinds['stream']}, "
               f"/v1 n={args.choices} {kinds['v1']}, jobs {kinds['job']}), refused for the day: "
               f"guests {drill.final_by_scope.get('guests', 0)}, gateway {drill.final_by_scope.get('gateway', 0)}; "
               f"retries after Retry-After 1: {drill.retries} (guests {drill.waits_by_scope.get('guests', 0)}, "
               f"gateway {drill.waits_by_scope.get('gateway', 0)}); jobs: {jobs}; "
               f"guests spent {guests_spent}/{guests_budget} micros ({guests_spent / guests_budget:.1%}), "
               f"total {total_spent}/{gateway_budget} ({total_spent / gateway_budget:.1%})"
               f"{redis_figures}; largest worst case {largest} micros ({largest / guests_budget:.1%} of the guests budget), "
               f"use/reservation max {max(ratios, default=0):.2f}"
               f"{f', {unpriced_job_rows} job rows without cost_micros (priced from their tokens)' if unpriced_job_rows else ''}; "
               f"load {load_seconds:.1f} s, elapsed {time.monotonic() - started:.1f} s")
    unique = list(dict.fromkeys(problems))
    return verdict("budgets", not unique, figures + (f" — {'; '.join(unique[:6])}" if unique else ""))


def main() -> int:
    parser = drill_parser(__doc__)
    parser.add_argument("--more-ports", default="", help="the other instances' ports, comma-separated")
    parser.add_argument("--redis-port", type=int, required=True)
    parser.add_argument("--stores", required=True, help="each instance's SQLite file, comma-separated")
    parser.add_argument("--token-prefix", required=True, help="caller N's token is <prefix>-NN (01, 02, …)")
    parser.add_argument("--callers", type=int, default=20)
    parser.add_argument("--guests", type=int, default=200, help="guest addresses")
    parser.add_argument("--guest-share", type=float, default=0.6, help="the share of the requests guests send")
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--prices", required=True, help="the model's INPUT/OUTPUT price per million tokens")
    parser.add_argument("--guests-budget", required=True, help="a day's, in units of the currency")
    parser.add_argument("--gateway-budget", required=True, help="a day's, in units of the currency")
    parser.add_argument("--budget-offset-seconds", type=int, default=0, help="BUDGET_TIMEZONE's offset east of UTC")
    parser.add_argument("--max-tokens", type=int, required=True, help="MAX_TOKENS")
    parser.add_argument("--choices", type=int, default=2, help="`n` of the /v1 requests")
    parser.add_argument("--text-chars", type=int, default=3000, help="a text's characters (±15 %%)")
    parser.add_argument("--latency-min-ms", type=int, default=100)
    parser.add_argument("--latency-max-ms", type=int, default=300)
    parser.add_argument("--request-timeout", type=float, default=30.0)
    parser.add_argument("--deadline", type=float, default=45.0, help="seconds for every request (and job) to end")
    parser.add_argument("--ledger-wait", type=float, default=10.0)
    return run_drill("budgets", drill_budgets, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
