import EventLoop
import Glibc
import Redis
import Synchronization
import TestSupport
import Testing

@testable import Access
@testable import Telemetry

/// The limiter's Lua, through ``RedisRateLimiter``, against a redis-server of the suite's own.
/// Two limiters on one server are two gateway instances.
@Suite("Redis rate limiter scripts against a real redis-server", .serialized, .timeLimit(.minutes(2)))
struct RedisRateLimiterTests {
    /// A redis-server, a client on one loop, and `instances` limiters over it; all stopped after `body`.
    static func withLimiters(
        _ instances: Int = 2, leaseTimeToLive: Duration = .seconds(30),
        _ body: ([RedisRateLimiter], RedisClient, RedisServer) async throws -> Void
    ) async throws {
        try await withRedis(scripts: RedisRateLimiter.scripts, namePrefix: "limiter-test") { client, server in
            let limiters = (0..<instances).map { _ in
                RedisRateLimiter(client: client, leaseTimeToLive: leaseTimeToLive)
            }
            try await body(limiters, client, server)
        }
    }

    static let now = Instant.now

    static func plan(rpm: Int? = nil, concurrent: Int? = nil, tokens: Int? = nil) -> Plan {
        Plan(name: "p", requestsPerMinute: rpm, concurrentRequests: concurrent, tokensPerDay: tokens)
    }

    static func refusal(_ decision: RateDecision) -> RefusalReason? {
        if case .refused(_, let reason) = decision { return reason }
        return nil
    }

    @Test("counts a sliding minute across instances, with Retry-After until a slot leaves the window")
    func window() async throws {
        try await Self.withLimiters { limiters, _, _ in
            let plan = Self.plan(rpm: 3)
            var remaining: [Int] = []
            let started = MonotonicInstant.now()
            for index in 0..<3 {
                let decision = try await limiters[index % 2].acquire(key: "user:w", plan: plan, now: Self.now)
                remaining.append(decision.status?.remaining ?? -1)
                #expect(decision.lease != nil)
            }
            #expect(remaining == [2, 1, 0])
            let refused = try await limiters[1].acquire(key: "user:w", plan: plan, now: Self.now)
            #expect(Self.refusal(refused) == .requestsPerMinute)
            // Until the first slot leaves the minute: 60 s less what a loaded machine took since.
            let taken = Int(started.nanoseconds(until: .now()) / 1_000_000_000) + 1
            #expect((max(1, 59 - taken)...60).contains(refused.status?.retryAfterSeconds ?? 0))
            #expect(refused.status?.remaining == 0)
            #expect(refused.status?.quota == .requestsPerMinute)
            // Another key has a window of its own.
            #expect(try await limiters[0].acquire(key: "user:other", plan: plan, now: Self.now).lease != nil)
        }
    }

    @Test("refuses a key it knows is over its limit without asking Redis, until the Retry-After")
    func knownRefusal() async throws {
        try await Self.withLimiters { limiters, _, server in
            let plan = Self.plan(rpm: 1)
            #expect(try await limiters[0].acquire(key: "user:k", plan: plan, now: Self.now).lease != nil)
            #expect(
                Self.refusal(try await limiters[0].acquire(key: "user:k", plan: plan, now: Self.now))
                    == .requestsPerMinute)
            server.kill()
            let again = try await limiters[0].acquire(key: "user:k", plan: plan, now: Self.now.advanced(by: 10))
            #expect(Self.refusal(again) == .requestsPerMinute)
            #expect((49...50).contains(again.status?.retryAfterSeconds ?? 0))
            // Past its Retry-After it asks Redis again, which is gone; the other never knew.
            await #expect(throws: RedisError.self) {
                try await limiters[0].acquire(key: "user:k", plan: plan, now: Self.now.advanced(by: 61))
            }
            await #expect(throws: RedisError.self) {
                try await limiters[1].acquire(key: "user:k", plan: plan, now: Self.now)
            }
        }
    }

    @Test("keeps caller text out of Redis: every key is a bounded digest")
    func hashedKeys() async throws {
        try await Self.withLimiters { limiters, client, _ in
            let key = "address:" + String(repeating: "x\r\n{}*", count: 500)
            _ = try await limiters[0].acquire(
                key: key, plan: Self.plan(rpm: 5, concurrent: 2, tokens: 100), reservingTokens: 10, now: Self.now)
            let names = try await client.send("KEYS", "*").array?.compactMap(\.string) ?? []
            #expect(!names.isEmpty)
            for name in names {
                #expect(name.utf8.count <= 45)
                #expect(name.hasPrefix("tg:rl:{"))
                #expect(!name.contains("x"))
            }
        }
    }

    @Test("frees a lease that is never finished after its time to live, and keeps one that is renewed")
    func leaseExpiry() async throws {
        // A time to live a loaded machine's late renewal still beats: renewed each second, the
        // lease lapses only if a renewal is 5 s late (1.5 s was not enough with every core busy).
        try await Self.withLimiters(leaseTimeToLive: .seconds(6)) { limiters, _, _ in
            let plan = Self.plan(concurrent: 1)
            let held = try await limiters[0].acquire(key: "user:l", plan: plan, now: Self.now)
            #expect(held.lease != nil)
            #expect(
                Self.refusal(try await limiters[1].acquire(key: "user:l", plan: plan, now: Self.now)) == .concurrency)
            // Renewed well within its time to live, it outlasts it several times over (on Redis's
            // own clock, which only real time moves).
            for _ in 0..<8 {
                try await limiters[0].renewLeases()
                try await Task.sleep(for: .seconds(1))
                #expect(
                    Self.refusal(try await limiters[1].acquire(key: "user:l", plan: plan, now: Self.now))
                        == .concurrency)
            }
            // Left alone (its instance gone), it expires and the other takes the slot.
            var taken: RateLease?
            await eventually("the second limiter takes the slot of the expired lease") {
                taken = try? await limiters[1].acquire(key: "user:l", plan: plan, now: Self.now).lease
                return taken != nil
            }
            // The late finish of the expired lease frees nothing: the slot stays the other's.
            if let lease = held.lease {
                _ = try await limiters[0].finish(lease: lease, plan: plan, tokens: 0, now: Self.now)
            }
            #expect(
                Self.refusal(try await limiters[0].acquire(key: "user:l", plan: plan, now: Self.now)) == .concurrency)
        }
    }

    @Test("reserves an estimate of tokens across instances and settles the real count when the request ends")
    func reservationSettles() async throws {
        try await Self.withLimiters { limiters, _, _ in
            let plan = Self.plan(tokens: 1000)
            let first = try await limiters[0].acquire(key: "user:t", plan: plan, reservingTokens: 800, now: Self.now)
            #expect(first.status?.remaining == 200)
            let second = try await limiters[1].acquire(key: "user:t", plan: plan, reservingTokens: 150, now: Self.now)
            #expect(second.status?.remaining == 50)
            let third = try await limiters[1].acquire(key: "user:t", plan: plan, reservingTokens: 50, now: Self.now)
            #expect(third.lease != nil) // its worst case fits exactly
            let spokenFor = try await limiters[0].acquire(
                key: "user:t", plan: plan, reservingTokens: 100, now: Self.now)
            #expect(Self.refusal(spokenFor) == .dailyTokens)
            #expect(spokenFor.status?.retryAfterSeconds == 1) // the calls in flight settle soon
            let tooBig = try await limiters[0].acquire(key: "user:t", plan: plan, reservingTokens: 1001, now: Self.now)
            #expect(Self.refusal(tooBig) == .dailyTokens)
            #expect((tooBig.status?.retryAfterSeconds ?? 0) > 1) // it cannot fit today whatever settles
            let settled = try await limiters[0].finish(
                lease: try #require(first.lease), plan: plan, tokens: 50, now: Self.now)
            #expect(settled?.remaining == 1000 - 50 - 150 - 50)
            _ = try await limiters[1].finish(lease: try #require(second.lease), plan: plan, tokens: 100, now: Self.now)
            let over = try await limiters[1].finish(
                lease: try #require(third.lease), plan: plan, tokens: 900, now: Self.now)
            #expect(over?.remaining == 0)
            let refused = try await limiters[0].acquire(key: "user:t", plan: plan, reservingTokens: 10, now: Self.now)
            #expect(Self.refusal(refused) == .dailyTokens)
            #expect((refused.status?.retryAfterSeconds ?? 0) > 1)
            #expect(refused.status?.retryAfterSeconds == refused.status?.resetSeconds)
        }
    }

    @Test("tokens charged without a lease (a job's answered items) count on every instance")
    func chargeWithoutLease() async throws {
        try await Self.withLimiters { limiters, _, _ in
            let plan = Self.plan(tokens: 1000)
            try await limiters[0].charge(key: "user:j", plan: plan, tokens: 300, now: Self.now)
            try await limiters[0].charge(key: "user:j", plan: plan, tokens: 400, now: Self.now)
            let seen = try await limiters[1].acquire(key: "user:j", plan: plan, reservingTokens: 0, now: Self.now)
            #expect(seen.status?.remaining == 300)
            try await limiters[1].charge(key: "user:j", plan: plan, tokens: 300, now: Self.now)
            let refused = try await limiters[0].acquire(key: "user:j", plan: plan, reservingTokens: 0, now: Self.now)
            #expect(Self.refusal(refused) == .dailyTokens)
            // Another caller's day is its own.
            #expect(
                try await limiters[1].acquire(key: "user:k", plan: plan, reservingTokens: 0, now: Self.now).lease != nil
            )
        }
    }

    @Test("finishing a lease twice frees its slot and charges its tokens once")
    func finishTwice() async throws {
        try await Self.withLimiters { limiters, _, _ in
            let plan = Self.plan(concurrent: 1, tokens: 1000)
            let first = try #require(
                try await limiters[0].acquire(key: "user:f", plan: plan, reservingTokens: 100, now: Self.now).lease)
            #expect(
                try await limiters[0].finish(lease: first, plan: plan, tokens: 100, now: Self.now)?.remaining == 900)
            let second = try #require(
                try await limiters[1].acquire(key: "user:f", plan: plan, reservingTokens: 100, now: Self.now).lease)
            // The second finish of the first lease frees no slot (the second's) and charges nothing.
            #expect(
                try await limiters[0].finish(lease: first, plan: plan, tokens: 100, now: Self.now)?.remaining == 800)
            #expect(
                Self.refusal(
                    try await limiters[0].acquire(key: "user:f", plan: plan, reservingTokens: 100, now: Self.now))
                    == .concurrency)
            #expect(try await limiters[1].finish(lease: second, plan: plan, tokens: 0, now: Self.now)?.remaining == 900)
            #expect(
                try await limiters[1].finish(lease: second, plan: plan, tokens: 500, now: Self.now)?.remaining == 900)
            let third = try await limiters[0].acquire(key: "user:f", plan: plan, reservingTokens: 100, now: Self.now)
            #expect(third.status?.remaining == 800)
        }
    }

    @Test(
        "a settlement off the request's path frees the slot, charges the real count; one Redis missed is resent later"
    )
    func settlementsAreSentAndRetried() async throws {
        try await Self.withLimiters { limiters, _, server in
            let plan = Self.plan(concurrent: 1, tokens: 1000)
            let failures = Atomic<Int>(0)
            let first = try #require(
                try await limiters[0].acquire(key: "user:s", plan: plan, reservingTokens: 300, now: Self.now).lease)
            limiters[0].settle(
                lease: first, plan: plan, tokens: 100, failed: { _ in failures.add(1, ordering: .relaxed) })
            await eventually("the first limiter has no settlement left") { limiters[0].pendingSettlements == 0 }
            let second = try await limiters[1].acquire(key: "user:s", plan: plan, reservingTokens: 0, now: Self.now)
            #expect(second.status?.remaining == 900)
            let lease = try #require(second.lease)

            // Redis away when the request ends: kept, and sent again once Redis is back.
            server.signal(SIGSTOP)
            limiters[1].settle(
                lease: lease, plan: plan, tokens: 200, failed: { _ in failures.add(1, ordering: .relaxed) })
            await eventually("a failure is counted") { failures.load(ordering: .relaxed) > 0 }
            #expect(limiters[1].pendingSettlements == 1)
            server.signal(SIGCONT)
            await eventually("the second limiter has no settlement left") { limiters[1].pendingSettlements == 0 }
            let third = try await limiters[0].acquire(key: "user:s", plan: plan, reservingTokens: 0, now: Self.now)
            #expect(third.lease != nil)
            #expect(third.status?.remaining == 700)
        }
    }
}
