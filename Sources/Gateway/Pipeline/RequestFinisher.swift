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

/// The one finished hook: called by the HTTP server exactly once for every request, however
/// it ended. It settles the outcome, gives the rate-limit lease back (charging the tokens
/// used), records the metrics, writes the one access-log line, hands the ledger its row and
/// tells the observers. The middleware and the routes note the outcome as they learn it
/// (``RequestContext/State/outcome``); this hook has the last word on it.
struct RequestFinisher: Sendable {
    let metrics: GatewayMetrics
    let metricsEnabled: Bool
    let logger: Logger
    let limiter: (any RateLimiter)?
    let clock: @Sendable () -> Instant
    let observers: [any RequestObserver]
    /// The store's ledger; nil when the gateway is stateless.
    let ledger: LedgerRecorder?
    var idempotency: IdempotencyMetrics? = nil

    /// A request starts being answered.
    func started(_ context: RequestContext) {
        metrics.inFlight.increment()
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
        if let limiter, let held = context.takeLease() {
            do {
                _ = try await limiter.finish(
                    lease: held.lease, plan: held.plan, tokens: context.chargeableTokens, now: clock())
            } catch {
                // The lease expires by itself; the tokens are lost to the quota, and said so.
                logger.warning(
                    "rate_limit_settle_failed",
                    [("request_id", .string(context.id)), ("tokens", .int(context.chargeableTokens))])
            }
        }
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
                ("attest_error", state.attestFailure.map { .string($0.rawValue) }),
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
}
