/// One finished request as the store keeps it (docs/api.md, "Usage and history"): what was asked,
/// of which model, what it cost and how it ended — never the input text. The result text only
/// when the operator keeps results (`HISTORY_STORE_RESULTS=on`).
package struct LedgerRow: Sendable, Equatable {
    /// The request id (`X-Request-Id`). A client may send its own, so it is not unique: the
    /// store gives every row its own sequence number as well.
    package var requestID: String
    /// The identified caller, nil for a guest (a guest's rows show in no history, and count
    /// in the usage report only as all guests' use, ``DailyUsage/guestUserID``).
    package var userID: String?
    /// The id of the store token that authenticated the request (its last use is updated).
    package var tokenID: String?
    package var task: String?
    package var tone: String?
    /// The route path, e.g. `/api/process`.
    package var route: String
    package var model: String?
    /// The input's length in characters (after trimming), never the text.
    package var inputLength: Int?
    package var inputTokens: Int?
    package var outputTokens: Int?
    /// The status the client got (`499` when it went away first).
    package var status: Int
    /// The error code the client got, nil for a success.
    package var code: String?
    /// The outcome label: `done`, `cache_hit`, `cancelled`, `rate_limited`, …
    package var outcome: String
    package var cacheHit: Bool
    package var durationMilliseconds: Double
    /// When the request started, in milliseconds since the Unix epoch (UTC).
    package var createdAtMilliseconds: Int64
    /// The answer's text, only when results are kept.
    package var result: String?
    /// Whether the row's tokens are added to the caller's day. A job's row is not: its items
    /// added theirs as each was answered (``JobStore/completeItem(_:)``).
    package var chargesTokens: Bool
    /// The caller's plan, for the operator's roll-ups (the latest one a caller was seen with).
    package var plan: String?
    /// The upstream that answered (its configured name), nil when no upstream was called.
    package var upstream: String?
    /// How long the upstream call took, nil when there was none: the rest of the duration is
    /// what the gateway added.
    package var upstreamMilliseconds: Double?
    /// What the request's upstream calls cost at the prices of its start, in millionths of
    /// the currency's unit (`PRICES`): 0 for an answer from the cache; nil when unknown (no
    /// prices, no usage reported, or a model without a price).
    package var costMicros: Int64?

    package init(
        requestID: String, userID: String?, tokenID: String? = nil, task: String?, tone: String?, route: String,
        model: String?,
        inputLength: Int?, inputTokens: Int?, outputTokens: Int?, status: Int, code: String?, outcome: String,
        cacheHit: Bool,
        durationMilliseconds: Double, createdAtMilliseconds: Int64, result: String? = nil, chargesTokens: Bool = true,
        plan: String? = nil, upstream: String? = nil, upstreamMilliseconds: Double? = nil, costMicros: Int64? = nil
    ) {
        self.requestID = requestID
        self.userID = userID
        self.tokenID = tokenID
        self.task = task
        self.tone = tone
        self.route = route
        self.model = model
        self.inputLength = inputLength
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
        self.status = status
        self.code = code
        self.outcome = outcome
        self.cacheHit = cacheHit
        self.durationMilliseconds = durationMilliseconds
        self.createdAtMilliseconds = createdAtMilliseconds
        self.result = result
        self.chargesTokens = chargesTokens
        self.plan = plan
        self.upstream = upstream
        self.upstreamMilliseconds = upstreamMilliseconds
        self.costMicros = costMicros
    }
}
