import Access
import ChatAPI
import EventLoop
import HTTP1
import Tracing
import Upstream

/// What a request is to the code that answers it: its head, as the pipeline read it (id,
/// route, language, error shape, start), and, once authentication has run, its caller.
/// A value: each step hands the next a context of its own (authentication a narrowed one,
/// with the caller; idempotency one whose streams are teed), in the shape of Hummingbird's
/// request context and child contexts.
///
/// Nothing here is written after it is made. What a step learns goes back in its answer's
/// ``RouteReport``, and how the request ended is the finisher's alone: the one mutable record
/// of a request (``RequestRecord``) is opaque outside `RequestFinisher.swift`.
struct RequestContext: Sendable {
    /// The head and the finisher's record, in one object made once per request: the context
    /// is copied into every step's frame, so it stays a few words wide.
    let record: RequestRecord
    /// What the steps before narrowed the context to; nil (nothing allocated) for a guest's
    /// request without an `Idempotency-Key`.
    private var narrowing: Narrowing?

    private final class Narrowing: Sendable {
        let caller: Caller?
        let streamTee: StreamTee?

        init(caller: Caller?, streamTee: StreamTee?) {
            self.caller = caller
            self.streamTee = streamTee
        }
    }

    /// Who is asking, once authentication has run (nil for a guest, or before it).
    var caller: Caller? { narrowing?.caller }
    /// Where a keyed stream is written, so that a joining retry can read it too: set by
    /// idempotency for the route it leads.
    var streamTee: StreamTee? { narrowing?.streamTee }

    init(
        id: String, method: HTTPMethod, path: String, route: RouteLabel, errorShape: ErrorShape, language: Language,
        start: MonotonicInstant = .now(), strictLedger: LedgerRecorder? = nil, trace: TraceRecorder? = nil
    ) {
        record = RequestRecord(
            head: RequestRecord.Head(
                id: id, method: method, path: path, route: route, errorShape: errorShape, language: language,
                start: start, strictLedger: strictLedger, trace: trace))
    }

    /// The request id: a well-formed inbound `X-Request-Id`, else a new one.
    var id: String { record.head.id }
    var method: HTTPMethod { record.head.method }
    var path: String { record.head.path }
    /// The route label for metrics (a fixed set).
    var route: RouteLabel { record.head.route }
    /// The error shape of the route group the path belongs to.
    var errorShape: ErrorShape { record.head.errorShape }
    /// The language of error messages.
    var language: Language { record.head.language }
    var start: MonotonicInstant { record.head.start }
    /// The ledger, when the answer must wait for its row's commit (`LEDGER_DURABILITY=strict`)
    /// and the route keeps rows: the finisher commits through it.
    var strictLedger: LedgerRecorder? { record.head.strictLedger }
    /// The recorder of the request's spans, when its trace is sampled.
    var trace: TraceRecorder? { record.head.trace }

    /// This context for the steps after authentication: `caller` is who asks.
    func identified(as caller: Caller) -> RequestContext {
        var narrowed = self
        narrowed.narrowing = Narrowing(caller: caller, streamTee: streamTee)
        return narrowed
    }

    /// This context for a route whose stream `tee` keeps.
    func teeing(into tee: StreamTee) -> RequestContext {
        var narrowed = self
        narrowed.narrowing = Narrowing(caller: caller, streamTee: tee)
        return narrowed
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
