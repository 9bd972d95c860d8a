import EventLoop
import HTTPClient
import JSON
import Store
import Synchronization
import TestSupport
import Testing

@testable import Gateway

/// What a kept answer may hold, and for how long (docs/api.md, "Retries"; docs/deployment.md,
/// "What is kept where"), and which retries it may answer.
extension IdempotencyScenarios {
    /// The scope and key of every answer the SQLite store at `path` holds, expired or not
    /// (read from the file itself).
    static func keptRows(_ path: String) async throws -> [String] {
        let pool = try BlockingPool(threadCount: 1, name: "idem-test")
        let store = try await SQLiteStore.open(path: path, pool: pool, readOnly: true)
        let rows = Mutex<[String]>([])
        do {
            try await store.forEachKeptIdempotencyKey(nowMilliseconds: 0) { scope, key in
                rows.withLock { $0.append(scope + " " + key) }
            }
        } catch {
            await store.close()
            await pool.shutdown()
            throw error
        }
        await store.close()
        await pool.shutdown()
        return rows.withLock { $0 }
    }

    /// The `/v1` error's code.
    static func openAICode(_ response: HTTPClientResponse) -> String? {
        (try? JSONValue.parse(response.body))?["error"]?["code"]?.stringValue
    }

    /// A retry that asks for the other form of the answer (a stream where the first asked for
    /// a whole body, or the reverse; by `"stream"` or, on `/api/process`, by `Accept`) is
    /// `422 idempotency_key_reused` without an upstream call; in its own form it is replayed.
    static func streamForm(_ harness: GatewayHarness) async throws {
        let accept: [(name: String, value: String)] = [("Accept", "text/event-stream")]
        let before = harness.mock.stats.requests

        let wholeKey = key()
        let whole = body(sample + " whole")
        let first = try await post(harness, whole, key: wholeKey)
        #expect(first.status == 200)
        #expect(first.header("Content-Type")?.hasPrefix("application/json") == true)
        for (retry, headers) in [(whole, accept), (body(sample + " whole", stream: true), [])] {
            let response = try await post(harness, retry, key: wholeKey, headers: headers)
            #expect(response.status == 422)
            #expect(code(response) == "idempotency_key_reused")
        }

        let streamKey = key()
        let streamed = body(sample + " streamed [mock:deltas=3]")
        let original = try await post(harness, streamed, key: streamKey, headers: accept)
        #expect(original.status == 200)
        #expect(original.header("Content-Type")?.hasPrefix("text/event-stream") == true)
        let asWhole = try await post(harness, streamed, key: streamKey)
        #expect(asWhole.status == 422)
        #expect(code(asWhole) == "idempotency_key_reused")
        let again = try await post(harness, streamed, key: streamKey, headers: accept)
        #expect(again.status == 200)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.header("Content-Type")?.hasPrefix("text/event-stream") == true)
        #expect(SSE.events(again.body).last?.data == SSE.events(original.body).last?.data)

        for stream in [false, true] {
            let key = key()
            func chat(_ stream: Bool) -> String {
                #"{"model":"fast","stream":\#(stream),"messages":[{"role":"user","content":"form \#(key)"}]}"#
            }
            #expect(try await post(harness, chat(stream), key: key, path: "/v1/chat/completions").status == 200)
            let other = try await post(harness, chat(!stream), key: key, path: "/v1/chat/completions")
            #expect(other.status == 422)
            #expect(openAICode(other) == "idempotency_key_reused")
        }
        #expect(harness.mock.stats.requests == before + 4)
    }

    /// Sends the retry until one is answered from the store (logged `replayed`, not `joined`
    /// to the first while its answer is written); a test issue at the caller's line when none is.
    static func waitUntilKept(
        _ harness: GatewayHarness, _ body: String, key: String, requestID: String,
        headers: [(name: String, value: String)], sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await eventually(
            "a retry of request \(requestID) is replayed", within: .seconds(10), sourceLocation: sourceLocation
        ) {
            _ = try? await post(harness, body, key: key, headers: headers)
            return harness.logs.lines.contains {
                $0.contains("request_id=\(requestID)") && $0.contains("idempotency=replayed")
            }
        }
    }

    /// `DELETE /api/history/{id}` takes the answer kept for the request's key with its row;
    /// `DELETE /api/history` every answer kept for the caller. A retry then runs again.
    static func deleteForgets(_ harness: GatewayHarness) async throws {
        let auth = StoreEndToEndTests.bearer(alice)
        var requests: [(key: String, body: String, id: String)] = []
        for index in 0..<3 {
            let key = key()
            let id = "forget-\(index)-" + key
            let body = body(sample + " forget \(index) \(key)")
            let first = try await post(harness, body, key: key, headers: auth + [("X-Request-Id", id)])
            #expect(first.status == 200)
            await waitUntilKept(harness, body, key: key, requestID: id, headers: auth)
            await eventually("the history has request \(id)") {
                (try? await StoreEndToEndTests.get(harness, "/api/history/" + id))?.status == 200
            }
            requests.append((key, body, id))
        }
        // Another caller cannot delete them.
        let bobs = try await StoreEndToEndTests.delete(
            harness, "/api/history/" + requests[0].id, token: StoreEndToEndTests.bob)
        #expect(bobs.status == 404)

        let deleted = try await StoreEndToEndTests.delete(harness, "/api/history/" + requests[0].id)
        #expect(deleted.status == 204)
        #expect(try await StoreEndToEndTests.get(harness, "/api/history/" + requests[0].id).status == 404)
        var calls = harness.mock.stats.requests
        let rerun = try await post(harness, requests[0].body, key: requests[0].key, headers: auth)
        #expect(rerun.status == 200)
        #expect(rerun.header("Idempotent-Replayed") == nil)
        #expect(rerun.header("X-Request-Id") != requests[0].id)
        #expect(harness.mock.stats.requests == calls + 1)
        // The others are kept.
        let kept = try await post(harness, requests[1].body, key: requests[1].key, headers: auth)
        #expect(kept.header("Idempotent-Replayed") == "true")
        #expect(kept.header("X-Request-Id") == requests[1].id)

        #expect(try await StoreEndToEndTests.delete(harness, "/api/history").status == 204)
        calls = harness.mock.stats.requests
        for request in requests.dropFirst() {
            let again = try await post(harness, request.body, key: request.key, headers: auth)
            #expect(again.status == 200)
            #expect(again.header("Idempotent-Replayed") == nil)
        }
        #expect(harness.mock.stats.requests == calls + 2)
    }
}

@Suite("Idempotency-Key: what a kept answer holds, for how long, and for which retry", .serialized)
struct IdempotencyPrivacyTests {
    static let window: Duration = .seconds(120)

    static func configure(_ configuration: inout GatewayConfiguration, path: String?, results: Bool) {
        OpenAIEndToEndTests.configure(&configuration)
        if let path { configuration.database = .sqlite(path: path) }
        configuration.historyStoresResults = results
        configuration.idempotencyRetryWindow = Self.window
        configuration.idempotencyPurgeInterval = .milliseconds(20)
    }

    @Test(
        "HISTORY_STORE_RESULTS=off: an answer is replayed within the retry window, then purged, and a retry runs again",
        arguments: [true, false])
    func retryWindow(sqlite: Bool) async throws {
        let clock = TestClock()
        let path = storeDirectory() + "/gateway.sqlite"
        try await GatewayHarness.with(
            configure: { Self.configure(&$0, path: sqlite ? path : nil, results: false) }, clock: { clock.now }
        ) { harness in
            let key = IdempotencyScenarios.key()
            let body = IdempotencyScenarios.body(IdempotencyScenarios.sample + " window")
            #expect(try await IdempotencyScenarios.post(harness, body, key: key).status == 200)
            let calls = harness.mock.stats.requests
            clock.advance(119)
            let within = try await IdempotencyScenarios.post(harness, body, key: key)
            #expect(within.header("Idempotent-Replayed") == "true")
            #expect(harness.mock.stats.requests == calls)
            if sqlite {
                await eventually("one answer is kept") { (try? await IdempotencyScenarios.keptRows(path))?.count == 1 }
            }
            clock.advance(1)
            if sqlite {
                // The purge runs on its own: the answer leaves the file, not only the replies.
                await eventually("no answer is kept") {
                    (try? await IdempotencyScenarios.keptRows(path))?.isEmpty == true
                }
            }
            let after = try await IdempotencyScenarios.post(harness, body, key: key)
            #expect(after.status == 200)
            #expect(after.header("Idempotent-Replayed") == nil)
            #expect(harness.mock.stats.requests == calls + 1)
        }
    }

    @Test("a job's answer (its id), and with HISTORY_STORE_RESULTS=on every answer, live IDEMPOTENCY_TTL_SECONDS")
    func timeToLive() async throws {
        let clock = TestClock()
        try await GatewayHarness.with(
            configure: { Self.configure(&$0, path: storeDirectory() + "/gateway.sqlite", results: true) },
            clock: { clock.now }
        ) { harness in
            let key = IdempotencyScenarios.key()
            let body = IdempotencyScenarios.body(IdempotencyScenarios.sample + " kept")
            #expect(try await IdempotencyScenarios.post(harness, body, key: key).status == 200)
            clock.advance(3600)
            let later = try await IdempotencyScenarios.post(harness, body, key: key)
            #expect(later.header("Idempotent-Replayed") == "true")
        }
        try await GatewayHarness.with(
            configure: {
                JobsEndToEndTests.configure(&$0)
                $0.historyStoresResults = false
                $0.idempotencyRetryWindow = Self.window
            },
            clock: { clock.now }
        ) { harness in
            let key = IdempotencyScenarios.key()
            let auth = StoreEndToEndTests.bearer(IdempotencyScenarios.alice)
            let body = "{\"task\":\"summarize\",\"text\":\(jsonString(JobsEndToEndTests.longText(sentences: 40)))}"
            let first = try await IdempotencyScenarios.post(harness, body, key: key, path: "/api/jobs", headers: auth)
            #expect(first.status == 202)
            clock.advance(3600)
            let again = try await IdempotencyScenarios.post(harness, body, key: key, path: "/api/jobs", headers: auth)
            #expect(again.status == 200)
            #expect(again.body == first.body)
        }
    }

    @Test("a retry asking for a stream where the first asked for a whole body, or the reverse, is 422")
    func streamForm() async throws {
        try await GatewayHarness.with(configure: { Self.configure(&$0, path: nil, results: false) }) { harness in
            try await IdempotencyScenarios.streamForm(harness)
        }
        let path = storeDirectory() + "/gateway.sqlite"
        try await GatewayHarness.with(configure: { Self.configure(&$0, path: path, results: false) }) { harness in
            try await IdempotencyScenarios.streamForm(harness)
        }
    }

    @Test("DELETE /api/history/{id} removes the request's kept answer; DELETE /api/history all of the caller's")
    func deleteForgets() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        try await GatewayHarness.with(configure: {
            StoreEndToEndTests.configure(&$0, path: path)
            $0.historyStoresResults = true
        }) { harness in
            try await IdempotencyScenarios.deleteForgets(harness)
        }
    }

    @Test("IDEMPOTENCY_RETRY_WINDOW_SECONDS bounds an answer's time with HISTORY_STORE_RESULTS=off, and only then")
    func settings() throws {
        let defaults = try GatewayConfiguration(environment: [:])
        #expect(defaults.idempotencyRetryWindow == .seconds(300))
        #expect(!defaults.historyStoresResults)
        #expect(defaults.idempotencyAnswerTimeToLive == .seconds(300))
        let set = try GatewayConfiguration(environment: ["IDEMPOTENCY_RETRY_WINDOW_SECONDS": "900"])
        #expect(set.idempotencyAnswerTimeToLive == .seconds(900))
        let shorterTTL = try GatewayConfiguration(environment: [
            "IDEMPOTENCY_RETRY_WINDOW_SECONDS": "900", "IDEMPOTENCY_TTL_SECONDS": "120",
        ])
        #expect(shorterTTL.idempotencyAnswerTimeToLive == .seconds(120))
        let results = try GatewayConfiguration(environment: ["HISTORY_STORE_RESULTS": "on"])
        #expect(results.idempotencyAnswerTimeToLive == .seconds(86_400))
        for bad in ["59", "604801", "5m"] {
            #expect(throws: ConfigurationError.self, "\(bad)") {
                try GatewayConfiguration(environment: ["IDEMPOTENCY_RETRY_WINDOW_SECONDS": bad])
            }
        }
    }
}
