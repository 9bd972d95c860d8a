import Access
import ChatAPI
import EventLoop
import HTTP1
import Synchronization
import Upstream

/// Everything the gateway knows about one request while it runs, from the moment it is
/// read to the finished hook: made by the pipeline, filled in by the middleware and the
/// route with what they learn (the caller, the task, the upstream tried), read once at the
/// end. How the request ended (its status, outcome and timings) only the finisher writes,
/// from what the route reported.
///
/// A class, because a stream that ends after the handler returned settles the same record
/// the finished hook reads; its mutable part is behind a mutex that only one task at a time
/// ever takes in practice.
final class RequestContext: Sendable {
    /// The request id: a well-formed inbound `X-Request-Id`, else a new one.
    let id: String
    let method: HTTPMethod
    let path: String
    /// The route label for metrics (a fixed set).
    let route: RouteLabel
    /// The error shape of the route group the path belongs to.
    let errorShape: ErrorShape
    /// The language of error messages.
    let language: Language
    let start: MonotonicInstant
    /// The ledger, when the answer must wait for its row's commit (`LEDGER_DURABILITY=strict`)
    /// and the route keeps rows: the finisher commits through it.
    let strictLedger: LedgerRecorder?

    /// A rate-limit lease, with the plan it was taken under and the limiter it goes back to.
    struct HeldLease: Sendable {
        let lease: RateLease
        let plan: Plan
        let limiter: any RateLimiter
    }

    struct State: Sendable {
        var caller: Caller?
        /// Held while the request runs; the finisher gives it back, once.
        var lease: HeldLease?
        /// The limiter's status when it admitted or refused the request: what the `RateLimit-*`
        /// fields say, unless a whole answer's lease given back brings a newer one.
        var rateStatus: RateStatus?
        var task: String?
        var tone: String?
        var textLength: Int?
        var model: String?
        /// The upstream that answered, or the last one tried (`X-Upstream`).
        var upstream: String?
        /// Calls made upstream, retries and fallbacks included.
        var upstreamAttempts = 0
        // How the request ended: the finisher's to write, from the route's report or error.
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
        /// Why a presented JWT was refused (``JWTFailure/reason``), for the log.
        var authFailure: String?
        /// Why an App Attest attestation or assertion was refused, for the log (`attest_error`).
        var attestFailure: String?
        /// The answer's text, kept only for a history that stores results.
        var result: String?
        /// Whether the request's ledger row was handed to the store (once).
        var ledgered = false
        /// What the request was to its `Idempotency-Key`, when it had one.
        var idempotency: IdempotencyRole?
        /// A retry's answer is the first request's: its id is the one the client is told
        /// (`X-Request-Id`) and the log line carries.
        var replayOf: String?
        /// Where a keyed stream is written, so that a joining retry can read it too.
        var streamTee: StreamTee?
        /// A keyed stream's producer, which runs on after its client has gone: the finished
        /// hook waits for it, so the tokens it used are charged and its row is whole.
        var outlivingWork: Task<Void, Never>?
    }

    private let state = Mutex(State())

    init(
        id: String, method: HTTPMethod, path: String, route: RouteLabel, errorShape: ErrorShape, language: Language,
        start: MonotonicInstant = .now(), strictLedger: LedgerRecorder? = nil
    ) {
        self.strictLedger = strictLedger
        self.id = id
        self.method = method
        self.path = path
        self.route = route
        self.errorShape = errorShape
        self.language = language
        self.start = start
    }

    /// A copy of what is known now.
    var snapshot: State { state.withLock { $0 } }

    @discardableResult
    func update<T>(_ body: (inout State) -> T) -> T {
        state.withLock { body(&$0) }
    }

    var caller: Caller? { state.withLock { $0.caller } }
    var upstream: String? { state.withLock { $0.upstream } }

    /// An upstream attempt is starting: it goes to `target`.
    func noteAttempt(_ target: UpstreamPool.Target) {
        state.withLock {
            $0.upstream = target.upstream
            $0.model = target.model
            $0.upstreamAttempts += 1
        }
    }

    /// Tokens to charge against the daily quota: what the upstream reported, nothing for a
    /// cached answer.
    var chargeableTokens: Int {
        state.withLock { state in
            guard state.outcome != .cacheHit, let usage = state.usage else { return 0 }
            return max(0, usage.promptTokens ?? 0) &+ max(0, usage.completionTokens ?? 0)
        }
    }
}

/// The route of a request, as metrics label it.
enum RouteLabel: String, Sendable, CaseIterable {
    case health = "/api/health"
    case process = "/api/process"
    case chatCompletions = "/v1/chat/completions"
    case models = "/v1/models"
    case metrics = "/metrics"
    case usage = "/api/usage"
    case history = "/api/history"
    case jobs = "/api/jobs"
    /// `/api/attest/challenge`, `/register` and `/session`.
    case attest = "/api/attest"
    /// The operator's console: `/admin…` and `/api/admin/…`.
    case admin = "/api/admin"
    case other

    /// The route of `path`, compared byte for byte (no string switch, no hashing).
    init(path: String) {
        for route in Self.known where path.hasSameUTF8(as: route.rawValue) {
            self = route
            return
        }
        self =
            path.hasUTF8Prefix(Self.historyItemPrefix)
            ? .history
            : path.hasUTF8Prefix(Self.jobItemPrefix)
                ? .jobs
                : path.hasUTF8Prefix(Self.attestPrefix)
                    ? .attest
                    : path.hasUTF8Prefix(Self.adminPrefix) || path.hasUTF8Prefix(Self.consolePrefix) ? .admin : .other
    }

    private static let known: [RouteLabel] = [
        .process, .chatCompletions, .health, .models, .metrics, .usage, .history, .jobs,
    ]
    private static let historyItemPrefix = RouteLabel.history.rawValue + "/"
    private static let jobItemPrefix = RouteLabel.jobs.rawValue + "/"
    private static let attestPrefix = RouteLabel.attest.rawValue + "/"
    private static let adminPrefix = RouteLabel.admin.rawValue + "/"
    private static let consolePrefix = "/admin"

    /// Whether the store keeps a row for each request of this route.
    var isLedgered: Bool { self == .process || self == .chatCompletions }

    /// Its position among ``allCases``.
    var index: Int {
        switch self {
        case .health: 0
        case .process: 1
        case .chatCompletions: 2
        case .models: 3
        case .metrics: 4
        case .usage: 5
        case .history: 6
        case .jobs: 7
        case .attest: 8
        case .admin: 9
        case .other: 10
        }
    }
}
