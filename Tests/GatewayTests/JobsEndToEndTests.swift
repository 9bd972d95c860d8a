import HTTPClient
import JSON
import MockUpstream
import TestSupport
import Testing

@testable import Gateway
@testable import TextTasks

/// Long texts as jobs over a real SQLite file and the mock upstream: the calls a text of a
/// given length makes, each task's rounds, progress as events, cancellation, owners, caps.
@Suite("Jobs end to end: chunk, map, reduce, events, cancellation, owners", .serialized)
struct JobsEndToEndTests {
    static let alice = StoreEndToEndTests.alice
    static let bob = StoreEndToEndTests.bob

    /// `count` numbered Persian sentences (each one unique, so a test can find it upstream).
    static func longText(sentences count: Int, extra: String = "") -> String {
        (1...count).map {
            "این جملهٔ شمارهٔ \($0) از یک متن بلند آزمایشی است که برای سنجش تقسیم متن نوشته شده\(extra)."
        }
        .joined(separator: " ")
    }

    static func configure(_ configuration: inout GatewayConfiguration, chunkTokens: Int = 400, overlapTokens: Int = 0) {
        StoreEndToEndTests.configure(&configuration, path: storeDirectory() + "/jobs.sqlite")
        configuration.jobs.chunkTokens = chunkTokens
        configuration.jobs.overlapTokens = overlapTokens
    }

    static func submit(
        _ harness: GatewayHarness, task: String, text: String, format: String? = nil, token: String? = alice
    ) async throws -> HTTPClientResponse {
        var body = "{\"task\":\"\(task)\",\"text\":\(jsonString(text))"
        if let format { body += ",\"format\":\"\(format)\"" }
        body += "}"
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json")]
        if let token { headers += StoreEndToEndTests.bearer(token) }
        return try await harness.client.send(
            HTTPClientRequest(method: "POST", url: harness.base + "/api/jobs", headers: headers, body: Array(body.utf8))
        )
    }

    static func submitted(
        _ harness: GatewayHarness, task: String, text: String, format: String? = nil, token: String? = alice
    ) async throws -> String {
        let response = try await submit(harness, task: task, text: text, format: format, token: token)
        try #require(response.status == 202, "\(String(decoding: response.body, as: UTF8.self))")
        let body = try JSONValue.parse(response.body)
        #expect(body["status"]?.stringValue == "queued")
        let id = try #require(body["jobId"]?.stringValue)
        #expect(response.header("Location") == "/api/jobs/" + id)
        return id
    }

    static func job(_ harness: GatewayHarness, _ id: String, token: String? = alice) async throws -> JSONValue {
        let response = try await StoreEndToEndTests.get(harness, "/api/jobs/" + id, token: token)
        try #require(response.status == 200)
        return try JSONValue.parse(response.body)
    }

    /// Waits for job `id` to end; its last state.
    static func finished(_ harness: GatewayHarness, _ id: String, within seconds: Double = 30) async throws -> JSONValue
    {
        var last: JSONValue?
        await eventually("job \(id) ends; its last state: \(String(describing: last))", within: .seconds(seconds)) {
            last = try? await job(harness, id)
            let status = last?["status"]?.stringValue
            return status == "succeeded" || status == "failed" || status == "cancelled"
        }
        return try #require(last)
    }

    /// The chunks the gateway makes of `text` with the configuration's settings.
    static func chunks(_ text: String, _ configuration: GatewayConfiguration, overlap: Bool = true) -> [TextChunk] {
        TextChunker(
            budget: configuration.jobs.chunkCharacters, overlap: overlap ? configuration.jobs.overlapCharacters : 0
        )
        .chunks(of: TextChunker.clean(text))
    }

    @Test("a summary of n chunks whose partial answers fit one call makes exactly n + 1 calls, each chunk sent once")
    func callsForALength() async throws {
        try await GatewayHarness.with(configure: { Self.configure(&$0) }) { harness in
            let text = Self.longText(sentences: 60)
            let chunks = Self.chunks(text, harness.running.gateway.configuration)
            #expect(chunks.count > 3)
            let before = harness.mock.stats.requests
            let id = try await Self.submitted(harness, task: "summarize", text: text)
            let job = try await Self.finished(harness, id)
            #expect(job["status"]?.stringValue == "succeeded")
            #expect(job["result"]?.stringValue == MockBehaviour().content)
            #expect(job["progress"]?["done"]?.doubleValue == Double(chunks.count + 1))
            #expect(job["progress"]?["total"]?.doubleValue == Double(chunks.count + 1))
            #expect(harness.mock.stats.requests - before == chunks.count + 1)
            let sent = harness.mock.receivedUserTexts
            for chunk in chunks { #expect(sent.filter { $0.contains(chunk.text) }.count == 1) }
            #expect((job["usage"]?["totalTokens"]?.doubleValue ?? 0) > 0)
        }
    }

    @Test("partial answers that do not fit one call are combined in reduce rounds first; the total grows with them")
    func reduceRounds() async throws {
        // About 250 characters a call: two of the mock's answers fit, all of them do not.
        try await GatewayHarness.with(configure: { Self.configure(&$0, chunkTokens: 100) }) { harness in
            let text = Self.longText(sentences: 30)
            let chunks = Self.chunks(text, harness.running.gateway.configuration)
            let before = harness.mock.stats.requests
            let id = try await Self.submitted(harness, task: "key-points", text: text)
            let job = try await Self.finished(harness, id)
            #expect(job["status"]?.stringValue == "succeeded")
            let calls = harness.mock.stats.requests - before
            #expect(calls > chunks.count + 1)
            #expect(job["progress"]?["done"]?.doubleValue == Double(calls))
            #expect(job["progress"]?["total"]?.doubleValue == Double(calls))
            // Reduce calls carry earlier answers, labelled by part.
            #expect(
                harness.mock.receivedUserTexts.suffix(calls).contains {
                    $0.contains(MockBehaviour().content) && $0.contains("بخش ۲")
                })
        }
    }

    @Test("rewrite maps every chunk and puts the answers back together in order, with no overlap")
    func rewriteConcatenates() async throws {
        try await GatewayHarness.with(configure: { Self.configure(&$0, overlapTokens: 50) }) { harness in
            let text = Self.longText(sentences: 40)
            let chunks = Self.chunks(text, harness.running.gateway.configuration, overlap: false)
            let id = try await Self.submitted(harness, task: "rewrite", text: text, format: "json")
            let job = try await Self.finished(harness, id)
            let joined = Array(repeating: MockBehaviour().content, count: chunks.count).joined(separator: "\n\n")
            #expect(job["result"]?.stringValue == joined)
            #expect(job["data"]?["text"]?.stringValue == joined)
            #expect(job["progress"]?["done"]?.doubleValue == Double(chunks.count))
        }
    }

    @Test("titles come from the reduced summary: the last call is the titles prompt over the partial summaries")
    func titlesFromSummary() async throws {
        try await GatewayHarness.with(configure: { Self.configure(&$0) }) { harness in
            let id = try await Self.submitted(harness, task: "titles", text: Self.longText(sentences: 40))
            let job = try await Self.finished(harness, id)
            #expect(job["status"]?.stringValue == "succeeded")
            let last = String(decoding: harness.mock.lastRequestBody, as: UTF8.self)
            #expect(last.contains("۱۰ عنوان"))
            #expect(last.contains(jsonString(MockBehaviour().content).dropFirst().dropLast()))
            #expect(!last.contains("جملهٔ شمارهٔ"))
        }
    }

    @Test("progress streams as events: progress with done and total, then one done with the job")
    func events() async throws {
        try await GatewayHarness.with(configure: { Self.configure(&$0) }) { harness in
            let id = try await Self.submitted(harness, task: "summarize", text: Self.longText(sentences: 60))
            let response = try await StoreEndToEndTests.get(harness, "/api/jobs/\(id)/events")
            #expect(response.status == 200)
            #expect(response.header("Content-Type")?.hasPrefix("text/event-stream") == true)
            let events = String(decoding: response.body, as: UTF8.self).components(separatedBy: "\n\n").filter {
                $0.hasPrefix("event:")
            }
            let names = events.map { $0.split(separator: "\n")[0].dropFirst("event: ".count) }
            #expect(names.last == "done")
            #expect(names.dropLast().allSatisfy { $0 == "progress" })
            #expect(names.filter { $0 == "done" || $0 == "error" }.count == 1)
            let done = try JSONValue.parse(Array(events.last!.split(separator: "\n")[1].dropFirst("data: ".count).utf8))
            #expect(done["status"]?.stringValue == "succeeded")
            #expect(done["jobId"]?.stringValue == id)
        }
    }

    @Test("cancelling aborts the calls in flight upstream; the job ends cancelled and its events end with error")
    func cancellation() async throws {
        try await GatewayHarness.with(configure: { Self.configure(&$0) }) { harness in
            let text = Self.longText(sentences: 60, extra: " [mock:latency-ms=20000]")
            let id = try await Self.submitted(harness, task: "summarize", text: text)
            await eventually("the upstream has a call") { harness.mock.stats.inFlight >= 1 }
            let cancelledBefore = harness.mock.stats.cancelled
            let response = try await StoreEndToEndTests.delete(harness, "/api/jobs/" + id)
            #expect(response.status == 202)
            #expect(try JSONValue.parse(response.body)["status"]?.stringValue == "cancelled")
            await eventually("the upstream's call is cancelled and none is in flight") {
                harness.mock.stats.inFlight == 0 && harness.mock.stats.cancelled > cancelledBefore
            }
            let job = try await Self.job(harness, id)
            #expect(job["status"]?.stringValue == "cancelled")
            #expect(job["error"]?["code"]?.stringValue == "cancelled")
            let events = try await StoreEndToEndTests.get(harness, "/api/jobs/\(id)/events")
            #expect(
                String(decoding: events.body, as: UTF8.self).contains("event: error\ndata: {\"code\":\"cancelled\""))
            // Nothing more is asked for a cancelled job. A call never made marks no moment: the
            // workers are given a second of claim rounds to make one.
            let requests = harness.mock.stats.requests
            try await Task.sleep(for: .seconds(1))
            #expect(harness.mock.stats.requests == requests)
        }
    }

    @Test("a job is its owner's: another caller gets 404 for it, as for a missing one; a guest gets 401")
    func owners() async throws {
        try await GatewayHarness.with(configure: { Self.configure(&$0) }) { harness in
            let id = try await Self.submitted(harness, task: "summarize", text: Self.longText(sentences: 5))
            for path in [
                "/api/jobs/" + id, "/api/jobs/\(id)/events", "/api/jobs/" + String(repeating: "0", count: 32),
                "/api/jobs/not-an-id",
            ] {
                let response = try await StoreEndToEndTests.get(harness, path, token: Self.bob)
                #expect(response.status == 404, "\(path)")
                #expect(try JSONValue.parse(response.body)["code"]?.stringValue == "not_found")
            }
            #expect(try await StoreEndToEndTests.delete(harness, "/api/jobs/" + id, token: Self.bob).status == 404)
            #expect(try await StoreEndToEndTests.get(harness, "/api/jobs/" + id, token: nil).status == 401)
            #expect(
                try await Self.submit(harness, task: "summarize", text: Self.longText(sentences: 5), token: nil).status
                    == 401)
            #expect(try await Self.finished(harness, id)["status"]?.stringValue == "succeeded")
        }
    }

    @Test("input is checked as /api/process checks it, with JOB_MAX_CHARACTERS; a caller's jobs in flight are capped")
    func validationAndCap() async throws {
        try await GatewayHarness.with(configure: {
            Self.configure(&$0)
            $0.jobs.maxCharacters = 5_000
            $0.jobs.maxActivePerCaller = 2
        }) { harness in
            func code(_ response: HTTPClientResponse) throws -> String? {
                try JSONValue.parse(response.body)["code"]?.stringValue
            }
            let long = try await Self.submit(harness, task: "summarize", text: String(repeating: "الف ", count: 1_300))
            #expect(long.status == 413)
            #expect(try code(long) == "text_too_long")
            let short = try await Self.submit(harness, task: "summarize", text: "کوتاه")
            #expect(short.status == 400)
            #expect(try code(short) == "text_too_short")
            let task = try await Self.submit(harness, task: "translate", text: Self.longText(sentences: 3))
            #expect(try code(task) == "invalid_task")
            let format = try await Self.submit(
                harness, task: "summarize", text: Self.longText(sentences: 3), format: "xml")
            #expect(try code(format) == "invalid_format")

            let slow = Self.longText(sentences: 3, extra: " [mock:latency-ms=20000]")
            let first = try await Self.submitted(harness, task: "summarize", text: slow)
            let second = try await Self.submitted(harness, task: "summarize", text: slow)
            let third = try await Self.submit(harness, task: "summarize", text: slow)
            #expect(third.status == 429)
            #expect(try code(third) == "too_many_jobs")
            #expect(third.header("Retry-After") == "30")
            // Bob has jobs of his own to run.
            #expect(try await Self.submit(harness, task: "summarize", text: slow, token: Self.bob).status == 202)
            _ = try await StoreEndToEndTests.delete(harness, "/api/jobs/" + first)
            #expect(try await Self.submit(harness, task: "summarize", text: slow).status == 202)
            _ = try await StoreEndToEndTests.delete(harness, "/api/jobs/" + second)
        }
    }

    @Test("a chunk that still fails after the retries fails the job with its code; the usage so far stays")
    func failure() async throws {
        try await GatewayHarness.with(configure: {
            Self.configure(&$0)
            $0.jobs.concurrencyPerJob = 1
        }) { harness in
            // The last sentence (in the last chunk) makes the mock answer 400.
            let text = Self.longText(sentences: 60) + " پایان متن [mock:status=400]."
            let id = try await Self.submitted(harness, task: "summarize", text: text)
            let job = try await Self.finished(harness, id)
            #expect(job["status"]?.stringValue == "failed")
            #expect(job["error"]?["code"]?.stringValue == "upstream_error")
            #expect(job["result"] == .null)
            #expect((job["progress"]?["done"]?.doubleValue ?? 0) > 0)
            #expect((job["usage"]?["totalTokens"]?.doubleValue ?? 0) > 0)
        }
    }

    @Test("each answered chunk is charged to the caller's day; the job leaves one history row")
    func usageAndHistory() async throws {
        try await GatewayHarness.with(configure: { Self.configure(&$0) }) { harness in
            let id = try await Self.submitted(harness, task: "summarize", text: Self.longText(sentences: 40))
            let job = try await Self.finished(harness, id)
            let total = try #require(job["usage"]?["totalTokens"]?.doubleValue)
            var usage: JSONValue?
            await eventually("today's usage counts the job's \(total) tokens: \(String(describing: usage))") {
                usage = try? StoreEndToEndTests.json(try await StoreEndToEndTests.get(harness, "/api/usage"))
                return usage?["today"]?["totalTokens"]?.doubleValue == total
            }
            try await StoreEndToEndTests.waitForHistory(harness, count: 1)
            let history = try StoreEndToEndTests.json(try await StoreEndToEndTests.get(harness, "/api/history"))
            #expect(history["items"]?.arrayValue?.first?["route"]?.stringValue == "/api/jobs")
        }
    }

    @Test("without an upstream key a submitted job is 500 not_configured, as /api/process is; bad input is still 400")
    func notConfigured() async throws {
        try await GatewayHarness.with(configure: {
            Self.configure(&$0)
            $0.apiKey = nil
        }) { harness in
            let response = try await Self.submit(harness, task: "summarize", text: Self.longText(sentences: 3))
            #expect(response.status == 500)
            let body = try Body(response)
            #expect(body.code == "not_configured")
            #expect(body.message == "کلید API روی سرور تنظیم نشده است.")
            #expect(try await Self.submit(harness, task: "summarize", text: "کوتاه").status == 400)
            #expect(try await Self.submit(harness, task: "translate", text: Self.longText(sentences: 3)).status == 400)
            #expect(harness.mock.stats.requests == 0)
        }
    }
}
