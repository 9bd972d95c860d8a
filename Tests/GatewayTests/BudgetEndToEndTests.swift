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
