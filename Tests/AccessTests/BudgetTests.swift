import Testing

@testable import Access
@testable import Telemetry

@Suite("BUDGETS, the budgets' calendar and the in-memory keeper")
struct BudgetTests {
    static func at(_ seconds: Int64) -> Instant { Instant(secondsSinceEpoch: Double(seconds)) }

    // 2026-12-31T20:30:00Z is 2027-01-01T00:00 in Tehran (+03:30).
    static let tehranNewYear: Int64 = 1_798_749_000

    @Test("BUDGETS: scopes with money and token budgets, a day and a month")
    func parses() throws {
        let settings = try BudgetSettings.parse(
            "gateway=50/day+1000/month; guests=2/day+300000tokens/day;devices=0.5/month"
        )
        .get()
        #expect(
            settings.gateway == [
                BudgetLimit(period: .day, unit: .micros, amount: 50_000_000),
                BudgetLimit(period: .month, unit: .micros, amount: 1_000_000_000),
            ])
        #expect(settings.guests.last == BudgetLimit(period: .day, unit: .tokens, amount: 300_000))
        #expect(settings.devices == [BudgetLimit(period: .month, unit: .micros, amount: 500_000)])
        #expect(try BudgetSettings.parse("").get().isEmpty)
    }

    @Test(
        "BUDGETS refuses unknown scopes, a caller scope, repeats, other periods and broken amounts",
        arguments: [
            "gateway", "callers=1/day", "caller=1/day", "gateway=1/day;gateway=2/month", "gateway=1/week",
            "gateway=1/day+2/day", "gateway=-1/day", "gateway=1.0000001/day", "gateway=tokens/day", "gateway=1e3/day",
            "gateway=",
        ])
    func refuses(text: String) {
        #expect(throws: BudgetConfigError.self) { try BudgetSettings.parse(text).get() }
    }

    @Test("a day and a month begin at the zone's midnight; the time to their end")
    func calendar() throws {
        let tehran = try #require(BudgetCalendar(zone: "Asia/Tehran"))
        #expect(tehran == BudgetCalendar(zone: "+03:30"))
        // One second before Tehran's new year: still 31 December 2026, in December.
        #expect(tehran.period(.day, at: Self.tehranNewYear - 1) == 20_818)
        #expect(tehran.period(.day, at: Self.tehranNewYear) == 20_819)
        #expect(tehran.period(.month, at: Self.tehranNewYear - 1) == 2026 * 12 + 11)
        #expect(tehran.period(.month, at: Self.tehranNewYear) == 2027 * 12)
        #expect(tehran.secondsToEnd(of: .day, at: Self.tehranNewYear - 1) == 1)
        #expect(tehran.secondsToEnd(of: .month, at: Self.tehranNewYear - 3600) == 3600)
        #expect(tehran.secondsToEnd(of: .month, at: Self.tehranNewYear) == 31 * 86_400)
        // UTC: the same instant is still 2026-12-31.
        #expect(BudgetCalendar.utc.period(.day, at: Self.tehranNewYear) == 20_818)
        #expect(BudgetCalendar.utc.secondsToEnd(of: .day, at: Self.tehranNewYear) == 12_600)
        // A month's end after a leap February: 2028-02-01T00:00:00Z to 2028-03-01 is 29 days.
        #expect(BudgetCalendar.utc.secondsToEnd(of: .month, at: 1_832_976_000) == 29 * 86_400)
        #expect(BudgetCalendar(zone: "-05:00")?.offsetSeconds == -18_000)
        for refused in ["Europe/Berlin", "+3:30", "+15:00", "03:30", "+03:60", "tehran"] {
            #expect(BudgetCalendar(zone: refused) == nil, "\(refused)")
        }
    }

    static func demand(_ accounts: [BudgetAccount], tokens: Int64 = 0, micros: Int64) -> BudgetDemand {
        BudgetDemand(accounts: accounts, worstTokens: tokens, worstMicros: micros)
    }

    static let guests = BudgetAccount(
        scope: .guests, key: "guests", limits: [BudgetLimit(period: .day, unit: .micros, amount: 1000)])
    static let gateway = BudgetAccount(
        scope: .gateway, key: "gateway",
        limits: [
            BudgetLimit(period: .day, unit: .micros, amount: 5000),
            BudgetLimit(period: .day, unit: .tokens, amount: 100),
        ])

    @Test("a worst case that fits is reserved in every account; one that does not is refused with its scope")
    func reserves() throws {
        let keeper = InMemoryBudgetKeeper(calendar: .utc)
        let now = Self.at(Self.tehranNewYear)
        guard
            case .allowed(let hold?) = keeper.reserve(
                Self.demand([Self.guests, Self.gateway], tokens: 10, micros: 600), now: now)
        else {
            Issue.record("the first request fits")
            return
        }
        #expect(hold.entries.count == 3)
        // 600 in flight and 600 more would pass 1,000: refused for a second, as the first may give some back.
        #expect(
            keeper.reserve(Self.demand([Self.guests, Self.gateway], tokens: 10, micros: 600), now: now)
                == .refused(BudgetRefusal(scope: .guests, retryAfterSeconds: 1)))
        // All or nothing: the refused request left no reservation in the gateway's account.
        #expect(keeper.use(key: "gateway", period: .day, unit: .micros, now: now) == (0, 600))
        // The first used 250: settled, the room is back but for what it used.
        keeper.settle(hold, tokens: 7, micros: 250, now: now)
        keeper.settle(hold, tokens: 7, micros: 250, now: now)
        #expect(keeper.use(key: "guests", period: .day, unit: .micros, now: now) == (250, 0))
        #expect(keeper.use(key: "gateway", period: .day, unit: .tokens, now: now) == (7, 0))
        // 250 used and 800 more would pass 1,000: refused until the day's end (3.5 hours in UTC).
        #expect(
            keeper.reserve(Self.demand([Self.guests], micros: 800), now: now)
                == .refused(BudgetRefusal(scope: .guests, retryAfterSeconds: 12_600)))
        guard case .allowed(let last?) = keeper.reserve(Self.demand([Self.guests], micros: 750), now: now) else {
            Issue.record("750 fits beside 250")
            return
        }
        keeper.settle(last, tokens: 0, micros: 750, now: now)
        #expect(keeper.use(key: "guests", period: .day, unit: .micros, now: now) == (1000, 0))
        // The next day starts empty.
        guard
            case .allowed(.some) = keeper.reserve(
                Self.demand([Self.guests], micros: 1000), now: Self.at(Self.tehranNewYear + 12_600))
        else {
            Issue.record("a new day")
            return
        }
    }

    @Test("a request that started yesterday counts for yesterday, and holds its room until it ends")
    func periodRollover() throws {
        let keeper = InMemoryBudgetKeeper(calendar: .utc)
        let evening = Self.at(Self.tehranNewYear + 12_000)
        guard case .allowed(let hold?) = keeper.reserve(Self.demand([Self.guests], micros: 700), now: evening) else {
            Issue.record("fits")
            return
        }
        let morning = Self.at(Self.tehranNewYear + 13_000)
        #expect(keeper.use(key: "guests", period: .day, unit: .micros, now: morning) == (0, 0))
        #expect(
            keeper.reserve(Self.demand([Self.guests], micros: 400), now: morning)
                == .refused(BudgetRefusal(scope: .guests, retryAfterSeconds: 1)))
        keeper.settle(hold, tokens: 0, micros: 700, now: morning)
        #expect(keeper.use(key: "guests", period: .day, unit: .micros, now: morning) == (0, 0))
        guard case .allowed = keeper.reserve(Self.demand([Self.guests], micros: 1000), now: morning) else {
            Issue.record("yesterday's spending is not today's")
            return
        }
    }

    @Test("many requests at once never reserve more than the budget, and settle to exactly what they used")
    func concurrent() async {
        let keeper = InMemoryBudgetKeeper(calendar: .utc)
        let now = Self.at(Self.tehranNewYear)
        let account = BudgetAccount(
            scope: .gateway, key: "gateway", limits: [BudgetLimit(period: .day, unit: .micros, amount: 10_000)])
        let allowed = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<400 {
                group.addTask {
                    guard case .allowed(let hold?) = keeper.reserve(Self.demand([account], micros: 300), now: now)
                    else {
                        return false
                    }
                    let (_, inFlight) = keeper.use(key: "gateway", period: .day, unit: .micros, now: now)
                    #expect(inFlight <= 10_000)
                    keeper.settle(hold, tokens: 0, micros: 100, now: now)
                    return true
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        let (settled, inFlight) = keeper.use(key: "gateway", period: .day, unit: .micros, now: now)
        #expect(inFlight == 0)
        #expect(settled == Int64(allowed) * 100)
        // However the 400 interleave, the first 33 reservations fit (33 x 300 = 9,900).
        #expect(allowed >= 33)
        #expect(settled <= 10_000)
    }

    @Test("seeded sums count against the budget, as after a restart")
    func seeded() {
        let keeper = InMemoryBudgetKeeper(calendar: .utc)
        let now = Self.at(Self.tehranNewYear)
        keeper.seed(key: "guests", period: .day, unit: .micros, used: 900, now: now)
        #expect(
            keeper.reserve(Self.demand([Self.guests], micros: 200), now: now)
                == .refused(BudgetRefusal(scope: .guests, retryAfterSeconds: 12_600)))
    }
}
