package import Store
import Synchronization
package import Telemetry

/// The budgets' sums in this process: exact for one instance (every reservation and
/// settlement under one lock, all of a request's accounts at once). Several instances share
/// Redis's instead.
package final class InMemoryBudgetKeeper: BudgetKeeper {
    private struct CounterKey: Hashable {
        let key: String
        let period: BudgetPeriod
        let unit: BudgetUnit
    }

    private struct Counter {
        var periodID: Int64
        /// Used by requests that ended (and seeded at the start).
        var settled: Int64 = 0
        /// Reserved by requests still running.
        var inFlight: Int64 = 0
    }

    private struct State {
        var counters: [CounterKey: Counter] = [:]
        var live: Set<UInt64> = []
        var nextID: UInt64 = 1
        var operations = 0
    }

    private let calendar: BudgetCalendar
    private let state = Mutex(State())

    package init(calendar: BudgetCalendar) {
        self.calendar = calendar
    }

    package func reserve(_ demand: BudgetDemand, now: Instant) -> BudgetDecision {
        let seconds = Int64(now.secondsSinceEpoch.rounded(.down))
        return state.withLock { state in
            var entries: [BudgetHold.Entry] = []
            var counters: [(CounterKey, Counter)] = []
            for account in demand.accounts {
                for limit in account.limits {
                    let periodID = calendar.period(limit.period, at: seconds)
                    let key = CounterKey(key: account.key, period: limit.period, unit: limit.unit)
                    var counter = state.counters[key] ?? Counter(periodID: periodID)
                    // A new period: requests of the old one still running hold their room until they end.
                    if counter.periodID < periodID { counter = Counter(periodID: periodID, inFlight: counter.inFlight) }
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
                    counter.inFlight += worst
                    counters.append((key, counter))
                    entries.append(
                        BudgetHold.Entry(
                            key: account.key, period: limit.period, periodID: periodID, unit: limit.unit,
                            reserved: worst, scope: account.scope, amount: limit.amount,
                            remaining: limit.amount - counter.settled - counter.inFlight,
                            resetSeconds: calendar.secondsToEnd(of: limit.period, at: seconds)))
                }
            }
            guard !entries.isEmpty else { return .allowed(nil) }
            // All fit: the reservation takes effect in every counter at once.
            for (key, counter) in counters { state.counters[key] = counter }
            let id = state.nextID
            state.nextID += 1
            state.live.insert(id)
            Self.sweep(&state, seconds: seconds, calendar: calendar)
            return .allowed(BudgetHold(id: id, entries: entries))
        }
    }

    package func settle(_ hold: BudgetHold, tokens: Int64, micros: Int64, now: Instant) {
        state.withLock { state in
            guard state.live.remove(hold.id) != nil else { return }
            for entry in hold.entries {
                let key = CounterKey(key: entry.key, period: entry.period, unit: entry.unit)
                guard var counter = state.counters[key] else { continue }
                counter.inFlight = max(0, counter.inFlight - entry.reserved)
                // Counted for the period the request started in; a period already over keeps nothing.
                if counter.periodID == entry.periodID { counter.settled += entry.unit == .tokens ? tokens : micros }
                state.counters[key] = counter
            }
        }
    }

    /// Adds what the store says `key` used in its current period (at the start, so a restart
    /// keeps the sums).
    package func seed(key: String, period: BudgetPeriod, unit: BudgetUnit, used: Int64, now: Instant) {
        let seconds = Int64(now.secondsSinceEpoch.rounded(.down))
        let periodID = calendar.period(period, at: seconds)
        state.withLock { state in
            let counterKey = CounterKey(key: key, period: period, unit: unit)
            var counter = state.counters[counterKey] ?? Counter(periodID: periodID)
            if counter.periodID == periodID { counter.settled += max(0, used) }
            state.counters[counterKey] = counter
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
            guard let counter = state.counters[CounterKey(key: key, period: period, unit: unit)],
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
        state.counters = state.counters.filter { key, counter in
            counter.inFlight > 0 || counter.periodID >= calendar.period(key.period, at: seconds)
        }
    }
}
