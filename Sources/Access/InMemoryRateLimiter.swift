import Synchronization
package import Telemetry

/// A ``RateLimiter`` for one gateway process: all counts in a dictionary behind one mutex.
///
/// - **Requests per minute**: a sliding window of one-second resolution per key
///   (``SlidingMinuteWindow``): at most `rpm` requests start in any 60 seconds, and a
///   refusal's `Retry-After` is the time until the oldest request that matters leaves it.
/// - **Concurrency**: the leases held per key; a release frees its slot once, a second
///   release of the same lease does nothing.
/// - **Tokens per day**: tokens recorded per key per UTC day. A request is refused when its
///   worst case (what it reserves: ``RequestCost``) does not fit in what the day has left
///   besides the reservations of the key's requests in flight; its reservation is replaced by
///   its real count when it ends. `Retry-After` is the time to UTC midnight, or 1 s when
///   only requests in flight stand in the way.
///
/// A refused request is not counted. Checks run in that order of cost to the caller: an
/// exhausted day first, then the minute, then concurrency.
///
/// **Memory stays bounded.** Plans without limits leave no state at all. Every
/// `max(sweepInterval, number of keys)` calls (amortised constant work per call) the
/// limiter drops idle keys: no lease held, nothing in the last minute, no tokens today.
/// When more than `maximumKeys` remain (a flood of distinct keys, say, one per IPv6
/// address), the least recently seen keys that hold no lease are dropped too, down to three
/// quarters of `maximumKeys`; those keys lose their counts, which is the price of the bound.
/// Keys holding a lease are never dropped; a lease never released expires after
/// `leaseTimeToLive` (longer than any request may run), and then frees its slot and its key.
package final class InMemoryRateLimiter: RateLimiter {
    private let state: Mutex<State>

    /// A limiter that keeps at most about `maximumKeys` keys (more only while that many hold
    /// leases) and looks for idle keys at least every `sweepInterval` calls.
    package init(maximumKeys: Int = 100_000, sweepInterval: Int = 1_024, leaseTimeToLive: Duration = .seconds(3600)) {
        let seconds =
            Double(leaseTimeToLive.components.seconds) + Double(leaseTimeToLive.components.attoseconds) * 1e-18
        state = Mutex(
            State(maximumKeys: max(1, maximumKeys), sweepInterval: max(1, sweepInterval), leaseSeconds: max(1, seconds))
        )
    }

    /// How many keys have state now (for metrics and tests).
    package var keyCount: Int {
        state.withLock { $0.keys.count }
    }

    package func acquire(key: String, plan: Plan, now: Instant) async -> RateDecision {
        state.withLock { $0.acquire(key: key, plan: plan, reserving: 0, now: now) }
    }

    package func acquire(key: String, plan: Plan, reservingTokens: Int, now: Instant) async -> RateDecision {
        state.withLock {
            $0.acquire(
                key: key, plan: plan, reserving: plan.tokensPerDay == nil ? 0 : max(0, reservingTokens), now: now)
        }
    }

    package func finish(lease: RateLease, plan: Plan, tokens: Int, now: Instant) async -> RateStatus? {
        state.withLock { state in
            state.record(tokens: tokens, key: lease.key, plan: plan, now: now)
            if lease.holdsSlot { state.release(lease) }
            return state.status(key: lease.key, plan: plan, now: now)
        }
    }

    /// Charges `tokens` to `key` without a lease (tests and tools; requests use ``finish(lease:plan:tokens:now:)``).
    package func record(tokens: Int, key: String, plan: Plan, now: Instant) async {
        state.withLock { $0.record(tokens: tokens, key: key, plan: plan, now: now) }
    }

    /// Starts `key`'s count for the UTC day of `now` at `tokensUsed` (what the store counted
    /// before a restart), whatever its plan.
    package func seed(tokensUsed: Int, key: String, now: Instant) {
        guard tokensUsed > 0 else { return }
        state.withLock { $0.seed(tokens: tokensUsed, key: key, now: now) }
    }

    /// Gives back a lease without charging anything.
    package func release(_ lease: RateLease) async {
        guard lease.holdsSlot else { return }
        state.withLock { $0.release(lease) }
    }

    /// Drops idle keys now, and the least recently seen ones beyond `maximumKeys`, as the
    /// periodic sweep does. Calling it is never needed; a timer may.
    package func sweep(now: Instant) {
        state.withLock { $0.sweep(now: now) }
    }

    // MARK: State

    /// Everything the mutex guards.
    private struct State {
        var keys: [String: KeyState] = [:]
        let maximumKeys: Int
        let sweepInterval: Int
        let leaseSeconds: Double
        private var nextLeaseID: UInt64 = 1
        private var callsSinceSweep = 0
        /// A sweep also runs before a new key would take the count to this.
        private var sweepAtKeyCount: Int

        init(maximumKeys: Int, sweepInterval: Int, leaseSeconds: Double) {
            self.maximumKeys = maximumKeys
            self.sweepInterval = sweepInterval
            self.leaseSeconds = leaseSeconds
            self.sweepAtKeyCount = maximumKeys
        }

        mutating func acquire(key: String, plan: Plan, reserving: Int, now: Instant) -> RateDecision {
            sweepIfDue(now: now)
            guard !plan.isUnlimited else { return .allowed(RateLease(key: key, id: 0), nil) }
            let leaseID: UInt64
            // A daily quota's lease holds the request's reservation until it ends.
            if plan.concurrentRequests != nil || plan.tokensPerDay != nil {
                leaseID = nextLeaseID
                nextLeaseID &+= 1
            } else {
                leaseID = 0
            }
            return keys[key, default: KeyState()].acquire(
                key: key, plan: plan, reserving: reserving, now: now, leaseID: leaseID, leaseSeconds: leaseSeconds)
        }

        /// What an allowed request of `key` reports now.
        func status(key: String, plan: Plan, now: Instant) -> RateStatus? {
            guard !plan.isUnlimited else { return nil }
            return (keys[key] ?? KeyState()).headline(plan: plan, now: now)
        }

        mutating func record(tokens: Int, key: String, plan: Plan, now: Instant) {
            guard plan.tokensPerDay != nil, tokens > 0 else { return }
            sweepIfDue(now: now)
            keys[key, default: KeyState()].record(tokens: tokens, now: now)
        }

        mutating func seed(tokens: Int, key: String, now: Instant) {
            keys[key, default: KeyState()].record(tokens: tokens, now: now)
        }

        mutating func release(_ lease: RateLease) {
            keys[lease.key]?.release(leaseID: lease.id)
        }

        private mutating func sweepIfDue(now: Instant) {
            callsSinceSweep += 1
            if callsSinceSweep >= max(sweepInterval, keys.count) || keys.count >= sweepAtKeyCount {
                sweep(now: now)
            }
        }

        mutating func sweep(now: Instant) {
            callsSinceSweep = 0
            for key in keys.keys { keys[key]?.expireLeases(now: now) }
            keys = keys.filter { !$0.value.isIdle(now: now) }
            if keys.count >= maximumKeys {
                let target = maximumKeys - maximumKeys / 4
                var evictable = keys.compactMap { entry in
                    entry.value.leases.isEmpty ? (key: entry.key, lastSeen: entry.value.lastSeen) : nil
                }
                evictable.sort { $0.lastSeen < $1.lastSeen }
                for candidate in evictable {
                    guard keys.count > target else { break }
                    keys.removeValue(forKey: candidate.key)
                }
            }
            // With leases pinning more keys than the bound, wait until the count doubles
            // before trying again: a sweep per call would cost O(keys) each time.
            sweepAtKeyCount = keys.count < maximumKeys ? maximumKeys : keys.count * 2
        }
    }

    /// The counts of one key.
    private struct KeyState {
        var window = SlidingMinuteWindow()
        /// The leases held now: id, the time (seconds since the epoch) it expires and the
        /// tokens it reserved.
        var leases: [(id: UInt64, expires: Double, reserved: Int)] = []
        /// The sum of the leases' reservations.
        var reservedTokens = 0
        /// The UTC day ``tokensUsed`` counts for.
        var day: Int64 = .min
        var tokensUsed = 0
        var lastSeen: Double = -.infinity

        mutating func acquire(
            key: String, plan: Plan, reserving: Int, now: Instant, leaseID: UInt64, leaseSeconds: Double
        ) -> RateDecision {
            lastSeen = max(lastSeen, now.secondsSinceEpoch)
            window.prune(now: now)
            expireLeases(now: now)
            startDayIfNew(now: now)

            if let quota = plan.tokensPerDay, tokensUsed >= quota || reserving > quota - tokensUsed - reservedTokens {
                let wait = now.secondsUntilNextUTCDay
                // Requests in flight may settle for less than they reserved and leave room.
                let fitsToday = tokensUsed < quota && reserving <= quota - tokensUsed
                let status = RateStatus(
                    quota: .tokensPerDay, limit: quota, remaining: max(0, quota - tokensUsed - reservedTokens),
                    resetSeconds: wait,
                    retryAfterSeconds: fitsToday ? 1 : wait
                )
                return .refused(status, reason: .dailyTokens)
            }
            if let rpm = plan.requestsPerMinute, window.count >= rpm {
                let status = RateStatus(
                    quota: .requestsPerMinute, limit: rpm, remaining: 0,
                    resetSeconds: window.secondsUntilEmpty(now: now),
                    retryAfterSeconds: window.secondsUntilBelow(limit: rpm, now: now)
                )
                return .refused(status, reason: .requestsPerMinute)
            }
            if let concurrent = plan.concurrentRequests, leases.count >= concurrent {
                var status =
                    headline(plan: plan, now: now)
                    ?? RateStatus(quota: .concurrentRequests, limit: concurrent, remaining: 0, resetSeconds: 1)
                status.retryAfterSeconds = 1
                return .refused(status, reason: .concurrency)
            }

            if plan.requestsPerMinute != nil { window.add(now: now) }
            if leaseID != 0 {
                leases.append((leaseID, now.secondsSinceEpoch + leaseSeconds, reserving))
                reservedTokens += reserving
            }
            return .allowed(
                RateLease(key: key, id: leaseID, reservedTokens: reserving, day: now.utcDay, origin: .local),
                headline(plan: plan, now: now))
        }

        /// The status an allowed request reports: per minute when the plan limits that,
        /// else the daily tokens, else none.
        func headline(plan: Plan, now: Instant) -> RateStatus? {
            if let rpm = plan.requestsPerMinute {
                return RateStatus(
                    quota: .requestsPerMinute, limit: rpm, remaining: max(0, rpm - window.count),
                    resetSeconds: window.secondsUntilEmpty(now: now)
                )
            }
            if let quota = plan.tokensPerDay {
                return RateStatus(
                    quota: .tokensPerDay, limit: quota, remaining: max(0, quota - tokensUsed - reservedTokens),
                    resetSeconds: now.secondsUntilNextUTCDay
                )
            }
            return nil
        }

        mutating func record(tokens: Int, now: Instant) {
            lastSeen = max(lastSeen, now.secondsSinceEpoch)
            startDayIfNew(now: now)
            tokensUsed = tokensUsed > Int.max - tokens ? Int.max : tokensUsed + tokens
        }

        mutating func release(leaseID: UInt64) {
            if let index = leases.firstIndex(where: { $0.id == leaseID }) {
                reservedTokens -= leases.remove(at: index).reserved
            }
        }

        /// Drops leases past their time to live: their requests can no longer be running.
        mutating func expireLeases(now: Instant) {
            let seconds = now.secondsSinceEpoch
            guard leases.contains(where: { $0.expires <= seconds }) else { return }
            leases.removeAll { $0.expires <= seconds }
            reservedTokens = leases.reduce(0) { $0 + $1.reserved }
        }

        /// Starts counting tokens afresh when `now` is in a later UTC day. A clock stepped
        /// back into an earlier day keeps today's count.
        private mutating func startDayIfNew(now: Instant) {
            let today = now.utcDay
            if today > day {
                day = today
                tokensUsed = 0
            }
        }

        /// Whether dropping this key changes nothing: no lease held, no request in the last
        /// minute, no tokens counted for the day of `now`.
        func isIdle(now: Instant) -> Bool {
            guard leases.isEmpty else { return false }
            var window = window
            window.prune(now: now)
            return window.isEmpty && (tokensUsed == 0 || day < now.utcDay)
        }
    }
}
