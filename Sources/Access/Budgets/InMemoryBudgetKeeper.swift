package import Store
import Synchronization
package import Telemetry

/// The budgets' sums in this process: exact for one instance (every reservation and
/// settlement under one lock, all of a request's accounts at once). Several instances share
/// Redis's instead.
package final class InMemoryBudgetKeeper: BudgetKeeper {
    /// An account's key with its hash worked out once (``BudgetAccount/keyHash``): a request's
    /// lookups hash an integer, not the key's characters.
    fileprivate struct AccountKey: Hashable {
        let key: String
        let hash: Int

        init(_ key: String, hash: Int) {
            self.key = key
            self.hash = hash
        }

        static func == (left: AccountKey, right: AccountKey) -> Bool {
            left.hash == right.hash && left.key == right.key
        }
        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    }

    fileprivate struct Counter {
        var periodID: Int64
        /// Used by requests that ended (and seeded at the start).
        var settled: Int64 = 0
        /// Reserved by requests still running.
        var inFlight: Int64 = 0
    }

    /// One account's counters, a day's and a month's in each unit, kept inline.
    fileprivate struct Counters {
        var dayMicros = Counter(periodID: .min)
        var dayTokens = Counter(periodID: .min)
        var monthMicros = Counter(periodID: .min)
        var monthTokens = Counter(periodID: .min)

        subscript(period: BudgetPeriod, unit: BudgetUnit) -> Counter {
            get {
                switch (period, unit) {
                case (.day, .micros): dayMicros
                case (.day, .tokens): dayTokens
                case (.month, .micros): monthMicros
                case (.month, .tokens): monthTokens
                }
            }
            set {
                switch (period, unit) {
                case (.day, .micros): dayMicros = newValue
                case (.day, .tokens): dayTokens = newValue
                case (.month, .micros): monthMicros = newValue
                case (.month, .tokens): monthTokens = newValue
                }
            }
        }

        /// Whether a counter still matters at `seconds`: it holds room, or its period is not over.
        func live(at seconds: Int64, _ calendar: BudgetCalendar) -> Bool {
            [(BudgetPeriod.day, BudgetUnit.micros), (.day, .tokens), (.month, .micros), (.month, .tokens)].contains {
                let counter = self[$0.0, $0.1]
                return counter.periodID != .min
                    && (counter.inFlight > 0 || counter.periodID >= calendar.period($0.0, at: seconds))
            }
        }
    }

    private struct State {
        var accounts: [AccountKey: Counters] = [:]
        var nextID: UInt64 = 1
        var operations = 0
    }

    private let calendar: BudgetCalendar
    private let state = Mutex(State())

    package init(calendar: BudgetCalendar) {
        self.calendar = calendar
    }

    /// `counter` as of `periodID`: a new period starts from nothing, but requests of the old one
    /// still running hold their room until they end.
    fileprivate static func current(_ counter: Counter, _ periodID: Int64) -> Counter {
        counter.periodID < periodID ? Counter(periodID: periodID, inFlight: counter.inFlight) : counter
    }

    package func reserve(_ demand: BudgetDemand, now: Instant) -> BudgetDecision {
        let seconds = Int64(now.secondsSinceEpoch.rounded(.down))
        let dayID = calendar.period(.day, at: seconds)
        let monthID = calendar.period(.month, at: seconds)
        return state.withLock { state in
            if let decision = Self.reserve(
                demand, in: &state, seconds: seconds, dayID: dayID, monthID: monthID, calendar)
            {
                return decision
            }
            // An account seen for the first time starts from nothing; made, the positions are found again.
            for account in demand.accounts where state.accounts[AccountKey(account.key, hash: account.keyHash)] == nil {
                state.accounts[AccountKey(account.key, hash: account.keyHash)] = Counters()
            }
            return Self.reserve(demand, in: &state, seconds: seconds, dayID: dayID, monthID: monthID, calendar)
                ?? .refused(BudgetRefusal(scope: demand.accounts[0].scope, retryAfterSeconds: 1))
        }
    }

    /// Every budget checked before any is touched (all or nothing), each account found once;
    /// nil when an account has no counters yet.
    private static func reserve(
        _ demand: BudgetDemand, in state: inout State, seconds: Int64, dayID: Int64, monthID: Int64,
        _ calendar: BudgetCalendar
    ) -> BudgetDecision? {
        withUnsafeTemporaryAllocation(of: Dictionary<AccountKey, Counters>.Index.self, capacity: demand.accounts.count)
        {
            slots -> BudgetDecision? in
            var found = 0
            defer { if found > 0 { _ = slots.baseAddress?.deinitialize(count: found) } }
            for (offset, account) in demand.accounts.enumerated() {
                guard let slot = state.accounts.index(forKey: AccountKey(account.key, hash: account.keyHash)) else {
                    return nil
                }
                slots.initializeElement(at: offset, to: slot)
                found += 1
                let counters = state.accounts.values[slot]
                for limit in account.limits {
                    let counter = Self.current(
                        counters[limit.period, limit.unit], limit.period == .day ? dayID : monthID)
                    let worst = demand.worst(limit.unit)
                    if counter.settled >= limit.amount || counter.settled + worst > limit.amount {
                        return .refused(
                            BudgetRefusal(
                                scope: account.scope,
                                retryAfterSeconds: calendar.secondsToEnd(of: limit.period, at: seconds)))
                    }
                    if counter.settled + counter.inFlight + worst > limit.amount {
                        return .refused(BudgetRefusal(scope: account.scope, retryAfterSeconds: 1))
                    }
                }
            }
            var entries: [BudgetHold.Entry] = []
            entries.reserveCapacity(demand.accounts.reduce(0) { $0 + $1.limits.count })
            for (offset, account) in demand.accounts.enumerated() {
                state.accounts.values[slots[offset]].reserve(
                    demand, account, dayID: dayID, monthID: monthID, seconds: seconds, calendar: calendar,
                    into: &entries)
            }
            guard !entries.isEmpty else { return .allowed(nil) }
            let id = state.nextID
            state.nextID += 1
            sweep(&state, seconds: seconds, calendar: calendar)
            return .allowed(BudgetHold(id: id, entries: entries, ticket: BudgetHold.Ticket()))
        }
    }

    package func settle(_ hold: BudgetHold, tokens: Int64, micros: Int64, now: Instant) {
        // A second settle counts nothing.
        guard hold.ticket?.take() == true else { return }
        state.withLock { state in
            // An account's entries stand together: each account is found once.
            let entries = hold.entries
            var start = entries.startIndex
            while start < entries.endIndex {
                var end = start + 1
                while end < entries.endIndex, entries[end].keyHash == entries[start].keyHash,
                    entries[end].key == entries[start].key
                {
                    end += 1
                }
                if let slot = state.accounts.index(forKey: AccountKey(entries[start].key, hash: entries[start].keyHash))
                {
                    for index in start..<end {
                        state.accounts.values[slot].settle(entries[index], tokens: tokens, micros: micros)
                    }
                }
                start = end
            }
        }
    }

    /// Adds what the store says `key` used in its current period (at the start, so a restart
    /// keeps the sums).
    package func seed(key: String, period: BudgetPeriod, unit: BudgetUnit, used: Int64, now: Instant) {
        let seconds = Int64(now.secondsSinceEpoch.rounded(.down))
        let periodID = calendar.period(period, at: seconds)
        state.withLock { state in
            var counter = Self.current(
                state.accounts[AccountKey(key, hash: BudgetAccount.hash(key)), default: Counters()][period, unit],
                periodID)
            if counter.periodID == periodID { counter.settled += max(0, used) }
            state.accounts[AccountKey(key, hash: BudgetAccount.hash(key)), default: Counters()][period, unit] = counter
        }
    }

    /// Starts every budget's sums where the store's rows leave them: `day` and `month` are what
    /// each user (nil: the guests) spent since the current day and month began. Each user
    /// counts in its own account, the guests in theirs, device sessions in theirs, and all in
    /// the gateway's.
    package func seed(day: [Spending], month: [Spending], now: Instant) {
        for (period, rows) in [(BudgetPeriod.day, day), (.month, month)] {
            var totals: [String: (tokens: Int64, micros: Int64)] = [:]
            func add(_ key: String, _ row: Spending) {
                totals[key, default: (0, 0)].tokens += row.tokens
                totals[key, default: (0, 0)].micros += row.micros
            }
            for row in rows {
                add("gateway", row)
                guard let userID = row.userID else {
                    add("guests", row)
                    continue
                }
                add("user:" + userID, row)
                if userID.hasPrefix(DeviceSessions.userID(deviceID: "")) { add("devices", row) }
            }
            for (key, total) in totals {
                seed(key: key, period: period, unit: .tokens, used: total.tokens, now: now)
                seed(key: key, period: period, unit: .micros, used: total.micros, now: now)
            }
        }
    }

    /// What `key` has used in the current `period` (settled) and holds (in flight).
    package func use(key: String, period: BudgetPeriod, unit: BudgetUnit, now: Instant) -> (
        settled: Int64, inFlight: Int64
    ) {
        let periodID = calendar.period(period, at: Int64(now.secondsSinceEpoch.rounded(.down)))
        return state.withLock { state in
            guard let counter = state.accounts[AccountKey(key, hash: BudgetAccount.hash(key))]?[period, unit],
                counter.periodID == periodID
            else { return (0, 0) }
            return (counter.settled, counter.inFlight)
        }
    }

    package func use(of accounts: [BudgetAccount], now: Instant) -> [BudgetUse] {
        let seconds = Int64(now.secondsSinceEpoch.rounded(.down))
        return accounts.flatMap { account in
            account.limits.map { limit in
                let (settled, inFlight) = use(key: account.key, period: limit.period, unit: limit.unit, now: now)
                return BudgetUse(
                    scope: account.scope, limit: limit, used: settled, held: inFlight,
                    resetSeconds: calendar.secondsToEnd(of: limit.period, at: seconds))
            }
        }
    }

    /// Every 4,096 reservations, forgets the counters of periods that are over and hold
    /// nothing, so callers seen once do not stay forever.
    private static func sweep(_ state: inout State, seconds: Int64, calendar: BudgetCalendar) {
        state.operations += 1
        guard state.operations % 4096 == 0 else { return }
        state.accounts = state.accounts.filter { $0.value.live(at: seconds, calendar) }
    }
}

extension InMemoryBudgetKeeper.Counters {
    /// Takes `demand`'s worst case into each of `account`'s counters, and notes each in `entries`.
    fileprivate mutating func reserve(
        _ demand: BudgetDemand, _ account: BudgetAccount, dayID: Int64, monthID: Int64, seconds: Int64,
        calendar: BudgetCalendar, into entries: inout [BudgetHold.Entry]
    ) {
        for limit in account.limits {
            let periodID = limit.period == .day ? dayID : monthID
            var counter = InMemoryBudgetKeeper.current(self[limit.period, limit.unit], periodID)
            let worst = demand.worst(limit.unit)
            counter.inFlight += worst
            self[limit.period, limit.unit] = counter
            entries.append(
                BudgetHold.Entry(
                    key: account.key, period: limit.period, periodID: periodID, unit: limit.unit, reserved: worst,
                    scope: account.scope, amount: limit.amount,
                    remaining: limit.amount - counter.settled - counter.inFlight,
                    resetSeconds: calendar.secondsToEnd(of: limit.period, at: seconds), keyHash: account.keyHash))
        }
    }

    /// Gives `entry`'s reservation back and counts what the request used, in the period it
    /// started in (a period already over keeps nothing).
    fileprivate mutating func settle(_ entry: BudgetHold.Entry, tokens: Int64, micros: Int64) {
        var counter = self[entry.period, entry.unit]
        guard counter.periodID != .min else { return }
        counter.inFlight = max(0, counter.inFlight - entry.reserved)
        if counter.periodID == entry.periodID { counter.settled += entry.unit == .tokens ? tokens : micros }
        self[entry.period, entry.unit] = counter
    }
}
