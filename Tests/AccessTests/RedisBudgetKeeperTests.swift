import EventLoop
import Redis
import TestSupport
import Testing

@testable import Access
@testable import Telemetry

/// The budgets' Lua, through ``RedisBudgetKeeper``, against a redis-server of the suite's own.
/// Two keepers on one server are two gateway instances.
@Suite("Shared budgets against a real redis-server", .serialized, .timeLimit(.minutes(2)))
struct RedisBudgetKeeperTests {
    static func withKeepers(
        holdTimeToLive: Duration = .seconds(60), calendar: BudgetCalendar = .utc,
        _ body: ([RedisBudgetKeeper]) async throws -> Void
    ) async throws {
        try await withRedis(scripts: RedisBudgetKeeper.scripts, namePrefix: "budget-test") { client, _ in
            try await body(
                (0..<2).map { _ in RedisBudgetKeeper(client: client, calendar: calendar, holdTimeToLive: holdTimeToLive)
                })
        }
    }

    static let gateway = BudgetAccount(
        scope: .gateway, key: "gateway",
        limits: [
            BudgetLimit(period: .day, unit: .micros, amount: 10_000),
            BudgetLimit(period: .month, unit: .tokens, amount: 1_000_000),
        ])
    static let guests = BudgetAccount(
        scope: .guests, key: "guests", limits: [BudgetLimit(period: .day, unit: .micros, amount: 1000)])

    static func demand(_ accounts: [BudgetAccount], micros: Int64, tokens: Int64 = 10) -> BudgetDemand {
        BudgetDemand(accounts: accounts, worstTokens: tokens, worstMicros: micros)
    }

    @Test(
        "each account its own counter under a digest: ids sharing their first 16 bytes stay apart, none reaches Redis"
    )
    func digests() async throws {
        try await withRedis(scripts: RedisBudgetKeeper.scripts, namePrefix: "budget-test") { client, _ in
            let keepers = (0..<2).map { _ in
                RedisBudgetKeeper(client: client, calendar: .utc, holdTimeToLive: .seconds(60))
            }
            let limit = [BudgetLimit(period: .day, unit: .micros, amount: 1000)]
            let first = BudgetAccount(scope: .caller, key: "user:budgets-caller-01", limits: limit)
            let second = BudgetAccount(scope: .caller, key: "user:budgets-caller-02", limits: limit)
            let now = Instant.now
            guard case .allowed(let hold?) = try await keepers[0].reserve(Self.demand([first], micros: 1000), now: now)
            else {
                Issue.record("the first caller's 1,000 fits")
                return
            }
            // All of the budget reserved: nothing left, and the day's end.
            #expect(hold.entries.first?.remaining == 0)
            #expect(hold.entries.first?.amount == 1000)
            #expect(hold.entries.first?.scope == .caller)
            let toMidnight = BudgetCalendar.utc.secondsToEnd(of: .day, at: Int64(now.secondsSinceEpoch))
            #expect(abs((hold.entries.first?.resetSeconds ?? 0) - toMidnight) <= 5)
            try await keepers[0].settle(hold, tokens: 10, micros: 900, now: now)
            // The other caller's budget is its own, though its id begins as the first's.
            guard case .allowed = try await keepers[1].reserve(Self.demand([second], micros: 200), now: now) else {
                Issue.record("the second caller's 200 fits its own budget")
                return
            }
            let uses = try await keepers[1].use(of: [first, second], now: now)
            #expect(uses.map(\.used) == [900, 0])
            #expect(uses.map(\.held) == [0, 200])
            #expect(uses.map(\.remaining) == [100, 800])
            #expect(uses.allSatisfy { $0.scope == .caller && $0.limit == limit[0] })
            // Neither id, nor its bytes in hex, is in any key.
            let keys = try await client.send("KEYS", "*").array?.compactMap(\.string) ?? []
            #expect(keys.count >= 2)
            let hex = Array("budgets-caller".utf8).map { String($0, radix: 16) }.joined()
            #expect(keys.allSatisfy { !$0.contains("budgets-caller") && !$0.contains(hex) }, "\(keys)")
        }
    }

    @Test("one instance's reservation is the other's: refused with the scope that has no room, all or nothing")
    func shared() async throws {
        try await Self.withKeepers { keepers in
            let now = Instant.now
            let first = try await keepers[0].reserve(Self.demand([Self.guests, Self.gateway], micros: 600), now: now)
            guard case .allowed(let hold?) = first else {
                Issue.record("the first fits: \(first)")
                return
            }
            #expect(hold.entries.count == 3)
            let second = try await keepers[1].reserve(Self.demand([Self.gateway, Self.guests], micros: 600), now: now)
            #expect(second == .refused(BudgetRefusal(scope: .guests, retryAfterSeconds: 1)))
            // The refused one reserved nothing in the gateway's budget: 9,400 is still there beside the 600.
            let gatewayOnly = try await keepers[1].reserve(Self.demand([Self.gateway], micros: 9400), now: now)
            guard case .allowed(let big?) = gatewayOnly else {
                Issue.record("9,400 fits: \(gatewayOnly)")
                return
            }
            try await keepers[1].settle(big, tokens: 5, micros: 9000, now: now)
            try await keepers[0].settle(hold, tokens: 5, micros: 250, now: now)
            // Settled twice: counted once.
            try await keepers[0].settle(hold, tokens: 5, micros: 250, now: now)
            // 9,250 used of 10,000: 800 more waits for the day's end, 750 fits.
            let over = try await keepers[1].reserve(Self.demand([Self.gateway], micros: 800), now: now)
            guard case .refused(let refusal) = over else {
                Issue.record("800 does not fit: \(over)")
                return
            }
            #expect(refusal.scope == .gateway)
            let seconds = Int64(Instant.now.secondsSinceEpoch)
            let toMidnight = BudgetCalendar.utc.secondsToEnd(of: .day, at: seconds)
            #expect(abs(refusal.retryAfterSeconds - toMidnight) <= 5)
            guard case .allowed = try await keepers[0].reserve(Self.demand([Self.gateway], micros: 750), now: now)
            else {
                Issue.record("750 fits")
                return
            }
        }
    }

    @Test("two instances reserving at once never hold more than the budget, and settle to what they used")
    func concurrent() async throws {
        try await Self.withKeepers { keepers in
            let account = BudgetAccount(
                scope: .gateway, key: "gateway-concurrent",
                limits: [BudgetLimit(period: .day, unit: .micros, amount: 10_000)])
            let allowed = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<300 {
                    group.addTask {
                        let keeper = keepers[index % 2]
                        guard
                            case .allowed(let hold?) = try? await keeper.reserve(
                                Self.demand([account], micros: 300), now: .now)
                        else { return false }
                        try? await keeper.settle(hold, tokens: 0, micros: 100, now: .now)
                        return true
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(allowed >= 33)
            // What was used is exactly what the allowed requests settled: one more request of
            // (10,000 - used) fits, and one of a micro-unit more does not.
            let used = Int64(allowed) * 100
            #expect(used <= 10_000)
            let rest = 10_000 - used
            let tooMuch = try await keepers[0].reserve(Self.demand([account], micros: rest + 1), now: .now)
            guard case .refused = tooMuch else {
                Issue.record("\(rest + 1) does not fit after \(used): \(tooMuch)")
                return
            }
            let exact = try await keepers[1].reserve(Self.demand([account], micros: rest), now: .now)
            guard case .allowed = exact else {
                Issue.record("\(rest) fits after \(used): \(exact)")
                return
            }
        }
    }

    @Test("a hold whose instance died is counted at its reservation once it expires")
    func expiredHold() async throws {
        try await Self.withKeepers(holdTimeToLive: .seconds(3)) { keepers in
            guard
                case .allowed(let hold?) = try await keepers[0].reserve(
                    Self.demand([Self.guests], micros: 700), now: .now)
            else {
                Issue.record("fits")
                return
            }
            _ = hold // never settled: its instance "died"
            // While held: room for 300, not for 400 (a second: it may come back).
            #expect(
                try await keepers[1].reserve(Self.demand([Self.guests], micros: 400), now: .now)
                    == .refused(BudgetRefusal(scope: .guests, retryAfterSeconds: 1)))
            // Once it expired it is counted as used: 400 waits for the day's end.
            await eventually("the dead instance's hold is counted as used", within: .seconds(20)) {
                guard
                    case .refused(let refusal)? = try? await keepers[1].reserve(
                        Self.demand([Self.guests], micros: 400), now: .now)
                else { return false }
                return refusal.retryAfterSeconds > 1
            }
        }
    }
}
