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
}

/// What one user used on one UTC day.
package struct DailyUsage: Sendable, Equatable {
    package var userID: String
    /// Days since the Unix epoch (UTC).
    package var day: Int64
    package var requests: Int
    package var inputTokens: Int
    package var outputTokens: Int

    package init(userID: String, day: Int64, requests: Int, inputTokens: Int, outputTokens: Int) {
        self.userID = userID
        self.day = day
        self.requests = requests
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
    }

    package var totalTokens: Int { inputTokens &+ outputTokens }

    /// The user id that every guest's use (requests without a user id, from any address) is
    /// added up under: the empty string, which no caller's id can be.
    package static let guestUserID = ""

    /// Whether this is all guests' use of the day.
    package var isGuests: Bool { userID == Self.guestUserID }
}
