import Synchronization
package import Telemetry

/// One budgeted sum a request counts in: a scope's key (`user:alice`, `address:…`, `guests`,
/// `devices`, `gateway`) and its limits.
package struct BudgetAccount: Sendable, Hashable {
    package let scope: BudgetScope
    package let key: String
    package let limits: [BudgetLimit]
    /// ``key``'s hash in this process, worked out once: a keeper's lookups use it.
    package let keyHash: Int

    package init(scope: BudgetScope, key: String, limits: [BudgetLimit]) {
        self.scope = scope
        self.key = key
        self.limits = limits
        keyHash = Self.hash(key)
    }

    /// `key`'s hash in this process.
    package static func hash(_ key: String) -> Int {
        var hasher = Hasher()
        hasher.combine(key)
        return hasher.finalize()
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
        /// The budget's scope and amount, what was left of it when the reservation was made
        /// (this one taken out) and the seconds to its period's end: the caller's
        /// `Budget-*` fields.
        package var scope: BudgetScope = .gateway
        package var amount: Int64 = 0
        package var remaining: Int64 = 0
        package var resetSeconds: Int64 = 0
        /// ``BudgetAccount/keyHash`` of ``key``.
        package var keyHash: Int = 0
    }

    package let id: UInt64
    package let entries: [Entry]
    /// The hold's member in Redis (this instance's id and ``id``), for a shared keeper's hold.
    package let redisID: String?
    /// Settled yet, for a hold this process keeps (one flag, not a set of the holds running); nil
    /// for a shared keeper's, whose script settles each once.
    package let ticket: Ticket?

    /// Whether a hold was settled: taken once.
    package final class Ticket: Sendable {
        private let settled = Atomic<Bool>(false)

        package init() {}

        /// True the first time only.
        package func take() -> Bool {
            !settled.exchange(true, ordering: .acquiringAndReleasing)
        }
    }

    package init(id: UInt64, entries: [Entry], redisID: String? = nil, ticket: Ticket? = nil) {
        self.id = id
        self.entries = entries
        self.redisID = redisID
        self.ticket = ticket
    }

    // The ticket is the hold's state, not its value.
    package static func == (left: BudgetHold, right: BudgetHold) -> Bool {
        left.id == right.id && left.entries == right.entries && left.redisID == right.redisID
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(entries)
        hasher.combine(redisID)
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

/// One budget's state in its current period: what requests that ended used, what requests
/// running hold, and the seconds to the period's end.
package struct BudgetUse: Sendable, Hashable {
    package let scope: BudgetScope
    package let limit: BudgetLimit
    package let used: Int64
    package let held: Int64
    package let resetSeconds: Int64

    package init(scope: BudgetScope, limit: BudgetLimit, used: Int64, held: Int64, resetSeconds: Int64) {
        self.scope = scope
        self.limit = limit
        self.used = used
        self.held = held
        self.resetSeconds = resetSeconds
    }

    /// What is left for new requests: the amount less what was used and what is held.
    package var remaining: Int64 { max(0, limit.amount - used - held) }
    /// The share used, 0…1 (more only once a hold that expired was counted past it).
    package var fraction: Double { limit.amount == 0 ? (used > 0 ? 1 : 0) : Double(used) / Double(limit.amount) }
}

/// Keeps the budgets' sums: reserves a request's worst case in every account it counts in,
/// all or nothing, and settles the reservation with what the request used.
package protocol BudgetKeeper: Sendable {
    func reserve(_ demand: BudgetDemand, now: Instant) async throws -> BudgetDecision
    /// Gives `hold` back and counts `tokens` and `micros` in its counters; a second settle of
    /// the same hold counts nothing.
    func settle(_ hold: BudgetHold, tokens: Int64, micros: Int64, now: Instant) async throws
    /// Each of `accounts`' budgets in its current period, in their order.
    func use(of accounts: [BudgetAccount], now: Instant) async throws -> [BudgetUse]
}
