import Access
import ChatAPI
import EventLoop
import HTTP1
import HTTPServer
import Pricing
import Synchronization
import Telemetry
import Tracing

/// What a finished request leaves behind, handed to each ``RequestObserver``.
package struct FinishedRequest: Sendable {
    package let requestID: String
    package let method: String
    package let path: String
    /// The status the client got (`499` when it went away first).
    package let status: Int
    /// The access log's `outcome`: `done`, `cache_hit`, `cancelled`, `rate_limited`, …
    package let outcome: String
    package let userID: String?
    package let task: String?
    package let model: String?
    package let inputTokens: Int?
    package let outputTokens: Int?
    package let durationNanoseconds: UInt64
}

/// Told of every request once it has ended (the store's ledger, tests that count).
package protocol RequestObserver: Sendable {
    func requestFinished(_ request: FinishedRequest) async
}

/// How a request ends, in one place: the pipeline hands it what the route reported (or the
/// error it threw) before the response goes out, a gateway stream's report when the stream
/// ended, and the HTTP server calls ``finish(_:_:)`` exactly once, however the request ended.
/// It alone sets the status, the outcome and the timings, gives the rate-limit lease back
/// (charging the tokens used), records the metrics, writes the one access-log line, hands
/// the ledger the one row and tells the observers.
///
/// Under `LEDGER_DURABILITY=strict` the row is committed before the answer's end reaches the
/// client (a whole body before it is sent, a stream before its last event); the log line
/// then says what the committed row says, even when the client goes during that last write.
struct RequestFinisher: Sendable {
    let metrics: GatewayMetrics
    let metricsEnabled: Bool
    let logger: Logger
    let clock: @Sendable () -> Instant
    let observers: [any RequestObserver]
    /// The store's ledger; nil when the gateway is stateless.
    let ledger: LedgerRecorder?
    var idempotency: IdempotencyMetrics? = nil
    /// Sends a sampled request's spans once it ended; nil when tracing is off.
    var tracer: RequestTracer? = nil
    /// `PRICES`: what a request's calls cost, in the log line and the metrics.
    var prices: PriceList? = nil

    /// A request starts being answered.
    func started(_ context: RequestContext) {
        metrics.inFlight.increment()
    }

    /// The route answered with `response` and `report`, or failed with `error` (rendered as
    /// `response`); called before the response goes out, and before a gateway stream's
    /// producer starts (`whole` is false then). A whole answer gives its lease back
    /// now, so that its `RateLimit-Remaining` counts the request's own tokens; then the
    /// `RateLimit-*` fields go on the response, and under strict durability a whole body's
    /// row is committed.
    @inline(never)
    func answered(
        _ context: RequestContext, _ response: inout HTTPResponse, whole: Bool, report: RouteReport = RouteReport(),
        error: GatewayError? = nil
    ) async {
        // The synchronous work runs on the thread's stack, out of line: each await's frame
        // comes from the request task's allocator, and a frame this wide after the route's
        // deep ones had returned took a new slab (and freed the route's) on every request.
        let (held, absorbedStatus) = Self.absorb(
            report, status: response.status.code, whole: whole, error: error, context)
        var rateStatus = absorbedStatus
        if let held, let status = await giveBack(held, context) { rateStatus = status }
        if let rateStatus { Self.stamp(rateStatus, on: &response) }
        if let budget = report.budget { Self.stamp(budget.hold, on: &response) }
        if whole, context.strictLedger != nil { await Self.recordStrictly(context) }
    }

    /// Takes in the route's report, its status and error: the lease a whole answer gives back
    /// now, and the limiter's status when the route admitted the request.
    @inline(never)
    private static func absorb(
        _ report: RouteReport, status code: Int, whole: Bool, error: GatewayError?, _ context: RequestContext
    ) -> (Admission?, RateStatus?) {
        // One lock on the common path: the status, the outcome, and the lease a whole answer gives back.
        let held = context.record.state.withLock { entry -> Admission? in
            entry.summary.absorb(report)
            entry.summary.status = code
            if let error {
                entry.summary.error = error
                entry.summary.outcome = .answered(with: error)
                if error.upstreamElapsed > 0 { entry.summary.upstreamNanoseconds = error.upstreamElapsed }
            } else if let role = report.idempotency, role != .original {
                // A retry's answer is the first one's: nothing of its own was done.
                entry.summary.outcome = .replayed
            } else if report.cacheHit {
                entry.summary.outcome = .cacheHit
            }
            guard whole, error == nil else { return nil }
            defer { entry.summary.report.admission = nil }
            return entry.summary.report.admission
        }
        return (held, report.admission?.status ?? nil)
    }

    @inline(never)
    private static func stamp(_ status: RateStatus, on response: inout HTTPResponse) {
        for field in status.headerFields {
            response.headers.replaceOrAdd(name: field.name, value: field.value)
        }
    }

    /// The `Budget-*` fields: of the caller's own budgets, the one with the least share left
    /// when the request was admitted, its worst case taken out.
    @inline(never)
    private static func stamp(_ hold: BudgetHold, on response: inout HTTPResponse) {
        let entries = hold.entries
        var nearest: Int?
        for index in entries.indices where entries[index].scope == .caller {
            // remaining / amount compared without division.
            if let current = nearest,
                Int128(entries[index].remaining) * Int128(entries[current].amount)
                    >= Int128(entries[current].remaining) * Int128(entries[index].amount)
            {
                continue
            }
            nearest = index
        }
        guard let nearest else { return }
        // Only the finisher writes these: added, not searched for.
        response.headers.add(name: "Budget-Limit", value: Self.decimal(entries[nearest].amount))
        response.headers.add(name: "Budget-Remaining", value: Self.decimal(max(0, entries[nearest].remaining)))
        response.headers.add(name: "Budget-Reset", value: Self.decimal(max(0, entries[nearest].resetSeconds)))
        response.headers.add(name: "Budget-Unit", value: entries[nearest].unit == .tokens ? "tokens" : "micros")
    }

    /// A non-negative number in decimal digits, without the generic `description`.
    private static func decimal(_ value: Int64) -> String {
        var count = 1
        var scan = value.magnitude / 10
        while scan > 0 {
            count += 1
            scan /= 10
        }
        return String(unsafeUninitializedCapacity: count) { buffer in
            var rest = value.magnitude
            for index in stride(from: count - 1, through: 0, by: -1) {
                buffer[index] = UInt8(truncatingIfNeeded: rest % 10) + 0x30
                rest /= 10
            }
            return count
        }
    }

    /// A request the HTTP server refused before routing, answered with `error`; `detail` says
    /// what was wrong with it (the parser's finding, or `timeout`), for the log.
    func refusedBeforeRouting(_ context: RequestContext, _ error: GatewayError, detail: String) {
        context.record.state.withLock {
            $0.summary.error = error
            $0.summary.outcome = .rejected
            $0.summary.status = error.status.code
            $0.summary.protocolError = detail
        }
    }

    /// A gateway stream's body: the producer's events, then, once ``streamEnded(_:context:)``
    /// settled how it ended, its last event.
    static func stream(_ produce: StreamProducer, context: RequestContext, _ writer: ResponseBodyWriter)
        async throws
    {
        let report = try await produce(writer)
        await streamEnded(report, context: context)
        if let last = report.lastEvent { try await writer.write(last) }
    }

    /// A gateway stream ended as `report` says, its last event not yet written (by the
    /// pipeline, or for a keyed stream by the task that produces it whether or not its client
    /// stayed). Under strict durability a stream that reaches its end commits its row first;
    /// one whose client left is recorded when the request finishes.
    static func streamEnded(_ report: StreamReport, context: RequestContext) async {
        context.record.state.withLock { entry in
            entry.summary.outcome = report.outcome
            if let error = report.error { entry.summary.error = error }
            if let span = report.upstream { entry.summary.note(span) }
            if let result = report.result { entry.summary.report.result = result }
        }
        if report.outcome != .cancelled { await recordStrictly(context) }
    }

    /// The body of a stream that outlives its client: `produce` runs now, in a task of its own
    /// that the client's hang-up does not cancel, into `detached`'s tee; the client reads the
    /// tee. The stream ends through ``streamEnded(_:context:)`` like any other, its last event
    /// goes to the tee, then `detached` is told; the request finishes only once all that is done.
    func detach(_ produce: @escaping StreamProducer, into detached: DetachedStream, context: RequestContext)
        -> HTTPResponse.Body
    {
        let tee = detached.tee
        // Taken before the producer starts: the client gets every event, the first included.
        let subscription = tee.subscribe(joining: false)
        let work = Task(executorPreference: EventLoop.current) {
            // Nothing the producer writes to the tee can fail.
            let report = try? await produce(tee.writer)
            if let report {
                await Self.streamEnded(report, context: context)
                if let last = report.lastEvent { try? await tee.writer.write(last) }
            }
            tee.finish()
            await detached.ended(report)
        }
        context.record.state.withLock { $0.outlivingWork = work }
        // A client gone early still ends its response only when the answer has: the row
        // written before the end (LEDGER_DURABILITY=strict) and the finisher see it whole.
        return .stream { writer in
            do {
                try await subscription.forward(to: writer)
            } catch {
                await work.value
                throw error
            }
        }
    }

    /// Under strict durability, commits the request's row now (once), before its answer's end.
    @inline(never)
    private static func recordStrictly(_ context: RequestContext) async {
        guard let strict = context.strictLedger, let summary = context.record.takeRow(context) else { return }
        guard let trace = context.trace else {
            await strict.record(context, summary)
            return
        }
        // The answer waits for this commit (LEDGER_DURABILITY=strict): its own span in the trace.
        let start = WallClock.nanoseconds()
        await strict.record(context, summary)
        var span = trace.child("ledger commit", kind: .internal, since: start)
        span.set("textgateway.ledger_durability", "strict")
        trace.record(span)
    }

    func finish(_ context: RequestContext, _ end: ResponseEnd) async {
        // A keyed stream's answer outlives its client: the request ends when the answer does.
        if let work = context.record.state.withLock({ $0.outlivingWork }) { await work.value }
        let (completedAfterClientLeft, held, budget) = context.record.state.withLock {
            entry -> (Bool, Admission?, BudgetReservation?) in
            defer {
                entry.summary.report.admission = nil
                entry.summary.report.budget = nil
            }
            return (
                entry.summary.end(end, ledgered: entry.ledgered), entry.summary.report.admission,
                entry.summary.report.budget
            )
        }
        if completedAfterClientLeft { idempotency?.count(.completedAfterClientLeft) }
        if let held { _ = await giveBack(held, context, warn: true) }
        // Priced once: the budgets' settlement, the log line, the metrics and the row read it.
        if prices != nil { price(context) }
        if let budget { await settle(budget, context) }
        // Out of line, for the same reason as `answered`'s: the request's awaited frames stay narrow.
        let finished = logAndCount(context)
        // After the answer: a full queue makes only this connection's next request wait.
        if let ledger { await record(context, in: ledger) }
        if let finished { await tell(finished) }
    }

    /// The request's ledger row, written. In a frame of its own: the row is wide, and this
    /// frame is the only one that holds it while the writer's queue is full.
    @inline(never)
    private func record(_ context: RequestContext, in ledger: LedgerRecorder) async {
        if let row = context.record.takeRow(context) { await ledger.record(context, row) }
    }

    @inline(never)
    private func tell(_ finished: FinishedRequest) async {
        for observer in observers { await observer.requestFinished(finished) }
    }

    /// The request's metrics and its access-log line; what the observers are told, when there are any.
    @inline(never)
    private func logAndCount(_ context: RequestContext) -> FinishedRequest? {
        metrics.inFlight.decrement()
        let state = context.record.state.withLock { $0.summary }
        let totalNanoseconds = context.start.nanoseconds(until: .now())
        let outcome = state.outcome ?? .done
        let cost =
            state.spent ?? state.cost(prices, startedAt: RequestSummary.startMilliseconds(clock(), totalNanoseconds))
        if metricsEnabled {
            metrics.finished(
                route: context.route, status: state.status, seconds: Double(totalNanoseconds) / 1e9,
                upstreamSeconds: Double(state.upstreamNanoseconds) / 1e9, state: state, outcome: outcome, cost: cost)
        }
        let upstreamMs = Double(state.upstreamNanoseconds) / 1e6
        let gatewayMs = Double(totalNanoseconds - min(totalNanoseconds, state.upstreamNanoseconds)) / 1e6
        logger.log(.info, "request") { line in
            line.field("request_id", state.report.replayOf ?? context.id)
            line.field("trace_id", context.trace?.context.traceID.hex)
            line.field("idempotency", state.report.idempotency?.rawValue)
            line.field("user_id", state.report.caller?.userID)
            line.field("method", context.method.rawValue)
            line.field("path", context.path)
            line.field("status", state.status)
            line.field("code", state.error?.code.rawValue)
            line.field("task", state.report.task)
            line.field("text_length", state.report.textLength)
            line.field("model", state.report.model)
            line.field("upstream", state.report.upstream)
            line.field("attempts", state.report.upstreamAttempts > 1 ? state.report.upstreamAttempts : nil)
            line.field("input_tokens", state.usage?.promptTokens)
            line.field("output_tokens", state.usage?.completionTokens)
            line.field("cost_micros", cost.micros.map { Int($0) })
            line.field("outcome", outcome.label)
            line.field("error", state.protocolError)
            line.field("auth_error", state.error?.authFailure)
            line.field("attest_error", state.error?.attestError)
            line.field("upstream_ms", milliseconds: upstreamMs)
            line.field("gateway_ms", milliseconds: gatewayMs)
            line.field("total_ms", milliseconds: Double(totalNanoseconds) / 1e6)
        }
        if let trace = context.trace, let tracer {
            tracer.end(
                trace, context: context, state: state, outcome: outcome, cost: cost, nanoseconds: totalNanoseconds)
        }
        guard !observers.isEmpty else { return nil }
        return FinishedRequest(
            requestID: context.id, method: context.method.rawValue, path: context.path, status: state.status,
            outcome: outcome.label,
            userID: state.report.caller?.userID, task: state.report.task, model: state.report.model,
            inputTokens: state.usage?.promptTokens,
            outputTokens: state.usage?.completionTokens, durationNanoseconds: totalNanoseconds
        )
    }

    /// Works out the request's cost at the prices in force when it started, once.
    @inline(never)
    private func price(_ context: RequestContext) {
        let startedAt = RequestSummary.startMilliseconds(clock(), context.start.nanoseconds(until: .now()))
        let prices = self.prices
        context.record.state.withLock { $0.summary.spent = $0.summary.cost(prices, startedAt: startedAt) }
    }

    /// Settles the request's budgets with what it used: its tokens, and its cost, or (when it
    /// called upstream and learnt no usage, or its model has no price) the money it reserved,
    /// so that no spending goes uncounted.
    @inline(never)
    private func settle(_ budget: BudgetReservation, _ context: RequestContext) async {
        let now = clock()
        // Read in place, under the lock: no copy of the summary.
        let (tokens, micros) = context.record.state.withLock { entry -> (Int64, Int64) in
            let cost = entry.summary.spent ?? .none
            let called = entry.summary.report.upstreamAttempts > 0 && entry.summary.outcome != .cacheHit
            return (Int64(entry.summary.chargeableTokens), cost.micros ?? (called ? budget.worstMicros : 0))
        }
        if let local = budget.local {
            // This process's sums: a call, not an await.
            local.settle(budget.hold, tokens: tokens, micros: micros, now: now)
            return
        }
        do {
            try await budget.keeper.settle(budget.hold, tokens: tokens, micros: micros, now: now)
        } catch {
            // The reservation expires with its period; what it held stays counted, and said so.
            logger.warning(
                "budget_settle_failed", [("request_id", .string(context.id)), ("micros", .int(Int(micros)))])
        }
    }

    /// Gives `held` back, charging the tokens the request used: the limiter's new status, or
    /// nil when the limiter failed (said in the log when `warn`).
    @inline(never)
    private func giveBack(_ held: Admission, _ context: RequestContext, warn: Bool = false) async -> RateStatus? {
        let tokens = context.record.state.withLock { $0.summary.chargeableTokens }
        do {
            return try await held.limiter.finish(lease: held.lease, plan: held.plan, tokens: tokens, now: clock())
        } catch {
            // The lease expires by itself; the tokens are lost to the quota, and said so.
            if warn {
                logger.warning(
                    "rate_limit_settle_failed", [("request_id", .string(context.id)), ("tokens", .int(tokens))])
            }
            return nil
        }
    }
}

/// One request's head, as the pipeline read it, and the finisher's record of it: what its
/// steps reported, how it ended, the lease it holds and whether its row went to the store.
/// The head is immutable; the rest is opaque outside this file: only the finisher writes how
/// a request ended, gives its lease back and hands its row over, and each of those once.
final class RequestRecord: Sendable {
    struct Head: Sendable {
        let id: String
        let method: HTTPMethod
        let path: String
        let route: RouteLabel
        let errorShape: ErrorShape
        let language: Language
        let start: MonotonicInstant
        let strictLedger: LedgerRecorder?
        /// The request's spans' recorder, when its trace is sampled.
        let trace: TraceRecorder?
    }

    let head: Head

    fileprivate struct Entry {
        /// Its report's admission is the lease, held while the request runs and given back once.
        var summary = RequestSummary()
        /// Whether the request's ledger row was handed to the store (once).
        var ledgered = false
        /// A keyed stream's producer, which runs on after its client has gone.
        var outlivingWork: Task<Void, Never>?
    }

    fileprivate let state = Mutex(Entry())

    init(head: Head) {
        self.head = head
    }

    /// The request's row, once: nil when it was handed over already, or when it is a retry
    /// answered with a kept answer (the key's one row is the first request's).
    fileprivate func takeRow(_ context: RequestContext) -> RequestSummary? {
        guard context.route.isLedgered else { return nil }
        return state.withLock { entry in
            guard !entry.ledgered,
                entry.summary.report.idempotency == nil || entry.summary.report.idempotency == .original
            else {
                return nil
            }
            entry.ledgered = true
            return entry.summary
        }
    }
}

/// What is known of a request when it is logged and recorded: what its steps reported and
/// how it ended. A value: a copy, read by the metrics and the ledger's row.
struct RequestSummary: Sendable {
    /// What the request's steps reported; its admission is the lease the request holds.
    var report = RouteReport()
    var usage: Usage?
    var upstreamNanoseconds: UInt64 = 0
    /// The error the client was answered with (or, in a stream, sent as the last event).
    var error: GatewayError?
    var outcome: RequestOutcome?
    /// The status the response was sent with.
    var status: Int = 0
    /// For a request the HTTP server refused: what was wrong with it (the parser's
    /// finding, or `timeout`), for the log.
    var protocolError: String?
    /// Its cost, worked out once when it ends (the budgets, the log line, the metrics and the row read it).
    var spent: MoneySpent?

    /// What the request's own upstream calls cost at `prices` in force when it started
    /// (`startedAt`, milliseconds since the epoch): 0 for an answer from the cache or a
    /// retry's replay (no call of its own); unknown when no usage was reported; unpriced when
    /// its model has no price then. With no prices at all, nothing.
    func cost(_ prices: PriceList?, startedAt: Int64) -> MoneySpent {
        guard let prices else { return .none }
        if outcome == .cacheHit || outcome == .replayed { return MoneySpent(micros: 0) }
        guard let usage, let model = report.model else { return .none }
        guard let micros = prices.cost(of: TokenCounts(usage), model: model, at: startedAt) else {
            return MoneySpent(micros: nil, unpricedModel: model)
        }
        return MoneySpent(micros: micros)
    }

    /// When a request that has run `elapsedNanoseconds` until `now` started, in milliseconds
    /// since the epoch: the instant its row is dated and its calls priced at.
    static func startMilliseconds(_ now: Instant, _ elapsedNanoseconds: UInt64) -> Int64 {
        Int64(((now.secondsSinceEpoch * 1000) - Double(elapsedNanoseconds) / 1e6).rounded(.down))
    }

    /// Tokens to charge against the daily quota: what the upstream reported, nothing for a
    /// cached answer.
    var chargeableTokens: Int {
        guard outcome != .cacheHit, let usage else { return 0 }
        return max(0, usage.promptTokens ?? 0) &+ max(0, usage.completionTokens ?? 0)
    }

    /// Takes in what the request's steps reported.
    fileprivate mutating func absorb(_ report: RouteReport) {
        self.report = report
        if let span = report.span { note(span) }
    }

    /// Records an upstream call's time and usage.
    fileprivate mutating func note(_ span: UpstreamSpan) {
        upstreamNanoseconds = span.nanoseconds
        if let usage = span.usage { self.usage = usage }
    }

    /// The response ended as `end` says: settles the outcome, and says whether a keyed answer
    /// completed after its client left.
    fileprivate mutating func end(_ end: ResponseEnd, ledgered: Bool) -> Bool {
        // A keyed answer that completed is the key's answer, kept and charged, whether or
        // not its client stayed to read it.
        if end != .completed, report.idempotency == .original, (200..<300).contains(status),
            outcome == nil || outcome == .done
        {
            outcome = .done
            return true
        }
        // A row committed before the answer's end says how the request ended; the log agrees.
        if ledgered {
            if outcome == nil { outcome = status < 400 ? .done : .rejected }
            return false
        }
        switch end {
        case .completed:
            if outcome == nil { outcome = status < 400 ? .done : .rejected }
        case .connectionClosed:
            outcome = .cancelled
            status = 499
            error = .clientClosedRequest
        case .bodyFailed:
            if outcome == nil || outcome == .done { outcome = .failed(.truncated) }
        }
        return false
    }
}

/// What a request cost: micro-units of the currency, or nil when that is not known (no usage
/// reported, or no prices); `unpricedModel` names a model that answered without a price.
struct MoneySpent: Sendable, Equatable {
    var micros: Int64?
    var unpricedModel: String? = nil

    static let none = MoneySpent(micros: nil)
}

extension TokenCounts {
    /// The tokens an upstream reported: its prompt's (the cached ones among them) and its answer's.
    init(_ usage: Usage) {
        self.init(
            input: usage.promptTokens ?? 0, cachedInput: usage.cachedPromptTokens ?? 0,
            output: usage.completionTokens ?? 0)
    }
}
