import Access
import Gateway
import HTTPClient
import JSON
import Pricing
import TestSupport
import Testing

@testable import Telemetry

/// Budgets through a running gateway and the mock upstream: a request whose worst case has no
/// room is refused before any upstream call, with its budget's scope and the period's end.
@Suite("Budgets end to end: the worst case reserved before the call, refused with its scope")
struct BudgetEndToEndTests {
    /// 2026-12-31T20:30:00Z: 12,600 seconds before UTC midnight.
    static let evening = Instant(secondsSinceEpoch: 1_798_749_000)

    @Test(
        "all guests together: served while their worst case fits, then 429 budget_exceeded, scope guests, to midnight"
    )
    func guests() async throws {
        try await GatewayHarness.with(
            configure: {
                $0.prices = try? PriceList.parse("test-model=1/2", currency: .standard)
                // 3,000 micro-units a day: a request's worst case is 1,200 answer tokens at 2 (2,400) and its input.
                $0.budgets = BudgetSettings(guests: [BudgetLimit(period: .day, unit: .micros, amount: 3000)])
            }, clock: { Self.evening }
        ) { harness in
            var served = 0
            var refusal: HTTPClientResponse?
            for _ in 0..<50 {
                let response = try await harness.process(task: "summarize", text: ProcessEndToEndTests.sample)
                if response.status == 200 {
                    served += 1
                    // The request ends (its budget settled, then its log line) after its answer is sent.
                    let count = served
                    await eventually("request \(count)'s log line") {
                        harness.logs.lines.count { $0.contains("path=/api/process") && $0.contains("outcome=done") }
                            == count
                    }
                    continue
                }
                refusal = response
                break
            }
            let refused = try #require(refusal)
            #expect(served >= 1)
            #expect(refused.status == 429)
            #expect(refused.header("Retry-After") == "12600")
            let body = try JSONValue.parse(refused.body)
            #expect(body["code"]?.stringValue == "budget_exceeded")
            #expect(body["scope"]?.stringValue == "guests")
            // No upstream call for the refused one.
            #expect(harness.mock.receivedUserTexts.count == served)
            await eventually("the refusal's log line") {
                harness.logs.lines.contains { $0.contains("status=429") && $0.contains("outcome=budget_exceeded") }
            }
        }
    }

    @Test(
        "a caller sees its spending and budgets (usage, history, Budget-* fields); the operator sees the shared ones"
    )
    func visible() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        try await GatewayHarness.with(
            configure: {
                StoreEndToEndTests.configure(&$0, path: path, plans: "pro:-:-:1000000:1/day+5000tokens/month")
                $0.prices = try? PriceList.parse("test-model=1/2", currency: .standard)
                $0.budgets = BudgetSettings(gateway: [BudgetLimit(period: .day, unit: .micros, amount: 10_000_000)])
                $0.adminToken = AdminConsoleTests.adminToken
            }, clock: { Self.evening }
        ) { harness in
            let response = try await harness.process(
                task: "summarize", text: ProcessEndToEndTests.sample,
                headers: StoreEndToEndTests.bearer(StoreEndToEndTests.alice))
            #expect(response.status == 200)
            // Of the plan's two budgets, the month's 5,000 tokens has the least share left.
            #expect(response.header("Budget-Unit") == "tokens")
            #expect(response.header("Budget-Limit") == "5000")
            let remaining = try #require(response.header("Budget-Remaining").flatMap { Int($0) })
            #expect(remaining > 0 && remaining < 5000)
            #expect(response.header("Budget-Reset") == "12600")
            try await StoreEndToEndTests.waitForHistory(harness, count: 1)

            let item = try #require(
                try StoreEndToEndTests.json(try await StoreEndToEndTests.get(harness, "/api/history"))["items"]?
                    .arrayValue?.first)
            let input = try #require(item["usage"]?["inputTokens"]?.intValue)
            let output = try #require(item["usage"]?["outputTokens"]?.intValue)
            // 1 and 2 units a million tokens: a micro-unit an input token, two an output one.
            let cost = input + 2 * output
            #expect(item["costMicros"]?.intValue == cost)

            let usage = try StoreEndToEndTests.json(try await StoreEndToEndTests.get(harness, "/api/usage"))
            #expect(usage["currency"]?.stringValue == "USD")
            for period in ["today", "month", "last30Days"] {
                #expect(usage[period]?["costMicros"]?.intValue == cost, "\(period)")
                #expect(usage[period]?["totalTokens"]?.intValue == input + output, "\(period)")
            }
            #expect(usage["month"]?["date"]?.stringValue == "2026-12-01")
            let budgets = try #require(usage["budgets"]?.arrayValue)
            #expect(budgets.count == 2)
            let money = try #require(budgets.first { $0["unit"]?.stringValue == "micros" })
            #expect(money["scope"]?.stringValue == "caller")
            #expect(money["period"]?.stringValue == "day")
            #expect(money["limit"]?.intValue == 1_000_000)
            #expect(money["used"]?.intValue == cost)
            #expect(money["held"]?.intValue == 0)
            #expect(money["remaining"]?.intValue == 1_000_000 - cost)
            #expect(money["resetsAt"]?.stringValue == "2027-01-01T00:00:00.000Z")
            let tokens = try #require(budgets.first { $0["unit"]?.stringValue == "tokens" })
            #expect(tokens["period"]?.stringValue == "month")
            #expect(tokens["used"]?.intValue == input + output)

            // The operator: the gateway's budget and the plans' own, and the share as a gauge.
            let admin = try await AdminConsoleTests.json(harness, "/api/admin/budgets")
            #expect(admin["currency"]?.stringValue == "USD")
            let shared = try #require(admin["budgets"]?.arrayValue)
            #expect(shared.count == 1)
            #expect(shared.first?["scope"]?.stringValue == "gateway")
            #expect(shared.first?["used"]?.intValue == cost)
            #expect(
                admin["plans"]?.arrayValue?.first?["budgets"]?.arrayValue?.compactMap { $0["limit"]?.intValue }
                    == [1_000_000, 5000])
            let share = Double(cost) / 10_000_000
            await eventually("the gateway budget's share in /metrics", within: .seconds(20), every: .milliseconds(200))
            {
                guard
                    let metrics = try? await harness.client.send(HTTPClientRequest(url: harness.base + "/metrics"))
                else { return false }
                let prefix = #"textgateway_budget_used_ratio{scope="gateway",period="day",unit="micros"} "#
                let line = String(decoding: metrics.body, as: UTF8.self).split(separator: "\n").first {
                    $0.hasPrefix(prefix)
                }
                return line.flatMap { Double($0.dropFirst(prefix.count)) }.map { abs($0 - share) < 1e-12 } == true
            }
        }
    }

    @Test("a short text's worst case counts the gateway's prompt around it: no answer uses more than it reserved")
    func shortTexts() async throws {
        try await GatewayHarness.with(
            configure: {
                StoreEndToEndTests.configure(
                    &$0, path: storeDirectory() + "/gateway.sqlite", plans: "pro:-:-:-:3000tokens/day")
                $0.maxTokens = 50
            }, clock: { Self.evening }
        ) { harness in
            var used = 0
            var served = 0
            for index in 0..<40 {
                for format in [nil, "json"] {
                    var body = #"{"task":"summarize","text":"این یک متن کوتاه آزمایشی است \#(index)""#
                    if let format { body += #","format":"\#(format)""# }
                    let response = try await harness.client.send(
                        HTTPClientRequest(
                            method: "POST", url: harness.base + "/api/process",
                            headers: [("Content-Type", "application/json")]
                                + StoreEndToEndTests.bearer(StoreEndToEndTests.alice),
                            body: Array((body + "}").utf8)))
                    guard response.status == 200 else {
                        #expect(response.status == 429)
                        #expect(try JSONValue.parse(response.body)["scope"]?.stringValue == "caller")
                        continue
                    }
                    // One request at a time: what it reserved is the budget less what the ones
                    // before it used and what was left once it was admitted.
                    let remaining = try #require(response.header("Budget-Remaining").flatMap { Int($0) })
                    let reserved = 3000 - used - remaining
                    let usage = try #require(JSONValue.parse(response.body)["usage"]?["totalTokens"]?.intValue)
                    #expect(usage <= reserved, "\(format ?? "text"): used \(usage), reserved \(reserved)")
                    served += 1
                    used += usage
                    let count = served
                    await eventually("request \(count)'s log line") {
                        harness.logs.lines.count { $0.contains("path=/api/process") && $0.contains("status=200") }
                            == count
                    }
                }
            }
            #expect(served >= 2)
            #expect(used <= 3000, "\(served) answers used \(used) tokens of 3,000")
        }
    }

    @Test("/v1 reserves n answers of max_tokens: a request for four is refused where one fits, scope gateway")
    func choices() async throws {
        try await GatewayHarness.with(
            configure: {
                $0.maxTokens = 1000
                $0.maxChoices = 4
                $0.budgets = BudgetSettings(gateway: [BudgetLimit(period: .month, unit: .tokens, amount: 3000)])
            }, clock: { Self.evening }
        ) { harness in
            func post(n: Int) async throws -> HTTPClientResponse {
                let body = #"{"model":"default","n":\#(n),"messages":[{"role":"user","content":"سلام"}]}"#
                return try await harness.client.send(
                    HTTPClientRequest(
                        method: "POST", url: harness.base + "/v1/chat/completions",
                        headers: [("Content-Type", "application/json")], body: Array(body.utf8)))
            }
            let four = try await post(n: 4)
            #expect(four.status == 429)
            let error = try JSONValue.parse(four.body)["error"]
            #expect(error?["code"]?.stringValue == "budget_exceeded")
            #expect(error?["type"]?.stringValue == "rate_limit_error")
            #expect(error?["scope"]?.stringValue == "gateway")
            // To the month's end: 2027-01-01T00:00:00Z.
            #expect(four.header("Retry-After") == "12600")
            #expect(harness.mock.receivedUserTexts.isEmpty)
            let one = try await post(n: 1)
            #expect(one.status == 200)
        }
    }

    @Test("a restart keeps the budgets' sums: the store's rows of the day start them where they were")
    func restart() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        func configure(_ configuration: inout GatewayConfiguration) {
            configuration.database = .sqlite(path: path)
            configuration.prices = try? PriceList.parse("test-model=1/2", currency: .standard)
            configuration.budgets = BudgetSettings(guests: [BudgetLimit(period: .day, unit: .micros, amount: 3000)])
        }
        var served = 0
        try await GatewayHarness.with(configure: configure, clock: { Self.evening }) { harness in
            for _ in 0..<50 {
                let response = try await harness.process(task: "summarize", text: ProcessEndToEndTests.sample)
                guard response.status == 200 else { break }
                served += 1
                let count = served
                await eventually("request \(count)'s log line") {
                    harness.logs.lines.count { $0.contains("path=/api/process") && $0.contains("outcome=done") }
                        == count
                }
            }
        }
        #expect(served >= 1)
        // The same store, a new process: the day's spending is read back, so its first request is
        // refused until midnight rather than served as if nothing had been spent.
        try await GatewayHarness.with(configure: configure, clock: { Self.evening }) { harness in
            let response = try await harness.process(task: "summarize", text: ProcessEndToEndTests.sample)
            #expect(response.status == 429)
            #expect(response.header("Retry-After") == "12600")
            #expect(harness.mock.receivedUserTexts.isEmpty)
        }
    }

    @Test("a job's chunks each reserve before their call: the job ends budget_exceeded, never past the budget")
    func jobChunks() async throws {
        try await GatewayHarness.with(configure: {
            JobsEndToEndTests.configure(&$0)
            $0.jobs.concurrencyPerJob = 1
            $0.maxTokens = 50
            $0.budgets = BudgetSettings(gateway: [BudgetLimit(period: .day, unit: .tokens, amount: 1500)])
        }) { harness in
            let text = JobsEndToEndTests.longText(sentences: 60)
            let chunks = JobsEndToEndTests.chunks(text, harness.running.gateway.configuration)
            // The submission makes no upstream call, so it reserves nothing: each chunk does.
            let id = try await JobsEndToEndTests.submitted(harness, task: "summarize", text: text)
            let job = try await JobsEndToEndTests.finished(harness, id)
            #expect(job["status"]?.stringValue == "failed")
            #expect(job["error"]?["code"]?.stringValue == "budget_exceeded")
            let calls = harness.mock.stats.requests
            #expect(calls >= 1 && calls < chunks.count + 1)
            // What the answered chunks used stays within the day's 1,500 tokens.
            let used = try #require(job["usage"]?["totalTokens"]?.doubleValue)
            #expect(used > 0 && used <= 1500)
        }
    }
}
