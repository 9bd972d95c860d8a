import Foundation
import MockUpstream
import Pricing
import TestSupport
import Testing
import TextGatewayClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The Swift client against a real gateway and mock upstream on loopback.
@Suite("TextGatewayClient against a live gateway", .serialized)
struct TextGatewayClientTests {
    @Test("process answers every task with its result, request id and usage", arguments: TextTask.allCases)
    func processEachTask(task: TextTask) async throws {
        try await ClientHarness.with { harness in
            let result = try await harness.client().process(task, text: sampleText(), tone: .formal)
            #expect(!result.result.isEmpty)
            #expect(!result.requestId.isEmpty)
            let usage = try #require(result.usage)
            #expect(usage.totalTokens == usage.inputTokens + usage.outputTokens)
            #expect(result.data == nil)
        }
    }

    @Test("format json decodes each task's typed data")
    func structuredData() async throws {
        try await ClientHarness.with { harness in
            let client = harness.client()
            for task in TextTask.allCases {
                let result = try await client.process(task, text: sampleText(), format: .json)
                switch (task, result.data) {
                case (.summarize, .summary(let summary)?): #expect(!summary.isEmpty)
                case (.rewrite, .text(let text)?): #expect(!text.isEmpty)
                case (.keyPoints, .points(let points)?): #expect((1...20).contains(points.count))
                case (.titles, .titles(let titles)?): #expect(titles.count == 10)
                default: Issue.record("\(task): unexpected data \(String(describing: result.data))")
                }
            }
        }
    }

    @Test("stream yields start, deltas that add up, then done with the full result")
    func streamOrder() async throws {
        try await ClientHarness.with { harness in
            var events: [StreamEvent] = []
            for try await event in harness.client().stream(.summarize, text: sampleText(directive: "[mock:deltas=4]")) {
                events.append(event)
            }
            guard case .start(let requestId)? = events.first else {
                Issue.record("first event is not start: \(events)")
                return
            }
            guard case .done(let result)? = events.last else {
                Issue.record("last event is not done: \(events)")
                return
            }
            let deltas = events.dropFirst().dropLast().compactMap { event -> (String, String)? in
                if case .delta(let delta, let text) = event { return (delta, text) }
                return nil
            }
            #expect(deltas.count == events.count - 2)
            #expect(deltas.count >= 2)
            #expect(deltas.map(\.0).joined() == deltas.last?.1)
            #expect(result.requestId == requestId)
            #expect(result.result == deltas.last?.1.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(result.usage != nil)
        }
    }

    @Test("a stream with format json ends with done carrying the typed data")
    func streamStructured() async throws {
        try await ClientHarness.with { harness in
            var deltas = 0
            var done: ProcessResult?
            for try await event in harness.client().stream(.titles, text: sampleText(), format: .json) {
                switch event {
                case .start: #expect(deltas == 0 && done == nil)
                case .delta: deltas += 1
                case .done(let result): done = result
                }
            }
            let result = try #require(done)
            #expect(deltas >= 1)
            guard case .titles(let titles)? = result.data else {
                Issue.record("done carries no titles: \(String(describing: result.data))")
                return
            }
            #expect(titles.count == 10)
            #expect(result.result.split(separator: "\n").count == 10)
        }
    }

    @Test("cancelling the consuming task cancels the transfer, and the gateway aborts upstream")
    func streamCancellation() async throws {
        try await ClientHarness.with { harness in
            let before = harness.mock.stats.cancelled
            let consumer = Task {
                var events: [StreamEvent] = []
                // Without a key: a keyed stream's answer is completed and kept whoever cancels.
                for try await event in harness.client().stream(
                    .rewrite, text: sampleText(directive: "[mock:latency-ms=60000]"), idempotencyKey: nil)
                {
                    events.append(event)
                }
                return events
            }
            // The upstream call is under way (the mock holds it for a minute before its first
            // byte, so only the cancel can end it while the test waits).
            await eventually("the upstream has the call") { harness.mock.stats.inFlight == 1 }
            consumer.cancel()
            // A cancelled iteration ends (as every AsyncThrowingStream's does) without a `done`.
            let events = (try? await consumer.value) ?? []
            #expect(!events.contains { if case .done = $0 { true } else { false } })
            await eventually("the upstream's call is cancelled and none is in flight") {
                harness.mock.stats.cancelled > before && harness.mock.stats.inFlight == 0
            }
        }
    }

    @Test("an error stream event is thrown as TextGatewayError")
    func streamError() async throws {
        try await ClientHarness.with { harness in
            var sawStart = false
            do {
                for try await event in harness.client().stream(
                    .summarize, text: sampleText(directive: "[mock:stream-error-after=1]"))
                {
                    if case .start = event { sawStart = true }
                }
                Issue.record("the stream ended without an error")
            } catch let error as TextGatewayError {
                #expect(sawStart)
                #expect(error.status >= 500)
                #expect(!error.code.isEmpty)
                #expect(!error.message.isEmpty)
            }
        }
    }

    @Test("gateway errors decode: text too short is 400 text_too_short with a message and request id")
    func errorDecoding() async throws {
        try await ClientHarness.with { harness in
            let error = await #expect(throws: TextGatewayError.self) {
                try await harness.client().process(.summarize, text: "کوتاه")
            }
            #expect(error?.status == 400)
            #expect(error?.code == "text_too_short")
            #expect(error?.message.isEmpty == false)
            #expect(error?.requestId?.isEmpty == false)

            // A stream refused before it starts throws the same error.
            await #expect(throws: TextGatewayError.self) {
                for try await _ in harness.client().stream(.summarize, text: "کوتاه") {}
            }

            let unauthorized = await #expect(throws: TextGatewayError.self) {
                try await harness.client(token: "tgk_wrong").usage()
            }
            #expect(unauthorized?.status == 401)
            #expect(unauthorized?.code == "unauthorized")
        }
    }

    @Test(
        "each call sends a key of its own; a call resumed with its key gets the kept answer, no second upstream call"
    )
    func idempotencyKey() async throws {
        try await ClientHarness.with { harness in
            let client = harness.client()
            let text = sampleText()
            let first = try await client.process(.summarize, text: text)
            let second = try await client.process(.summarize, text: text)
            #expect(first.requestId != second.requestId)
            #expect(harness.mock.stats.requests == 2)
            let key = UUID().uuidString
            let original = try await client.process(.summarize, text: text, idempotencyKey: key)
            let resumed = try await client.process(.summarize, text: text, idempotencyKey: key)
            #expect(resumed.requestId == original.requestId)
            #expect(resumed.result == original.result)
            #expect(harness.mock.stats.requests == 3)
            var events: [StreamEvent] = []
            for try await event in client.stream(.summarize, text: text, idempotencyKey: key + "-stream") {
                events.append(event)
            }
            var replayed: [StreamEvent] = []
            for try await event in client.stream(.summarize, text: text, idempotencyKey: key + "-stream") {
                replayed.append(event)
            }
            #expect(harness.mock.stats.requests == 4)
            #expect(replayed.count == 3)
            #expect(replayed.last == events.last)
            let job = try await client.submitJob(.summarize, text: text, idempotencyKey: key + "-job")
            let again = try await client.submitJob(.summarize, text: text, idempotencyKey: key + "-job")
            #expect(again.jobId == job.jobId)
        }
    }

    @Test("retryingBusy retries a 503 after Retry-After and then succeeds; .none throws it")
    func retryBusyUpstream() async throws {
        try await ClientHarness.with(configure: { $0.upstreamPolicy.retries = 0 }) { harness in
            let directive = "[mock:status=503,retry-after=1,fail-first=1]"
            let busy = await #expect(throws: TextGatewayError.self) {
                try await harness.client().process(.summarize, text: sampleText(directive: directive))
            }
            #expect(busy?.status == 503)
            #expect(busy?.code == "upstream_busy")
            #expect(busy?.retryAfter == 1)
        }
        try await ClientHarness.with(configure: { $0.upstreamPolicy.retries = 0 }) { harness in
            let directive = "[mock:status=503,retry-after=1,fail-first=1]"
            let client = harness.client(retry: .retryingBusy(maxAttempts: 3, maxDelay: .seconds(2)))
            let clock = ContinuousClock()
            let started = clock.now
            let result = try await client.process(.summarize, text: sampleText(directive: directive))
            #expect(!result.result.isEmpty)
            #expect(clock.now - started >= .milliseconds(900))
            #expect(harness.mock.stats.requests == 2)
        }
    }

    @Test("a 429 of the plan's rate limit carries Retry-After; retries stop at maxAttempts")
    func retryRateLimited() async throws {
        try await ClientHarness.with(plans: "pro:1:-:-") { harness in
            _ = try await harness.client().process(.titles, text: sampleText())
            let client = harness.client(retry: .retryingBusy(maxAttempts: 2, maxDelay: .milliseconds(200)))
            let clock = ContinuousClock()
            let started = clock.now
            let error = await #expect(throws: TextGatewayError.self) {
                try await client.process(.titles, text: sampleText())
            }
            #expect(error?.status == 429)
            #expect(error?.code == "rate_limited")
            #expect((error?.retryAfter ?? 0) >= 1)
            #expect(clock.now - started >= .milliseconds(200))
            #expect(harness.mock.stats.requests == 1)
        }
    }

    @Test("usage and history with a token, their cost and the caller's budgets; deleting a history item")
    func usageAndHistory() async throws {
        try await ClientHarness.with(
            plans: "pro:-:-:1000000:2/day",
            configure: { $0.prices = try? PriceList.parse("test-model=1/2", currency: .standard) }
        ) { harness in
            let client = harness.client()
            let first = try await client.process(.summarize, text: sampleText())
            let second = try await client.process(.rewrite, text: sampleText(), tone: .friendly)

            var page = try await client.history(limit: 20)
            await eventually("the history has both requests") {
                page = (try? await client.history(limit: 20)) ?? page
                return page.items.count == 2
            }
            #expect(page.items.map(\.id) == [second.requestId, first.requestId])
            #expect(page.items.first?.task == "rewrite")
            #expect(page.items.first?.tone == "friendly")
            #expect(page.items.first?.status == 200)

            let onePerPage = try await client.history(limit: 1)
            #expect(onePerPage.items.map(\.id) == [second.requestId])
            let cursor = try #require(onePerPage.nextCursor)
            let next = try await client.history(limit: 1, before: cursor)
            #expect(next.items.map(\.id) == [first.requestId])

            let usage = try await client.usage()
            #expect(usage.userId == "alice")
            #expect(usage.plan == "pro")
            #expect(usage.today.requests == 2)
            #expect(usage.today.totalTokens == (first.usage?.totalTokens ?? 0) + (second.usage?.totalTokens ?? 0))
            #expect(usage.limits.tokensPerDay == 1_000_000)
            #expect(usage.remaining.tokensToday == 1_000_000 - usage.today.totalTokens)
            // A micro-unit an input token and two an output one, at 1 and 2 units a million.
            let cost = page.items.compactMap(\.costMicros).reduce(0, +)
            #expect(page.items.allSatisfy { $0.costMicros == ($0.usage.map { $0.inputTokens + 2 * $0.outputTokens }) })
            #expect(usage.currency == "USD")
            #expect(usage.today.costMicros == cost)
            #expect(usage.month?.costMicros == cost)
            #expect(usage.last30Days?.costMicros == cost)
            let budget = try #require(usage.budgets?.first)
            #expect(budget.scope == "caller" && budget.period == "day" && budget.unit == "micros")
            #expect(budget.limit == 2_000_000 && budget.used == cost && budget.remaining == 2_000_000 - cost)

            try await client.deleteHistory(id: first.requestId)
            #expect(try await client.history().items.map(\.id) == [second.requestId])
            let missing = await #expect(throws: TextGatewayError.self) {
                try await client.deleteHistory(id: first.requestId)
            }
            #expect(missing?.status == 404)
        }
    }

    @Test("a job: submit, events until done, then job(id) succeeded with typed data")
    func jobLifecycle() async throws {
        try await ClientHarness.with { harness in
            let client = harness.client()
            let submission = try await client.submitJob(.keyPoints, text: sampleText(), format: .json)
            #expect(submission.status == .queued)
            var events: [JobEvent] = []
            for try await event in client.jobEvents(id: submission.jobId) { events.append(event) }
            guard case .done(let finished)? = events.last else {
                Issue.record("the last event is not done: \(events)")
                return
            }
            #expect(events.dropLast().allSatisfy { if case .progress = $0 { true } else { false } })
            #expect(finished.status == .succeeded)
            let job = try await client.job(id: submission.jobId)
            #expect(job.status == .succeeded)
            #expect(job.task == .keyPoints)
            #expect(job.result?.isEmpty == false)
            if case .points(let points)? = job.data {
                #expect(!points.isEmpty)
            } else {
                Issue.record("no points: \(String(describing: job.data))")
            }
            #expect(job.progress.done == job.progress.total)
            #expect(job.createdAt != nil)
        }
    }

    @Test("cancelJob cancels a running job, and its events end with an error")
    func jobCancellation() async throws {
        try await ClientHarness.with { harness in
            let client = harness.client()
            let submission = try await client.submitJob(
                .summarize, text: sampleText(directive: "[mock:latency-ms=5000]"))
            await eventually("the upstream has a call") { harness.mock.stats.inFlight >= 1 }
            _ = try await client.cancelJob(id: submission.jobId)
            var job = try await client.job(id: submission.jobId)
            await eventually("the job is cancelled") {
                job = (try? await client.job(id: submission.jobId)) ?? job
                return job.status == .cancelled
            }
            let error = await #expect(throws: TextGatewayError.self) {
                for try await _ in client.jobEvents(id: submission.jobId) {}
            }
            #expect(error?.code.isEmpty == false)
            let missing = await #expect(throws: TextGatewayError.self) { try await client.job(id: "no-such-job") }
            #expect(missing?.status == 404)
        }
    }
}
