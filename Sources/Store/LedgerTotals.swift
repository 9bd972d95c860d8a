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
    }

    /// The rows' use per caller and UTC day, all guests as one (``DailyUsage/guestUserID``).
    /// A cached answer costs no tokens, nor does a job's row (its items were charged as they
    /// were answered).
    static func usage(of rows: some Sequence<LedgerRow>) -> [UsageKey: UsageTotal] {
        var totals: [UsageKey: UsageTotal] = [:]
        for row in rows {
            let key = UsageKey(
                userID: row.userID ?? DailyUsage.guestUserID, day: utcDay(ofMilliseconds: row.createdAtMilliseconds))
            totals[key, default: UsageTotal()].requests += 1
            guard !row.cacheHit, row.chargesTokens else { continue }
            totals[key, default: UsageTotal()].inputTokens &+= max(0, row.inputTokens ?? 0)
            totals[key, default: UsageTotal()].outputTokens &+= max(0, row.outputTokens ?? 0)
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
