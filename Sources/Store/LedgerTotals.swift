/// What a batch of ledger rows adds to the usage and token tables, added up before it is
/// written: one upsert per caller and day instead of one per row, one update per token.
enum LedgerTotals {
    struct UsageKey: Hashable {
        var userID: String
        var day: Int64
    }

    struct UsageTotal {
        var requests = 0
        var inputTokens = 0
        var outputTokens = 0
        /// What the operator's console adds (``AdminStore/rollupCallers(fromDay:toDay:)``).
        var cacheHits = 0
        var errors = 0
        var lastSeen = Int64.min
        /// The plan of the latest row that had one, and that row's time.
        var plan: String?
        var planAt = Int64.min
    }

    /// The rows' use per caller and UTC day, all guests as one (``DailyUsage/guestUserID``).
    /// A cached answer costs no tokens, nor does a job's row (its items were charged as they
    /// were answered).
    static func usage(of rows: some Sequence<LedgerRow>) -> [UsageKey: UsageTotal] {
        var totals: [UsageKey: UsageTotal] = [:]
        for row in rows {
            let key = UsageKey(
                userID: row.userID ?? DailyUsage.guestUserID, day: utcDay(ofMilliseconds: row.createdAtMilliseconds))
            var total = totals[key, default: UsageTotal()]
            total.requests += 1
            if row.cacheHit { total.cacheHits += 1 }
            if row.status >= 400 { total.errors += 1 }
            total.lastSeen = max(total.lastSeen, row.createdAtMilliseconds)
            if let plan = row.plan, row.createdAtMilliseconds >= total.planAt {
                total.plan = plan
                total.planAt = row.createdAtMilliseconds
            }
            if !row.cacheHit, row.chargesTokens {
                total.inputTokens &+= max(0, row.inputTokens ?? 0)
                total.outputTokens &+= max(0, row.outputTokens ?? 0)
            }
            totals[key] = total
        }
        return totals
    }

    /// Each store token's latest use among the rows.
    static func lastUses(in rows: some Sequence<LedgerRow>) -> [String: Int64] {
        var latest: [String: Int64] = [:]
        for row in rows {
            guard let tokenID = row.tokenID else { continue }
            latest[tokenID] = max(latest[tokenID] ?? .min, row.createdAtMilliseconds)
        }
        return latest
    }

    /// The UTC day (days since the Unix epoch) of an instant in milliseconds, rounded down.
    static func utcDay(ofMilliseconds milliseconds: Int64) -> Int64 {
        let (day, rest) = milliseconds.quotientAndRemainder(dividingBy: 86_400_000)
        return rest < 0 ? day - 1 : day
    }
}
