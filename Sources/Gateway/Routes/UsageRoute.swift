import Access
import ChatAPI
import HTTPServer
import JSON
import Pricing
import Store
import Telemetry

/// `GET /api/usage`: the caller's use today, this month and over the last 30 UTC days, in
/// tokens and cost, its plan's limits and budgets, and what is left of them (docs/api.md,
/// "Usage and history").
struct UsageRoute: ResponseHandler {
    let usage: any UsageStore
    let plans: PlanCatalog
    let faults: StoreFaults
    let clock: @Sendable () -> Instant
    /// The budgets' policy (the caller's own budgets, and their keeper); nil when none is set.
    var budgets: BudgetMiddleware? = nil
    /// The currency costs are in; nil without `PRICES` (costs are then 0).
    var currency: Currency? = nil

    /// How many days back `days` reaches, today included.
    static let days: Int64 = 30

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let caller = try context.identifiedCaller()
        let plan = plans.plan(for: caller)
        let now = clock()
        let today = now.utcDay
        let date = RFC3339.civilDate(daysSinceEpoch: Int(today))
        let monthStart = Int64(RFC3339.daysSinceEpoch(year: date.year, month: date.month, day: 1))
        let from = min(monthStart, today - Self.days + 1)
        let stored: [DailyUsage]
        do {
            stored = try await usage.dailyUsage(userID: caller.userID, fromDay: from)
        } catch {
            throw faults.unavailable(error)
        }
        let uses = await budgetUses(caller, now: now)
        let days = stored.filter { $0.day > today - Self.days }
        let todayUsage = Self.total(stored.filter { $0.day == today }, day: today, userID: caller.userID)
        let month = Self.total(stored.filter { $0.day >= monthStart }, day: monthStart, userID: caller.userID)
        let last30 = Self.total(days, day: today - Self.days + 1, userID: caller.userID)
        var body = JSONWriter(capacity: 512 + days.count * 112 + uses.count * 160)
        body.object {
            $0.field("userId", caller.userID)
            $0.field("plan", plan.name)
            $0.field("currency", currency?.code)
            $0.field("today", object: { Self.write(todayUsage, into: &$0) })
            $0.field("month", object: { Self.write(month, into: &$0) })
            $0.field("last30Days", object: { Self.write(last30, into: &$0) })
            $0.field(
                "limits",
                object: {
                    $0.field("requestsPerMinute", plan.requestsPerMinute)
                    $0.field("concurrentRequests", plan.concurrentRequests)
                    $0.field("tokensPerDay", plan.tokensPerDay)
                })
            $0.field(
                "remaining",
                object: {
                    $0.field("tokensToday", plan.tokensPerDay.map { max(0, $0 - todayUsage.totalTokens) })
                })
            $0.field("budgets", array: uses) { Self.write($1, now: now, into: &$0) }
            $0.field("days", array: days) { Self.write($1, into: &$0) }
        }
        return HTTPResponse(
            headers: ["Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"],
            body: .bytes(body.bytes))
    }

    /// The caller's own budgets now; none when it has none, or when they cannot be read (the
    /// rest of the answer still comes).
    private func budgetUses(_ caller: Caller, now: Instant) async -> [BudgetUse] {
        guard let budgets else { return [] }
        let accounts = budgets.ownAccounts(of: caller)
        guard !accounts.isEmpty else { return [] }
        return (try? await budgets.keeper.use(of: accounts, now: now)) ?? []
    }

    /// `days` added up, dated `day`.
    private static func total(_ days: [DailyUsage], day: Int64, userID: String) -> DailyUsage {
        var total = DailyUsage(userID: userID, day: day, requests: 0, inputTokens: 0, outputTokens: 0)
        for part in days {
            total.requests += part.requests
            total.inputTokens += part.inputTokens
            total.outputTokens += part.outputTokens
            total.costMicros += part.costMicros
        }
        return total
    }

    private static func write(_ day: DailyUsage, into object: inout JSONWriter) {
        object.field("date", Timestamp.date(day: day.day))
        object.field("requests", day.requests)
        object.field("inputTokens", day.inputTokens)
        object.field("outputTokens", day.outputTokens)
        object.field("totalTokens", day.totalTokens)
        object.field("costMicros", Int(day.costMicros))
    }

    static func write(_ use: BudgetUse, now: Instant, into object: inout JSONWriter) {
        object.field("scope", use.scope.rawValue)
        object.field("period", use.limit.period.rawValue)
        object.field("unit", use.limit.unit.rawValue)
        object.field("limit", Int(use.limit.amount))
        object.field("used", Int(use.used))
        object.field("held", Int(use.held))
        object.field("remaining", Int(use.remaining))
        object.field("fractionUsed", use.fraction)
        let reset = Int64((now.secondsSinceEpoch * 1000).rounded(.down)) + use.resetSeconds * 1000
        object.field("resetsAt", Timestamp.iso8601(milliseconds: reset))
    }
}
