public import Foundation

/// The caller's token use and limits, from `GET /api/usage`.
public struct UsageReport: Sendable, Hashable, Decodable {
    /// Requests and tokens of one UTC day.
    public struct Day: Sendable, Hashable, Decodable {
        /// The UTC day, `YYYY-MM-DD`.
        public var date: String
        /// Requests answered that day.
        public var requests: Int
        /// Prompt tokens that day.
        public var inputTokens: Int
        /// Answer tokens that day.
        public var outputTokens: Int
        /// All tokens that day.
        public var totalTokens: Int
        /// What they cost, in millionths of ``UsageReport/currency``'s unit (0 without prices);
        /// nil from a gateway that does not say.
        public var costMicros: Int?
    }

    /// One of the caller's own budgets in its current period.
    public struct Budget: Sendable, Hashable, Decodable {
        /// `caller`: the caller's own, from its plan.
        public var scope: String
        /// `day` or `month`.
        public var period: String
        /// `micros` (millionths of ``UsageReport/currency``'s unit) or `tokens`.
        public var unit: String
        /// The budget a period.
        public var limit: Int
        /// What requests that ended used.
        public var used: Int
        /// What requests still running hold.
        public var held: Int
        /// What is left for new requests.
        public var remaining: Int
        /// The share used, 0 to 1.
        public var fractionUsed: Double
        /// When the period ends.
        public var resetsAt: Date
    }

    /// The caller's plan's limits; `nil` where the plan has none.
    public struct Limits: Sendable, Hashable, Decodable {
        /// Requests a minute.
        public var requestsPerMinute: Int?
        /// Requests at once.
        public var concurrentRequests: Int?
        /// Tokens a UTC day.
        public var tokensPerDay: Int?
    }

    /// What is left of today's limits.
    public struct Remaining: Sendable, Hashable, Decodable {
        /// Tokens left today, `nil` when the plan has no daily quota.
        public var tokensToday: Int?
    }

    /// The caller's user id.
    public var userId: String
    /// The caller's plan.
    public var plan: String
    /// The currency costs are in (ISO 4217, or `IRT`); nil without prices.
    public var currency: String?
    /// Today's use (UTC).
    public var today: Day
    /// This UTC month's use, dated its first day; nil from a gateway that does not say.
    public var month: Day?
    /// The last 30 UTC days' use, dated the first; nil from a gateway that does not say.
    public var last30Days: Day?
    /// The caller's own budgets (its plan's); empty without.
    public var budgets: [Budget]?
    /// The plan's limits.
    public var limits: Limits
    /// What is left today.
    public var remaining: Remaining
    /// The last 30 UTC days with any use, newest first, today included.
    public var days: [Day]
}

/// One page of the caller's request history, from `GET /api/history`.
public struct HistoryPage: Sendable, Hashable, Decodable {
    /// The requests, newest first.
    public var items: [HistoryItem]
    /// Pass as `before` to ``TextGatewayClient/history(limit:before:)`` for the next page;
    /// `nil` on the last page.
    public var nextCursor: String?
}

/// One finished request in the caller's history.
public struct HistoryItem: Sendable, Hashable, Decodable, Identifiable {
    /// The request's id.
    public var id: String
    /// Its task (`summarize`, …), `nil` for a route without one.
    public var task: String?
    /// Its tone, if one was asked.
    public var tone: String?
    /// The route it came by (`/api/process`, `/v1/chat/completions`, `/api/jobs`).
    public var route: String
    /// The model that answered.
    public var model: String?
    /// The input's length in characters.
    public var inputLength: Int?
    /// The HTTP status it was answered with.
    public var status: Int
    /// The error code, when it failed.
    public var code: String?
    /// Whether the gateway's cache answered it.
    public var cacheHit: Bool
    /// The tokens it cost.
    public var usage: Usage?
    /// What it cost, in millionths of the currency's unit: 0 for an answer from the cache or a
    /// kept answer; nil when not known.
    public var costMicros: Int?
    /// When it was made.
    public var createdAt: Date
    /// How long it took, in milliseconds.
    public var durationMs: Double?
    /// The answer's text, only when the gateway keeps results.
    public var result: String?
}
