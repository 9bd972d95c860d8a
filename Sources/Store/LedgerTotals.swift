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
        var costMicros: Int64 = 0
        /// What the operator's console adds (``AdminStore/rollupCallers(fromDay:toDay:)``).
        var cacheHits = 0
        var errors = 0
        var lastSeen = Int64.min
        /// The plan of the latest row that had one, and that row's time.
        var plan: String?
        var planAt = Int64.min

        /// Row `index` of `rows`, its fields read where it lies: a whole row copied would
        /// retain every string in it. A cached answer costs no tokens, nor does a job's row
        /// (its items were charged as they were answered).
        mutating func add<Rows: RandomAccessCollection<LedgerRow>>(_ rows: Rows, at index: Rows.Index) {
            requests += 1
            if rows[index].cacheHit { cacheHits += 1 }
            if rows[index].status >= 400 { errors += 1 }
            let at = rows[index].createdAtMilliseconds
            if at > lastSeen { lastSeen = at }
            if rows[index].plan != nil, at >= planAt {
                plan = rows[index].plan
                planAt = at
            }
            guard !rows[index].cacheHit, rows[index].chargesTokens else { return }
            inputTokens &+= max(0, rows[index].inputTokens ?? 0)
            outputTokens &+= max(0, rows[index].outputTokens ?? 0)
            costMicros &+= max(0, rows[index].costMicros ?? 0)
        }
    }

    /// The rows' use per caller and UTC day, all guests as one (``DailyUsage/guestUserID``).
    static func usage<Rows: RandomAccessCollection<LedgerRow>>(of rows: Rows) -> [UsageKey: UsageTotal] {
        var totals: [UsageKey: UsageTotal] = [:]
        for index in rows.indices {
            let key = UsageKey(
                userID: rows[index].userID ?? DailyUsage.guestUserID,
                day: utcDay(ofMilliseconds: rows[index].createdAtMilliseconds))
            totals[key, default: UsageTotal()].add(rows, at: index)
        }
        return totals
    }

    /// Each store token's latest use among the rows.
    static func lastUses<Rows: RandomAccessCollection<LedgerRow>>(in rows: Rows) -> [String: Int64] {
        var latest: [String: Int64] = [:]
        for index in rows.indices {
            guard let tokenID = rows[index].tokenID else { continue }
            latest[tokenID] = max(latest[tokenID] ?? .min, rows[index].createdAtMilliseconds)
        }
        return latest
    }

    /// The UTC day (days since the Unix epoch) of an instant in milliseconds, rounded down.
    static func utcDay(ofMilliseconds milliseconds: Int64) -> Int64 {
        let (day, rest) = milliseconds.quotientAndRemainder(dividingBy: 86_400_000)
        return rest < 0 ? day - 1 : day
    }
}
