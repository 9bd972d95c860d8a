import Access
import ChatAPI
import HTTPServer
import JSON
import Store
import Telemetry

/// `GET /api/usage`: the caller's use today and over the last 30 UTC days with any use,
/// its plan's limits and what is left of today's tokens (docs/api.md, "Usage and history").
struct UsageRoute: ResponseHandler {
    let usage: any UsageStore
    let plans: PlanCatalog
    let faults: StoreFaults
    let clock: @Sendable () -> Instant

    /// How many days back `days` reaches, today included.
    static let days: Int64 = 30

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let caller = try context.identifiedCaller()
        let plan = plans.plan(for: caller)
        let today = clock().utcDay
        let days: [DailyUsage]
        do {
            days = try await usage.dailyUsage(userID: caller.userID, fromDay: today - Self.days + 1)
        } catch {
            throw faults.unavailable(error)
        }
        let todayUsage =
            days.first { $0.day == today }
            ?? DailyUsage(userID: caller.userID, day: today, requests: 0, inputTokens: 0, outputTokens: 0)
        var body = JSONWriter(capacity: 256 + days.count * 96)
        body.object {
            $0.field("userId", caller.userID)
            $0.field("plan", plan.name)
            $0.field("today", object: { Self.write(todayUsage, into: &$0) })
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
            $0.field("days", array: days) { Self.write($1, into: &$0) }
        }
        return HTTPResponse(
            headers: ["Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"],
            body: .bytes(body.bytes))
    }

    private static func write(_ day: DailyUsage, into object: inout JSONWriter) {
        object.field("date", Timestamp.date(day: day.day))
        object.field("requests", day.requests)
        object.field("inputTokens", day.inputTokens)
        object.field("outputTokens", day.outputTokens)
        object.field("totalTokens", day.totalTokens)
    }
}
