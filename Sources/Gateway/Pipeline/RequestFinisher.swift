import Access
import ChatAPI
import EventLoop
import HTTPServer
import Telemetry

/// What a finished request leaves behind, handed to each ``RequestObserver``.
public struct FinishedRequest: Sendable {
    public let requestID: String
    public let method: String
    public let path: String
    /// The status the client got (`499` when it went away first).
    public let status: Int
    /// The access log's `outcome`: `done`, `cache_hit`, `cancelled`, `rate_limited`, …
    public let outcome: String
    public let userID: String?
    public let task: String?
    public let model: String?
    public let inputTokens: Int?
    public let outputTokens: Int?
    public let durationNanoseconds: UInt64
}

/// Told of every request once it has ended (the store's ledger, tests that count).
public protocol RequestObserver: Sendable {
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

    /// A request starts being answered.
    func started(_ context: RequestContext) {
        metrics.inFlight.increment()
    }

    /// The route answered with `response` and `report`, or failed with `error` (rendered as
    /// `response`); called before the response goes out. A whole answer gives its lease back
    /// now, so that its `RateLimit-Remaining` counts the request's own tokens; then the
    /// `RateLimit-*` fields go on the response, and under strict durability a whole body's
    /// row is committed.
    func answered(
        _ context: RequestContext, _ response: inout HTTPResponse, report: AnswerReport = AnswerReport(),
        error: GatewayError? = nil
    ) async {
        let code = response.status.code
        let whole: Bool
        if case .bytes = response.body { whole = true } else { whole = false }
        // One lock on the common path: the status, the outcome, and the lease a whole answer gives back.
        let (held, current) = context.update { state -> (RequestContext.HeldLease?, RateStatus?) in
            state.status = code
            if let error {
                state.error = error
                state.outcome = .answered(with: error)
                if error.upstreamElapsed > 0 { state.upstreamNanoseconds = error.upstreamElapsed }
            } else if let role = state.idempotency, role != .original {
                // A retry's answer is the first one's: nothing of its own was done.
                state.outcome = .replayed
            } else if report.cacheHit {
                state.outcome = .cacheHit
            }
            if let span = report.upstream { state.note(span) }
            guard whole, error == nil else { return (nil, state.rateStatus) }
            defer { state.lease = nil }
            return (state.lease, state.rateStatus)
        }
        var rateStatus = current
        if let held, let status = await giveBack(held, context) { rateStatus = status }
        for field in rateStatus?.headerFields ?? [] {
            response.headers.replaceOrAdd(name: field.name, value: field.value)
        }
        if whole { await context.strictLedger?.record(context) }
    }

    /// A request the HTTP server refused before routing, answered with `error`; `detail` says
    /// what was wrong with it (the parser's finding, or `timeout`), for the log.
    func refusedBeforeRouting(_ context: RequestContext, _ error: GatewayError, detail: String) {
        context.update {
            $0.error = error
            $0.outcome = .rejected
            $0.status = error.status.code
            $0.protocolError = detail
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
        context.update { state in
            state.outcome = report.outcome
            if let error = report.error { state.error = error }
            if let span = report.upstream { state.note(span) }
        }
        if report.outcome != .cancelled { await context.strictLedger?.record(context) }
    }

    func finish(_ context: RequestContext, _ end: ResponseEnd) async {
        // A keyed stream's answer outlives its client: the request ends when the answer does.
        if let work = context.update({ $0.outlivingWork }) { await work.value }
        let completedAfterClientLeft = context.update { state -> Bool in
            // A keyed answer that completed is the key's answer, kept and charged, whether or
            // not its client stayed to read it.
            if end != .completed, state.idempotency == .original, (200..<300).contains(state.status),
                state.outcome == nil || state.outcome == .done
            {
                state.outcome = .done
                return true
            }
            // A row committed before the answer's end says how the request ended; the log agrees.
            if state.ledgered {
                if state.outcome == nil { state.outcome = state.status < 400 ? .done : .rejected }
                return false
            }
            switch end {
            case .completed:
                if state.outcome == nil { state.outcome = state.status < 400 ? .done : .rejected }
            case .connectionClosed:
                state.outcome = .cancelled
                state.status = 499
                state.error = .clientClosedRequest
            case .bodyFailed:
                if state.outcome == nil || state.outcome == .done { state.outcome = .failed(.truncated) }
            }
            return false
        }
        if completedAfterClientLeft { idempotency?.count(.completedAfterClientLeft) }
        if let lease = context.takeLease() { _ = await giveBack(lease, context, warn: true) }
        metrics.inFlight.decrement()
        let state = context.snapshot
        let totalNanoseconds = context.start.nanoseconds(until: .now())
        let outcome = state.outcome ?? .done
        if metricsEnabled {
            metrics.finished(
                route: context.route, status: state.status, seconds: Double(totalNanoseconds) / 1e9,
                upstreamSeconds: Double(state.upstreamNanoseconds) / 1e9, state: state, outcome: outcome)
        }
        let upstreamMs = Double(state.upstreamNanoseconds) / 1e6
        let gatewayMs = Double(totalNanoseconds - min(totalNanoseconds, state.upstreamNanoseconds)) / 1e6
        logger.log(
            .info, "request",
            [
                ("request_id", .string(state.replayOf ?? context.id)),
                ("idempotency", state.idempotency.map { .string($0.rawValue) }),
                ("user_id", state.caller.map { .string($0.userID) }),
                ("method", .string(context.method.rawValue)),
                ("path", .string(context.path)),
                ("status", .int(state.status)),
                ("code", state.error.map { .string($0.code.rawValue) }),
                ("task", state.task.map { .string($0) }),
                ("text_length", state.textLength.map { .int($0) }),
                ("model", state.model.map { .string($0) }),
                ("upstream", state.upstream.map { .string($0) }),
                ("attempts", state.upstreamAttempts > 1 ? .int(state.upstreamAttempts) : nil),
                ("input_tokens", state.usage?.promptTokens.map { .int($0) }),
                ("output_tokens", state.usage?.completionTokens.map { .int($0) }),
                ("outcome", .string(outcome.label)),
                ("error", state.protocolError.map { .string($0) }),
                ("auth_error", state.authFailure.map { .string($0) }),
                ("attest_error", state.attestFailure.map { .string($0) }),
                ("upstream_ms", .milliseconds(upstreamMs)),
                ("gateway_ms", .milliseconds(gatewayMs)),
                ("total_ms", .milliseconds(Double(totalNanoseconds) / 1e6)),
            ])
        // After the answer: a full queue makes only this connection's next request wait.
        if let ledger { await ledger.record(context) }
        guard !observers.isEmpty else { return }
        let finished = FinishedRequest(
            requestID: context.id, method: context.method.rawValue, path: context.path, status: state.status,
            outcome: outcome.label,
            userID: state.caller?.userID, task: state.task, model: state.model, inputTokens: state.usage?.promptTokens,
            outputTokens: state.usage?.completionTokens, durationNanoseconds: totalNanoseconds
        )
        for observer in observers { await observer.requestFinished(finished) }
    }

    /// Gives `held` back, charging the tokens the request used: the limiter's new status, or
    /// nil when the limiter failed (said in the log when `warn`).
    private func giveBack(_ held: RequestContext.HeldLease, _ context: RequestContext, warn: Bool = false) async
        -> RateStatus?
    {
        let tokens = context.chargeableTokens
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

extension RequestContext {
    /// The lease, once: nil when it was never taken or was already given back.
    fileprivate func takeLease() -> HeldLease? {
        update { state in
            defer { state.lease = nil }
            return state.lease
        }
    }
}

extension RequestContext.State {
    /// Records an upstream call's time and usage.
    fileprivate mutating func note(_ span: UpstreamSpan) {
        upstreamNanoseconds = span.nanoseconds
        if let usage = span.usage { self.usage = usage }
    }
}
