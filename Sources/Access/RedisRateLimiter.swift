import Crypto
import EventLoop
package import Redis
import Synchronization
package import Telemetry

/// A ``RateLimiter`` every gateway instance shares through one Redis: each decision is one
/// atomic script (``RedisRateLimitScripts``) on the server's clock, each finish another, so
/// a limit holds across instances exactly as it holds for one.
///
/// - A key's Redis keys are `tg:rl:{<digest>}:w|l|v|t`, the digest the first 16 bytes of the
///   key's SHA-256 in hex: no caller text reaches Redis, and every name has the same length.
/// - A request's id (the member of the window and the leases) is this instance's random id
///   and a counter, unique across instances.
/// - Daily tokens: an estimate is reserved when the request starts and replaced by the real
///   count when it ends; the lease carries the reservation and its day.
/// - Leases live ``leaseTimeToLive`` (the upstream timeout and a margin) from the last time
///   they were taken or renewed; ``renewLeases()`` extends the ones this instance holds, so a
///   live stream keeps its slot and the leases of an instance that died expire.
/// - After a refusal by the minute or the day, this instance refuses the key by itself until
///   the refusal's `Retry-After`, without a round trip.
package final class RedisRateLimiter: RateLimiter {
    static let acquireScript = RedisScript(source: RedisRateLimitScripts.acquire)
    static let finishScript = RedisScript(source: RedisRateLimitScripts.finish)
    static let renewScript = RedisScript(source: RedisRateLimitScripts.renew)
    static let chargeScript = RedisScript(source: RedisRateLimitScripts.charge)
    package static let scripts = [acquireScript, finishScript, renewScript, chargeScript]
    /// Most leases one renewal call carries (a bounded command; more take more calls).
    static let renewalBatch = 500

    let leaseTimeToLive: Duration
    private let client: RedisClient
    private let instance: String
    private let nextID = Atomic<UInt64>(1)
    /// The leases this instance holds in Redis: request id → the key's Redis keys.
    private let live = Mutex<[String: RedisKeys]>([:])
    private let refusals = KnownRefusals()
    private let unsettled = Atomic<Int>(0)

    /// One lease's end, as the finish script takes it.
    private struct Settlement: Sendable {
        let keys: [RedisArgument]
        let arguments: [RedisArgument]
        /// Past this, the lease has expired in Redis: nothing is left to settle.
        let expires: MonotonicInstant
    }

    package init(client: RedisClient, leaseTimeToLive: Duration) {
        self.client = client
        self.leaseTimeToLive = leaseTimeToLive
        instance = SHA256.hexString(SecureRandom.bytes(8))
    }

    /// The lease time to live for requests that may run `upstreamTimeout` (a call's own
    /// limit): long enough that a live request is renewed well before, short enough that a
    /// dead instance's slots come back soon.
    package static func leaseTimeToLive(upstreamTimeout: Duration) -> Duration {
        upstreamTimeout + min(max(upstreamTimeout / 2, .seconds(1)), .seconds(10))
    }

    /// How many leases this instance holds in Redis now.
    var liveLeaseCount: Int { live.withLock { $0.count } }

    package func acquire(key: String, plan: Plan, now: Instant) async throws -> RateDecision {
        try await acquire(key: key, plan: plan, reservingTokens: 0, now: now)
    }

    /// Adds `tokens` to `key`'s count for today (Redis's day), when its plan counts tokens.
    package func charge(key: String, plan: Plan, tokens: Int, now: Instant) async throws {
        guard plan.tokensPerDay != nil, tokens > 0 else { return }
        _ = try await client.evalSHA(
            Self.chargeScript, keys: [RedisKeys(key).tokens], arguments: [RedisArgument(tokens)])
    }

    package func acquire(key: String, plan: Plan, reservingTokens: Int, now: Instant) async throws -> RateDecision {
        guard !plan.isUnlimited else { return .allowed(RateLease(key: key, id: 0), nil) }
        if let known = refusals.refusal(for: key, now: now) { return known }
        let number = nextID.add(1, ordering: .relaxed).oldValue
        let id = member(number)
        let keys = RedisKeys(key)
        let reserve = plan.tokensPerDay == nil ? 0 : max(0, reservingTokens)
        let reply = try await client.evalSHA(
            Self.acquireScript, keys: keys.all,
            arguments: [
                RedisArgument(plan.requestsPerMinute ?? 0), RedisArgument(plan.concurrentRequests ?? 0),
                RedisArgument(plan.tokensPerDay ?? 0),
                RedisArgument(Int(leaseTimeToLive / .milliseconds(1))), RedisArgument(id), RedisArgument(reserve),
            ])
        guard let fields = reply.array, fields.count == 8, let allowed = fields[0].integer,
            let reason = fields[1].string,
            let retry = fields[2].integer, let day = fields[7].integer
        else { throw RedisError(.protocol, "unexpected reply of the rate-limit script") }
        let status = Self.status(fields[3...6])
        guard allowed == 1 else {
            guard var status, let refusal = Self.reason(reason) else {
                throw RedisError(.protocol, "unexpected refusal of the rate-limit script")
            }
            status.retryAfterSeconds = max(1, Int(retry))
            // A refusal that may clear any moment (a slot, calls in flight settling) is not kept.
            if refusal != .concurrency && retry > 1 {
                refusals.remember(key: key, status: status, reason: refusal, now: now)
            }
            return .refused(status, reason: refusal)
        }
        // Leases of plans with neither concurrency nor daily tokens hold nothing to give back.
        guard plan.concurrentRequests != nil || plan.tokensPerDay != nil else {
            return .allowed(RateLease(key: key, id: 0, reservedTokens: 0, day: day, origin: .shared), status)
        }
        live.withLock { $0[id] = keys }
        return .allowed(RateLease(key: key, id: number, reservedTokens: reserve, day: day, origin: .shared), status)
    }

    package func finish(lease: RateLease, plan: Plan, tokens: Int, now: Instant) async throws -> RateStatus? {
        guard lease.holdsSlot else { return nil }
        let settlement = takeSettlement(lease: lease, plan: plan, tokens: tokens)
        let reply = try await client.evalSHA(
            Self.finishScript, keys: settlement.keys, arguments: [RedisArgument(1)] + settlement.arguments)
        guard let fields = reply.array, fields.count == 4 else {
            throw RedisError(.protocol, "unexpected reply of the finish script")
        }
        return Self.status(fields[...])
    }

    /// Ends a request without waiting for Redis: the lease is given back and its tokens
    /// settled right after. The call is written to the request's loop's connection before
    /// this returns — before the answer is written, so ahead of anything its caller asks next
    /// on any instance. A call that fails is tried again while the lease lives; after that it
    /// expires, and its reservation is charged as it stood. `failed` hears of each failed call.
    func settle(lease: RateLease, plan: Plan, tokens: Int, failed: @escaping @Sendable (RedisError) -> Void) {
        guard lease.holdsSlot else { return }
        let settlement = takeSettlement(lease: lease, plan: plan, tokens: tokens)
        unsettled.add(1, ordering: .relaxed)
        // Runs on this thread until it first waits for Redis: the command is queued by then.
        Task.immediate {
            await self.send(settlement, failed: failed)
            self.unsettled.subtract(1, ordering: .relaxed)
        }
    }

    /// Settlements not yet acknowledged by Redis.
    var pendingSettlements: Int { unsettled.load(ordering: .relaxed) }

    private func send(_ settlement: Settlement, failed: @escaping @Sendable (RedisError) -> Void) async {
        var attempt = 0
        while true {
            do throws(RedisError) {
                _ = try await client.evalSHA(
                    Self.finishScript, keys: settlement.keys, arguments: [RedisArgument(0)] + settlement.arguments,
                    writeNow: true
                )
                return
            } catch {
                failed(error)
                attempt += 1
                guard error.code != .shutdown, MonotonicInstant.now() < settlement.expires else { return }
                try? await Task.sleep(for: RedisRateLimiter.settlementRetryDelay(attempt: attempt))
            }
        }
    }

    /// The next retry of failed settlements: doubling from 50 ms up to 1 s.
    static func settlementRetryDelay(attempt: Int) -> Duration {
        .milliseconds(min(1000, 50 << min(attempt - 1, 5)))
    }

    /// Stops renewing the lease, and what the finish script needs to end it.
    private func takeSettlement(lease: RateLease, plan: Plan, tokens: Int) -> Settlement {
        let id = member(lease.id)
        // Not renewed any more, whatever the answer: a finish that fails leaves it to expire.
        // A second finish still asks Redis, whose script settles each lease once.
        let keys = live.withLock { $0.removeValue(forKey: id) } ?? RedisKeys(lease.key)
        return Settlement(
            keys: keys.all,
            arguments: [
                RedisArgument(id), RedisArgument(max(0, tokens)), RedisArgument(lease.day),
                RedisArgument(plan.requestsPerMinute ?? 0), RedisArgument(plan.tokensPerDay ?? 0),
            ],
            expires: MonotonicInstant.now().advanced(by: leaseTimeToLive)
        )
    }

    /// Extends every lease this instance holds to a full time to live from now, in calls of
    /// at most ``renewalBatch`` leases.
    func renewLeases() async throws(RedisError) {
        let held = live.withLock { Array($0) }
        var start = 0
        while start < held.count {
            let batch = held[start..<min(start + Self.renewalBatch, held.count)]
            var keys: [RedisArgument] = []
            var arguments = [RedisArgument(Int(leaseTimeToLive / .milliseconds(1)))]
            for (id, redisKeys) in batch {
                keys += [redisKeys.leases, redisKeys.reservations]
                arguments.append(RedisArgument(id))
            }
            _ = try await client.evalSHA(Self.renewScript, keys: keys, arguments: arguments)
            start += Self.renewalBatch
        }
    }

    private func member(_ number: UInt64) -> String { instance + "." + String(number) }

    /// The status fields of a reply: quota, limit, remaining, reset seconds.
    private static func status(_ fields: ArraySlice<RedisValue>) -> RateStatus? {
        let values = Array(fields)
        guard values.count == 4, let limit = values[1].integer, let remaining = values[2].integer,
            let reset = values[3].integer
        else { return nil }
        let quota: RateStatus.Quota
        switch values[0].string {
        case "rpm": quota = .requestsPerMinute
        case "tokens": quota = .tokensPerDay
        case "concurrent": quota = .concurrentRequests
        default: return nil
        }
        return RateStatus(quota: quota, limit: Int(limit), remaining: Int(remaining), resetSeconds: Int(reset))
    }

    private static func reason(_ name: String) -> RefusalReason? {
        switch name {
        case "requests_per_minute": .requestsPerMinute
        case "concurrency": .concurrency
        case "daily_tokens": .dailyTokens
        default: nil
        }
    }
}

/// The Redis keys of one limiter key.
struct RedisKeys: Sendable {
    let window: RedisArgument
    let leases: RedisArgument
    let reservations: RedisArgument
    let tokens: RedisArgument

    init(_ key: String) {
        // A hash tag around the digest keeps a key's four names in one cluster slot.
        let base = "tg:rl:{" + RedisKeyDigest.of(key) + "}:"
        window = RedisArgument(base + "w")
        leases = RedisArgument(base + "l")
        reservations = RedisArgument(base + "v")
        tokens = RedisArgument(base + "t")
    }

    /// In the scripts' order.
    var all: [RedisArgument] { [window, leases, reservations, tokens] }
}

/// The refusals this instance has heard from Redis by the minute or the day, until their
/// `Retry-After`: a key known to be over its limit is refused again without a round trip.
final class KnownRefusals: Sendable {
    /// Keys remembered at most; past it the expired go, then all (the price is round trips).
    static let capacity = 10_000

    private struct Entry {
        let status: RateStatus
        let reason: RefusalReason
        let since: Double
        let until: Double
    }

    private let entries = Mutex<[String: Entry]>([:])

    func remember(key: String, status: RateStatus, reason: RefusalReason, now: Instant) {
        let seconds = now.secondsSinceEpoch
        let entry = Entry(
            status: status, reason: reason, since: seconds, until: seconds + Double(status.retryAfterSeconds ?? 1))
        entries.withLock { entries in
            if entries.count >= Self.capacity {
                entries = entries.filter { $0.value.until > seconds }
                if entries.count >= Self.capacity { entries.removeAll() }
            }
            entries[key] = entry
        }
    }

    /// The refusal of `key` still in force at `now`, its times counted down; nil when none.
    func refusal(for key: String, now: Instant) -> RateDecision? {
        let seconds = now.secondsSinceEpoch
        return entries.withLock { entries in
            guard let entry = entries[key] else { return nil }
            guard entry.until > seconds else {
                entries[key] = nil
                return nil
            }
            let elapsed = Int((seconds - entry.since).rounded(.down))
            var status = entry.status
            status.retryAfterSeconds = max(1, Int((entry.until - seconds).rounded(.up)))
            status.resetSeconds = max(status.retryAfterSeconds ?? 1, status.resetSeconds - elapsed)
            return .refused(status, reason: entry.reason)
        }
    }
}
