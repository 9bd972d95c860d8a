package import Telemetry

/// One budgeted sum a request counts in: a scope's key (`user:alice`, `address:…`, `guests`,
/// `devices`, `gateway`) and its limits.
package struct BudgetAccount: Sendable, Hashable {
    package let scope: BudgetScope
    package let key: String
    package let limits: [BudgetLimit]

    package init(scope: BudgetScope, key: String, limits: [BudgetLimit]) {
        self.scope = scope
        self.key = key
        self.limits = limits
    }
}

/// What a request asks of its budgets before its upstream call: every account it counts in,
/// and the most it can use, in tokens and in money (its input's estimate and all the answers
/// it may get, at the dearest price of the models it may be answered by).
package struct BudgetDemand: Sendable, Hashable {
    package var accounts: [BudgetAccount]
    package var worstTokens: Int64
    package var worstMicros: Int64

    package init(accounts: [BudgetAccount], worstTokens: Int64, worstMicros: Int64) {
        self.accounts = accounts
        self.worstTokens = max(0, worstTokens)
        self.worstMicros = max(0, worstMicros)
    }

    /// The worst case in `unit`.
    func worst(_ unit: BudgetUnit) -> Int64 { unit == .tokens ? worstTokens : worstMicros }
}

/// A request's reservation against its budgets, held while it runs and settled once with what
/// it used. Each entry names the budget's counter of the period the request started in, so a
/// request that runs past midnight counts for the day it started.
package struct BudgetHold: Sendable, Hashable {
    package struct Entry: Sendable, Hashable {
        package let key: String
        package let period: BudgetPeriod
        package let periodID: Int64
        package let unit: BudgetUnit
        package let reserved: Int64
    }

    package let id: UInt64
    package let entries: [Entry]
    /// The hold's member in Redis (this instance's id and ``id``), for a shared keeper's hold.
    package let redisID: String?

    package init(id: UInt64, entries: [Entry], redisID: String? = nil) {
        self.id = id
        self.entries = entries
        self.redisID = redisID
    }
}

/// A budget's refusal: which scope, and when to try again (the period's end when what was
/// used already leaves no room for the request; a second when requests in flight hold it and
/// may give some back).
package struct BudgetRefusal: Sendable, Hashable {
    package let scope: BudgetScope
    package let retryAfterSeconds: Int64
}

package enum BudgetDecision: Sendable, Hashable {
    /// The request may run; the hold is settled when it ends (nil when nothing was reserved).
    case allowed(BudgetHold?)
    case refused(BudgetRefusal)
}

/// Keeps the budgets' sums: reserves a request's worst case in every account it counts in,
/// all or nothing, and settles the reservation with what the request used.
package protocol BudgetKeeper: Sendable {
    func reserve(_ demand: BudgetDemand, now: Instant) async throws -> BudgetDecision
    /// Gives `hold` back and counts `tokens` and `micros` in its counters; a second settle of
    /// the same hold counts nothing.
    func settle(_ hold: BudgetHold, tokens: Int64, micros: Int64, now: Instant) async throws
}
