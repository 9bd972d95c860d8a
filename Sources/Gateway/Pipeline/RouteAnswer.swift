import Access
import ChatAPI
import EventLoop
import HTTP1
import HTTPServer
import Synchronization
import Upstream

/// An upstream call as a route reports it: how long it took, and the tokens it used.
struct UpstreamSpan: Sendable {
    var nanoseconds: UInt64
    var usage: Usage?

    /// The span of a call that started at `start` and ended now.
    init(since start: MonotonicInstant, usage: Usage? = nil) {
        nanoseconds = start.nanoseconds(until: .now())
        self.usage = usage
    }
}

/// What a request's steps learned, reported back with its answer (or its failure) for the
/// finisher: the route's task, model, upstream attempts and call, the caller authentication
/// found, the lease the limits took, what idempotency made of it. Written by the step that
/// learned it, read once by the finisher; it never says how the request ended.
struct RouteReport: Sendable {
    /// The caller authentication identified (nil for a guest).
    var caller: Caller?
    /// The rate-limit lease the request holds and the limiter's status when it took it.
    var admission: Admission?
    /// What the request reserved of its budgets, settled by the finisher when it ends.
    var budget: BudgetReservation?
    var task: String?
    var tone: String?
    var textLength: Int?
    var model: String?
    /// The upstream that answered, or the last one tried (`X-Upstream`).
    var upstream: String?
    /// Calls made upstream, retries and fallbacks included.
    var upstreamAttempts = 0
    /// Answered from the response cache, without an upstream call of its own.
    var cacheHit = false
    /// The upstream call the answer came from, when there was one.
    var span: UpstreamSpan?
    /// The answer's text, kept only for a history that stores results.
    var result: String?
    /// What the request was to its `Idempotency-Key`, when it had one.
    var idempotency: IdempotencyRole?
    /// A retry's answer is the first request's: its id is the one the client is told
    /// (`X-Request-Id`) and the log line carries.
    var replayOf: String?

    /// The upstream call made `attempts`: the last one names the upstream and model.
    mutating func note(_ attempts: UpstreamAttempts) {
        guard let last = attempts.last else { return }
        upstream = last.upstream
        model = last.model
        upstreamAttempts += attempts.count
    }

    /// A retry answered with the answer of the request `requestID`, which `upstream` gave.
    mutating func note(replayOf requestID: String, role: IdempotencyRole, upstream: String?) {
        idempotency = role
        replayOf = requestID
        self.upstream = upstream
    }
}

/// A rate-limit lease, with the plan it was taken under and the limiter it goes back to, and
/// the limiter's status when it admitted the request (what the `RateLimit-*` fields say,
/// unless a whole answer's lease given back brings a newer one). The finisher gives it back, once.
struct Admission: Sendable {
    let lease: RateLease
    let plan: Plan
    let limiter: any RateLimiter
    let status: RateStatus?
}

/// A request's hold on its budgets and the keeper to settle it with: a class, so that the
/// route's report, copied from step to step, carries one reference.
final class BudgetReservation: Sendable {
    let hold: BudgetHold
    let keeper: any BudgetKeeper
    /// The money reserved (its worst case): what a request that called upstream but learnt
    /// no usage is charged, so no spending goes uncounted.
    let worstMicros: Int64
    /// ``keeper`` when it is this process's (settled without an await), found once where the
    /// keeper was made, not cast again for each request.
    let local: InMemoryBudgetKeeper?

    init(hold: BudgetHold, keeper: any BudgetKeeper, local: InMemoryBudgetKeeper?, worstMicros: Int64) {
        self.hold = hold
        self.keeper = keeper
        self.local = local
        self.worstMicros = worstMicros
    }
}

/// Upstream attempts made in a computation that may outlive the route's own frame (a cached
/// answer's, which other requests may join): kept here for the route to note once it returns.
final class SharedAttempts: Sendable {
    private let state = Mutex(UpstreamAttempts())

    func keep(_ attempts: UpstreamAttempts) {
        state.withLock { $0.append(attempts) }
    }

    var attempts: UpstreamAttempts { state.withLock { $0 } }
}

/// How a gateway stream ended, as its producer returns it: the finisher settles the request
/// from it, then the pipeline writes ``lastEvent``.
struct StreamReport: Sendable {
    /// `done`, `cancelled`, `failed`, `streamTimeout` or `shutdown`.
    var outcome: RequestOutcome
    /// The error the last event carries.
    var error: GatewayError?
    var upstream: UpstreamSpan?
    /// The stream's last event (`done` or `error`), not yet written: the finisher may have to
    /// commit the request's row first.
    var lastEvent: [UInt8]?
    /// The answer's text, for a history that stores results.
    var result: String?

    /// A stream the client left before its end.
    static func cancelled(upstream: UpstreamSpan?) -> StreamReport {
        StreamReport(outcome: .cancelled, upstream: upstream)
    }
}

/// A gateway stream's body: writes its events but the last, and reports how it ended. It
/// throws only when the client went away with nothing more to report.
typealias StreamProducer = @Sendable (ResponseBodyWriter) async throws -> StreamReport

/// A stream the pipeline produces apart from its connection, so that its answer is whole
/// however early its client leaves (an answer kept for an `Idempotency-Key`): written into
/// `tee`, which its client and any joining retry read; `ended` is told how it ended (nil when
/// its producer gave up without a report) once its last event is in the tee.
struct DetachedStream: Sendable {
    let tee: StreamTee
    let ended: @Sendable (StreamReport?) async -> Void
}

/// What a route answers with: its response, or for a gateway stream its head and the
/// producer of its body (the pipeline makes the body, so that the finisher learns how the
/// stream ended), or the error it failed with. A failure is a value here, so that the steps
/// outside the one that failed still answer; what each learned is in the chain's report.
struct RouteAnswer: Sendable {
    var response: HTTPResponse
    /// Set for a gateway stream; `response`'s body is then the pipeline's to make.
    var stream: StreamProducer?
    /// What the request failed with, when it did: rendered by the pipeline.
    var failure: (any Error)?
    /// Set when the stream must outlive its client: the pipeline runs its producer apart
    /// from the connection (``RequestFinisher/detach(_:into:context:)``).
    var detached: DetachedStream?

    init(_ response: HTTPResponse) {
        self.response = response
        stream = nil
    }

    init(streaming headers: HTTPHeaders, _ producer: @escaping StreamProducer) {
        response = HTTPResponse(headers: headers)
        stream = producer
    }

    init(failure: any Error) {
        response = HTTPResponse()
        self.failure = failure
    }
}
