/// Token usage per user and UTC day, as the ledger adds it up.
package protocol UsageStore: Sendable {
    /// The days of `userID` from `fromDay` on (days since the Unix epoch, UTC) with any
    /// use, newest first.
    func dailyUsage(userID: String, fromDay: Int64) async throws(StoreError) -> [DailyUsage]
    /// Tokens charged on `day` per identified user, guests left out (to start the daily
    /// quotas where a restart left them: a guest's quota is its address's, kept nowhere).
    func tokensCharged(onDay day: Int64) async throws(StoreError) -> [String: Int]
    /// Every user's days from `fromDay` on (all users when `userID` is nil), ordered by day,
    /// then user (`text-gateway usage`); all guests together are one user of the report,
    /// ``DailyUsage/guestUserID``, first on each day.
    func usageReport(fromDay: Int64, userID: String?) async throws(StoreError) -> [DailyUsage]
    /// What each user (nil: all guests together) spent in the requests that started at or
    /// after `milliseconds` since the epoch: their tokens and their cost, answers from the cache
    /// and jobs' rows left out (to start the budgets where a restart left them).
    func spending(since milliseconds: Int64) async throws(StoreError) -> [Spending]
}

/// What one user (nil: all guests together) spent since an instant.
package struct Spending: Sendable, Equatable {
    package var userID: String?
    package var tokens: Int64
    /// Micro-units of the currency (rows without a cost count none).
    package var micros: Int64

    package init(userID: String?, tokens: Int64, micros: Int64) {
        self.userID = userID
        self.tokens = tokens
        self.micros = micros
    }

    /// A job's row: its items' spending is not a request's.
    static let jobsRoute = "/api/jobs"
}

/// What one user used on one UTC day.
package struct DailyUsage: Sendable, Equatable {
    package var userID: String
    /// Days since the Unix epoch (UTC).
    package var day: Int64
    package var requests: Int
    package var inputTokens: Int
    package var outputTokens: Int
    /// What the tokens cost at `PRICES`, in millionths of the currency's unit (0 without prices;
    /// a request whose model had no price adds nothing).
    package var costMicros: Int64

    package init(userID: String, day: Int64, requests: Int, inputTokens: Int, outputTokens: Int, costMicros: Int64 = 0)
    {
        self.userID = userID
        self.day = day
        self.requests = requests
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
        self.costMicros = costMicros
    }

    package var totalTokens: Int { inputTokens &+ outputTokens }

    /// The user id that every guest's use (requests without a user id, from any address) is
    /// added up under: the empty string, which no caller's id can be.
    package static let guestUserID = ""

    /// Whether this is all guests' use of the day.
    package var isGuests: Bool { userID == Self.guestUserID }
}
