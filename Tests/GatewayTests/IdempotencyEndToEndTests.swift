import HTTPClient
import JSON
import Store
import Synchronization
import TestSupport
import Testing

@testable import Gateway

/// `Idempotency-Key` end to end (docs/api.md, "Retries"): every state of a key, over the
/// store each test names, through the real HTTP server and a mock upstream that counts calls.
enum IdempotencyScenarios {
    static let sample = ProcessEndToEndTests.sample

    static func body(_ text: String, stream: Bool = false) -> String {
        PipelineEndToEndTests.processBody(text, stream: stream)
    }

    static func post(
        _ harness: GatewayHarness, _ body: String, key: String?, path: String = "/api/process",
        headers: [(name: String, value: String)] = []
    ) async throws -> HTTPClientResponse {
        var fields: [(name: String, value: String)] = [("Content-Type", "application/json")] + headers
        if let key { fields.append(("Idempotency-Key", key)) }
        return try await harness.client.send(
            HTTPClientRequest(method: "POST", url: harness.base + path, headers: fields, body: Array(body.utf8)))
    }

    static func key() -> String { "k-" + String(UInt64.random(in: 0...UInt64.max), radix: 36) }

    static func code(_ response: HTTPClientResponse) -> String? {
        (try? JSONValue.parse(response.body))?["code"]?.stringValue
    }

    /// First, replay, mismatch and an invalid key on `/api/process` (plain and streamed).
    static func replays(_ harness: GatewayHarness) async throws {
        let key = key()
        let body = body(sample)
        let first = try await post(harness, body, key: key, headers: [("X-Request-Id", "idem-first-1")])
        #expect(first.status == 200)
        #expect(first.header("Idempotent-Replayed") == nil)
        let calls = harness.mock.stats.requests
        for _ in 0..<2 {
            let again = try await post(harness, body, key: "\"\(key)\"", headers: [("X-Request-Id", "idem-retry")])
            #expect(again.status == 200)
            #expect(again.body == first.body)
            #expect(again.header("Idempotent-Replayed") == "true")
            #expect(again.header("X-Request-Id") == "idem-first-1")
            #expect(again.header("X-Upstream") == first.header("X-Upstream"))
        }
        #expect(harness.mock.stats.requests == calls)

        let reused = try await post(harness, Self.body(sample + " دیگر"), key: key)
        #expect(reused.status == 422)
        #expect(code(reused) == "idempotency_key_reused")
        #expect(harness.mock.stats.requests == calls)

        // The same key on another route is another key.
        let chat = try await post(
            harness, #"{"model":"fast","messages":[{"role":"user","content":"hi"}]}"#, key: key,
            path: "/v1/chat/completions"
        )
        #expect(chat.status == 200)
        #expect(chat.header("Idempotent-Replayed") == nil)

        // Streamed: the replay is `start`, one `delta` with the whole text and the same `done`.
        let streamKey = Self.key()
        let streamed = Self.body(sample + " [mock:deltas=4]", stream: true)
        let original = try await post(harness, streamed, key: streamKey)
        #expect(original.status == 200)
        let afterStream = harness.mock.stats.requests
        let replay = try await post(harness, streamed, key: streamKey)
        #expect(replay.status == 200)
        #expect(replay.header("Idempotent-Replayed") == "true")
        #expect(harness.mock.stats.requests == afterStream)
        let events = SSE.events(original.body)
        let replayed = SSE.events(replay.body)
        #expect(replayed.map(\.name) == ["start", "delta", "done"])
        #expect(
            replayed.first?.data == events.first?.data, "\(String(decoding: original.body.prefix(300), as: UTF8.self))")
        #expect(replayed.last?.data == events.last?.data)
        let text = try JSONValue.parse(Array(events.filter { $0.name == "delta" }.last?.data.utf8 ?? "".utf8))["text"]?
            .stringValue
        let whole = try JSONValue.parse(Array(replayed[1].data.utf8))
        #expect(whole["delta"]?.stringValue == text)
        #expect(whole["text"]?.stringValue == text)
    }

    static func invalidKeys(_ harness: GatewayHarness) async throws {
        let body = body(sample)
        let calls = harness.mock.stats.requests
        for bad in [String(repeating: "a", count: 256), "کلید", "a b", "\"open", "\"a\"b\"", "\"bad\\escape\""] {
            let response = try await post(harness, body, key: bad)
            #expect(response.status == 400, "\(bad)")
            #expect(code(response) == "invalid_idempotency_key", "\(bad)")
        }
        let twice = try await post(harness, body, key: "one", headers: [("Idempotency-Key", "two")])
        #expect(twice.status == 400)
        #expect(code(twice) == "invalid_idempotency_key")
        #expect(harness.mock.stats.requests == calls)
        #expect(try await post(harness, body, key: String(repeating: "z", count: 255)).status == 200)
    }

    /// A failure (`5xx`) gives the key back: the retry calls the upstream again and is kept.
    static func failureReleases(_ harness: GatewayHarness) async throws {
        let key = key()
        let failing = body(sample + " [mock:status=503]")
        let first = try await post(harness, failing, key: key)
        #expect(first.status == 503 || first.status == 502)
        let calls = harness.mock.stats.requests
        let retry = try await post(harness, failing, key: key)
        #expect(retry.status == first.status)
        #expect(retry.header("Idempotent-Replayed") == nil)
        #expect(harness.mock.stats.requests > calls)
    }

    /// The client hangs up in the middle of a slow answer: the upstream call is not
    /// aborted, the answer is kept and logged as done, and the retry gets it without a call.
    static func hangUpThenRetry(_ harness: GatewayHarness, stream: Bool) async throws {
        let key = key()
        let requestID = "idem-hangup-\(stream ? "s" : "p")-" + key
        let body = body(
            sample + (stream ? " [mock:deltas=6,delta-delay-ms=150]" : " [mock:latency-ms=1200]"), stream: stream)
        let port = harness.running.address?.port ?? 0
        let before = harness.mock.stats
        try await onThread {
            let client = try TestClient(port: port)
            try client.send(
                PipelineEndToEndTests.rawRequest(
                    body, port: port, extraHeaders: "Idempotency-Key: \(key)\r\nX-Request-Id: \(requestID)\r\n"))
            return client
        }.closeWhen { harness.mock.stats.requests == before.requests + 1 }
        await eventually("the line of request \(requestID) says idempotency=original") {
            harness.logs.lines.contains {
                $0.contains("request_id=\(requestID)") && $0.contains("idempotency=original")
            }
        }
        let line =
            harness.logs.lines.first { $0.contains("request_id=\(requestID)") && $0.contains("idempotency=original") }
            ?? ""
        #expect(
            line.contains("status=200") && line.contains("outcome=done") && line.contains("output_tokens="), "\(line)")
        #expect(harness.mock.stats.cancelled == before.cancelled)
        let retry = try await post(harness, body, key: key)
        #expect(retry.status == 200)
        #expect(retry.header("Idempotent-Replayed") == "true")
        #expect(retry.header("X-Request-Id") == requestID)
        #expect(harness.mock.stats.requests == before.requests + 1)
        if stream {
            #expect(SSE.events(retry.body).last?.name == "done")
        } else {
            #expect((try JSONValue.parse(retry.body))["requestId"]?.stringValue == requestID)
        }
        // A stream's line is written once its end is sent: wait for it. On SQLite the kept row
        // is written just after the first answer, so a retry in that moment joins it in memory.
        func isRetry(_ line: String) -> Bool {
            line.contains("request_id=\(requestID)")
                && (line.contains("idempotency=replayed") || line.contains("idempotency=joined"))
        }
        await eventually("a retry's line is written") { harness.logs.lines.contains(where: isRetry) }
        let replayLine = harness.logs.lines.last(where: isRetry) ?? ""
        #expect(
            replayLine.contains("outcome=idempotent_replay") && !replayLine.contains("output_tokens="), "\(replayLine)")
    }

    /// A retry while the first runs on the same instance joins it: one upstream call, the
    /// same answer; a streamed joiner gets the text so far in one delta, then the rest.
    static func joins(_ harness: GatewayHarness) async throws {
        let key = key()
        let body = body(sample + " [mock:latency-ms=1000]")
        let before = harness.mock.stats.requests
        async let first = post(harness, body, key: key)
        await eventually("the upstream has one more request") { harness.mock.stats.requests == before + 1 }
        let joined = try await post(harness, body, key: key)
        let original = try await first
        #expect(original.status == 200 && joined.status == 200)
        #expect(joined.body == original.body)
        #expect(joined.header("Idempotent-Replayed") == "true")
        #expect(joined.header("X-Request-Id") == original.header("X-Request-Id"))
        #expect(harness.mock.stats.requests == before + 1)

        let streamKey = Self.key()
        let streamed = Self.body(sample + " [mock:deltas=8,delta-delay-ms=150]", stream: true)
        let leader = try await harness.client.stream(
            HTTPClientRequest(
                method: "POST", url: harness.base + "/api/process",
                headers: [("Content-Type", "application/json"), ("Idempotency-Key", streamKey)],
                body: Array(streamed.utf8)))
        var leadBody: [UInt8] = []
        var leadChunks = leader.body.makeAsyncIterator()
        // A few deltas in (the last one seen may be partial), so the joiner has text to catch up on.
        while SSE.events(leadBody).filter({ $0.name == "delta" }).count < 3, let chunk = try await leadChunks.next() {
            leadBody += chunk
        }
        async let joining = post(harness, streamed, key: streamKey)
        while let chunk = try await leadChunks.next() { leadBody += chunk }
        let follower = try await joining
        #expect(harness.mock.stats.requests == before + 2)
        let leadEvents = SSE.events(leadBody)
        let followEvents = SSE.events(follower.body)
        #expect(follower.header("Idempotent-Replayed") == "true")
        #expect(followEvents.first?.name == "start" && followEvents.last?.name == "done")
        #expect(followEvents.last?.data == leadEvents.last?.data)
        // Its deltas add up to the whole text, and it had fewer of them than the leader.
        let text = { (events: [SSE.Event]) in
            events.filter { $0.name == "delta" }.compactMap {
                try? JSONValue.parse(Array($0.data.utf8))["delta"]?.stringValue
            }.joined()
        }
        #expect(text(followEvents) == text(leadEvents))
        #expect(followEvents.filter { $0.name == "delta" }.count < leadEvents.filter { $0.name == "delta" }.count)
    }

    /// `/v1/chat/completions`: plain bytes and a streamed transcript come back as they were.
    static func chat(_ harness: GatewayHarness) async throws {
        for stream in [false, true] {
            let key = key()
            let body = #"{"model":"fast","stream":\#(stream),"messages":[{"role":"user","content":"سلام \#(key)"}]}"#
            let first = try await post(harness, body, key: key, path: "/v1/chat/completions")
            #expect(first.status == 200)
            let calls = harness.mock.stats.requests
            let again = try await post(harness, body, key: key, path: "/v1/chat/completions")
            #expect(again.status == 200)
            #expect(again.body == first.body)
            #expect(again.header("Idempotent-Replayed") == "true")
            #expect(harness.mock.stats.requests == calls)
        }
    }
}

/// Server-sent events as a test reads them.
enum SSE {
    struct Event: Equatable {
        var name: String
        var data: String
    }

    static func events(_ body: [UInt8]) -> [Event] {
        String(decoding: body, as: UTF8.self).components(separatedBy: "\n\n").compactMap { block in
            var name = "message"
            var data: [String] = []
            for line in block.split(separator: "\n") {
                if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data.append(String(line.dropFirst(6))) }
            }
            return data.isEmpty ? nil : Event(name: name, data: data.joined(separator: "\n"))
        }
    }
}

@Suite("Idempotency-Key end to end on SQLite and without a store", .serialized)
struct IdempotencyEndToEndTests {
    static func sqlite(_ configuration: inout GatewayConfiguration) {
        OpenAIEndToEndTests.configure(&configuration)
        configuration.database = .sqlite(path: storeDirectory() + "/gateway.sqlite")
    }

    @Test(
        "a kept answer is replayed byte for byte with the first request id; another body is 422; a bad key is 400",
        arguments: [true, false])
    func replays(sqlite: Bool) async throws {
        try await GatewayHarness.with(configure: {
            if sqlite { Self.sqlite(&$0) } else { OpenAIEndToEndTests.configure(&$0) }
        }) { harness in
            try await IdempotencyScenarios.replays(harness)
            try await IdempotencyScenarios.invalidKeys(harness)
            try await IdempotencyScenarios.failureReleases(harness)
        }
    }

    @Test(
        "a client that hangs up mid-answer: the answer completes, is kept and charged once, and its retry gets it",
        arguments: [false, true])
    func hangUp(stream: Bool) async throws {
        try await GatewayHarness.with(configure: Self.sqlite) { harness in
            try await IdempotencyScenarios.hangUpThenRetry(harness, stream: stream)
        }
    }

    @Test("a retry while the first runs joins it, plain and streamed")
    func joins() async throws {
        try await GatewayHarness.with(configure: Self.sqlite) { harness in
            try await IdempotencyScenarios.joins(harness)
        }
    }

    @Test("/v1/chat/completions replays its answer and its stream as they were")
    func chat() async throws {
        try await GatewayHarness.with(configure: Self.sqlite) { harness in
            try await IdempotencyScenarios.chat(harness)
        }
    }

    @Test("without the field, a hang-up still aborts the upstream call and is 499")
    func withoutKey() async throws {
        try await GatewayHarness.with(configure: Self.sqlite) { harness in
            let port = harness.running.address?.port ?? 0
            let before = harness.mock.stats
            try await onThread {
                let client = try TestClient(port: port)
                try client.send(
                    PipelineEndToEndTests.rawRequest(
                        IdempotencyScenarios.body(IdempotencyScenarios.sample + " [mock:latency-ms=3000]"), port: port))
                return client
            }.closeWhen { harness.mock.stats.requests == before.requests + 1 }
            await eventually("the upstream sees its call cancelled") {
                harness.mock.stats.cancelled == before.cancelled + 1
            }
            await eventually("a line says status=499 outcome=cancelled") {
                harness.logs.lines.contains { $0.contains("status=499") && $0.contains("outcome=cancelled") }
            }
        }
    }
}

@Suite("Idempotency-Key: reading the field")
struct IdempotencyKeyTests {
    @Test("a bare token or a Structured Field string of 1–255 printable ASCII characters; anything else is invalid")
    func parse() {
        #expect(IdempotencyKey.parse("abc-123") == .key("abc-123"))
        #expect(IdempotencyKey.parse(" \"abc 123\" ") == .key("abc 123"))
        #expect(IdempotencyKey.parse(#""a\"b\\c""#) == .key(#"a"b\c"#))
        #expect(IdempotencyKey.parse(String(repeating: "x", count: 255)) == .key(String(repeating: "x", count: 255)))
        for bad in [
            "", "\"\"", String(repeating: "x", count: 256), "a b", "کلید", "\"open", "\"a\"b\"", #""\x""#, "\u{7F}",
        ] {
            #expect(IdempotencyKey.parse(bad) == .invalid, "\(bad)")
        }
    }

    @Test("the fingerprint tells apart method, path and body, even where their bytes run together")
    func fingerprint() {
        let base = IdempotencyKey.fingerprint(method: "POST", path: "/api/process", body: Array("{}".utf8))
        #expect(base.count == 32)
        #expect(base == IdempotencyKey.fingerprint(method: "POST", path: "/api/process", body: Array("{}".utf8)))
        #expect(base != IdempotencyKey.fingerprint(method: "POST", path: "/api/process", body: Array("{} ".utf8)))
        #expect(base != IdempotencyKey.fingerprint(method: "POST", path: "/api/jobs", body: Array("{}".utf8)))
        #expect(
            IdempotencyKey.fingerprint(method: "POST", path: "/a", body: Array("b".utf8))
                != IdempotencyKey.fingerprint(method: "POST", path: "/ab", body: [])
        )
        // A stream asked for by `Accept` is another request; without it, the hash is as it was.
        #expect(
            base
                == IdempotencyKey.fingerprint(
                    method: "POST", path: "/api/process", body: Array("{}".utf8),
                    eventStream: false))
        #expect(
            base
                != IdempotencyKey.fingerprint(
                    method: "POST", path: "/api/process", body: Array("{}".utf8),
                    eventStream: true))
        #expect(
            IdempotencyKey.fingerprint(method: "POST", path: "/a", body: Array("btext/event-stream".utf8))
                != IdempotencyKey.fingerprint(method: "POST", path: "/a", body: Array("b".utf8), eventStream: true))
    }
}

extension IdempotencyScenarios {
    static let alice = StoreEndToEndTests.alice

    /// Identified callers: one history row and one charge per key, however many retries;
    /// the same key of another caller is another key.
    static func oneRowPerKey(_ harness: GatewayHarness) async throws {
        let auth = StoreEndToEndTests.bearer(alice)
        var charged = 0
        for index in 0..<2 {
            let key = key()
            let body = body(sample + " \(index)")
            let first = try await post(harness, body, key: key, headers: auth)
            #expect(first.status == 200)
            charged += try #require((try JSONValue.parse(first.body))["usage"]?["totalTokens"]?.intValue)
            for _ in 0..<2 {
                let again = try await post(harness, body, key: key, headers: auth)
                #expect(again.header("Idempotent-Replayed") == "true")
            }
            // Bob's request with alice's key is his own.
            let bob = try await post(
                harness, body, key: key, headers: StoreEndToEndTests.bearer(StoreEndToEndTests.bob))
            #expect(bob.header("Idempotent-Replayed") == nil)
        }
        try await StoreEndToEndTests.waitForHistory(harness, count: 2)
        let usage = try StoreEndToEndTests.json(try await StoreEndToEndTests.get(harness, "/api/usage"))
        #expect(usage["today"]?["requests"]?.intValue == 2)
        #expect(usage["today"]?["totalTokens"]?.intValue == charged)
    }

    /// The same key gives the same job: `202` then `200` with its id and `Location`.
    static func jobs(_ harness: GatewayHarness) async throws {
        let key = key()
        let text = JobsEndToEndTests.longText(sentences: 40)
        let body = "{\"task\":\"summarize\",\"text\":\(jsonString(text))}"
        let auth = StoreEndToEndTests.bearer(alice)
        let first = try await post(harness, body, key: key, path: "/api/jobs", headers: auth)
        #expect(first.status == 202)
        let again = try await post(harness, body, key: key, path: "/api/jobs", headers: auth)
        #expect(again.status == 200)
        #expect(again.body == first.body)
        #expect(again.header("Location") == first.header("Location"))
        #expect(again.header("Idempotent-Replayed") == "true")
        let other = try await post(harness, body, key: Self.key(), path: "/api/jobs", headers: auth)
        #expect(other.status == 202)
        #expect(other.header("Location") != first.header("Location"))
    }

    /// Two instances on one store: a key running on one is `409` with `Retry-After: 1` on the
    /// other, then replayed there once it completed, with no second upstream call.
    static func acrossInstances(_ harness: GatewayHarness, peer: GatewayHarness) async throws {
        let key = key()
        let body = body(sample + " [mock:latency-ms=1500]")
        let before = harness.mock.stats.requests
        async let first = post(harness, body, key: key)
        await eventually("the upstream has one more request") { harness.mock.stats.requests == before + 1 }
        let busy = try await post(peer, body, key: key)
        #expect(busy.status == 409)
        #expect(busy.header("Retry-After") == "1")
        #expect(code(busy) == "idempotency_in_progress")
        let reused = try await post(peer, Self.body(sample), key: key)
        #expect(reused.status == 422)
        let original = try await first
        #expect(original.status == 200)
        let replay = try await post(peer, body, key: key)
        #expect(replay.status == 200)
        #expect(replay.body == original.body)
        #expect(replay.header("X-Request-Id") == original.header("X-Request-Id"))
        #expect(replay.header("Idempotent-Replayed") == "true")
        #expect(harness.mock.stats.requests == before + 1)
    }
}

extension IdempotencyEndToEndTests {
    @Test("identified callers: one history row and one charge per key; jobs: the same key, the same job")
    func rowsAndJobs() async throws {
        try await GatewayHarness.with(configure: { JobsEndToEndTests.configure(&$0) }) { harness in
            try await IdempotencyScenarios.oneRowPerKey(harness)
            try await IdempotencyScenarios.jobs(harness)
        }
    }
}

@Suite("Idempotency-Key end to end on Postgres, and across two instances", .postgresCluster, .serialized)
struct IdempotencyPostgresTests {
    static func configure(_ configuration: inout GatewayConfiguration, location: DatabaseLocation) {
        OpenAIEndToEndTests.configure(&configuration)
        configuration.database = location
    }

    @Test("every state of a key on Postgres: replay, mismatch, invalid, release, hang-up, joins, /v1")
    func states() async throws {
        let location = try DatabaseLocation(url: try await PostgresStoreEndToEndTests.databaseURL())
        try await GatewayHarness.with(configure: { Self.configure(&$0, location: location) }) { harness in
            try await IdempotencyScenarios.replays(harness)
            try await IdempotencyScenarios.invalidKeys(harness)
            try await IdempotencyScenarios.failureReleases(harness)
            try await IdempotencyScenarios.hangUpThenRetry(harness, stream: false)
            try await IdempotencyScenarios.hangUpThenRetry(harness, stream: true)
            try await IdempotencyScenarios.joins(harness)
            try await IdempotencyScenarios.chat(harness)
            try await IdempotencyScenarios.streamForm(harness)
        }
    }

    @Test(
        "two instances: 409 with Retry-After while the other runs the first, then its answer; one row, one charge a key"
    )
    func twoInstances() async throws {
        let location = try DatabaseLocation(url: try await PostgresStoreEndToEndTests.databaseURL())
        try await GatewayHarness.with(configure: { Self.configure(&$0, location: location) }) { harness in
            try await harness.peer(configure: { Self.configure(&$0, location: location) }) { peer in
                try await IdempotencyScenarios.acrossInstances(harness, peer: peer)
            }
        }
        let rows = try DatabaseLocation(url: try await PostgresStoreEndToEndTests.databaseURL())
        try await GatewayHarness.with(configure: { configuration in
            JobsEndToEndTests.configure(&configuration)
            configuration.database = rows
        }) { harness in
            try await IdempotencyScenarios.oneRowPerKey(harness)
            try await IdempotencyScenarios.jobs(harness)
            try await IdempotencyScenarios.deleteForgets(harness)
        }
    }
}

@Suite("Idempotency-Key records in memory (DATABASE_URL=off)")
struct MemoryIdempotencyRecordsTests {
    static func start(_ key: String, fingerprint: UInt8 = 1, owner: String = "a", leaseUntil: Int64 = 10_000)
        -> IdempotencyStart
    {
        IdempotencyStart(
            scope: "user:alice /api/process", key: key, fingerprint: [UInt8](repeating: fingerprint, count: 32),
            requestID: "r-" + key,
            owner: owner, leaseUntilMilliseconds: leaseUntil
        )
    }

    static func answer(_ bytes: Int) -> StoredAnswer {
        StoredAnswer(
            status: 200, contentType: "application/json", upstream: nil, body: [UInt8](repeating: 0x41, count: bytes),
            text: nil, streamed: false)
    }

    @Test("the store's rules: running, mismatch, kept, released, taken over after the lease, purged")
    func rules() async throws {
        let records = MemoryIdempotencyRecords()
        #expect(try await records.beginIdempotent(Self.start("k"), nowMilliseconds: 1_000) == .started)
        #expect(
            try await records.beginIdempotent(Self.start("k"), nowMilliseconds: 1_001)
                == .inProgress(requestID: "r-k", owner: "a"))
        #expect(try await records.beginIdempotent(Self.start("k", fingerprint: 2), nowMilliseconds: 1_002) == .mismatch)
        #expect(
            try await records.completeIdempotent(
                scope: "user:alice /api/process", key: "k", owner: "b", answer: Self.answer(3),
                expiresAtMilliseconds: 50_000) == false)
        #expect(
            try await records.completeIdempotent(
                scope: "user:alice /api/process", key: "k", owner: "a", answer: Self.answer(3),
                expiresAtMilliseconds: 50_000))
        try await records.noteIdempotentReplay(scope: "user:alice /api/process", key: "k")
        var kept = Self.answer(3)
        kept.replays = 1
        #expect(
            try await records.beginIdempotent(Self.start("k"), nowMilliseconds: 2_000)
                == .completed(requestID: "r-k", answer: kept))
        // Released: the next begin starts afresh; a lease that ended is taken over.
        #expect(try await records.beginIdempotent(Self.start("r"), nowMilliseconds: 1_000) == .started)
        try await records.releaseIdempotent(scope: "user:alice /api/process", key: "r", owner: "a")
        #expect(try await records.beginIdempotent(Self.start("r", owner: "b"), nowMilliseconds: 1_000) == .started)
        #expect(try await records.beginIdempotent(Self.start("r", owner: "c"), nowMilliseconds: 10_000) == .started)
        // k's answer expired at 50,000, r's lease (c's) ended at 10,000.
        #expect(try await records.purgeExpiredIdempotent(nowMilliseconds: 50_000) == 2)
        #expect(try await records.beginIdempotent(Self.start("k"), nowMilliseconds: 50_000) == .started)
    }

    @Test("a caller's kept answers are deleted by request id or all at once; running keys and others' stay")
    func deleteKept() async throws {
        let records = MemoryIdempotencyRecords(capacity: 8, byteBudget: 1 << 20)
        let scope = "user:alice /api/process"
        for key in ["k1", "k2"] {
            #expect(try await records.beginIdempotent(Self.start(key), nowMilliseconds: 0) == .started)
            _ = try await records.completeIdempotent(
                scope: scope, key: key, owner: "a", answer: Self.answer(10), expiresAtMilliseconds: 100_000)
        }
        #expect(try await records.beginIdempotent(Self.start("run"), nowMilliseconds: 0) == .started)
        #expect(try await records.deleteKeptIdempotent(scopes: [scope], requestID: "r-k1") == 1)
        #expect(try await records.deleteKeptIdempotent(scopes: ["user:bob /api/process"], requestID: nil) == 0)
        #expect(try await records.deleteKeptIdempotent(scopes: [scope], requestID: "r-run") == 0)
        #expect(try await records.beginIdempotent(Self.start("k1"), nowMilliseconds: 1) == .started)
        #expect(
            try await records.beginIdempotent(Self.start("k2"), nowMilliseconds: 1)
                == .completed(requestID: "r-k2", answer: Self.answer(10)))
        #expect(try await records.deleteKeptIdempotent(scopes: [scope], requestID: nil) == 1)
        #expect(try await records.beginIdempotent(Self.start("k2"), nowMilliseconds: 1) == .started)
        #expect(
            try await records.beginIdempotent(Self.start("run"), nowMilliseconds: 1)
                == .inProgress(requestID: "r-run", owner: "a"))
    }

    @Test("over its byte budget or its keys it drops the oldest kept answers; full of running keys it refuses new ones")
    func bounds() async throws {
        let records = MemoryIdempotencyRecords(capacity: 8, byteBudget: 4 * 1_064)
        for index in 0..<6 {
            let key = "k\(index)"
            #expect(try await records.beginIdempotent(Self.start(key), nowMilliseconds: 0) == .started)
            _ = try await records.completeIdempotent(
                scope: "user:alice /api/process", key: key, owner: "a", answer: Self.answer(1_000),
                expiresAtMilliseconds: 100_000 + Int64(index)
            )
        }
        // The oldest answers went; the newest is still kept.
        #expect(try await records.beginIdempotent(Self.start("k0"), nowMilliseconds: 1) == .started)
        if case .completed = try await records.beginIdempotent(Self.start("k5"), nowMilliseconds: 1) {
        } else {
            Issue.record("k5 was dropped")
        }
        // Full: k3's, k4's and k5's answers make room for n4, n5 and n6; once every key runs, a new one is refused.
        for index in 0..<7 {
            #expect(try await records.beginIdempotent(Self.start("n\(index)"), nowMilliseconds: 1) == .started)
        }
        await #expect(throws: StoreError.self) {
            try await records.beginIdempotent(Self.start("one-too-many"), nowMilliseconds: 1)
        }
    }
}

@Suite("The kept-key filter: a new key runs without a look in the store")
struct KeptKeyFilterTests {
    @Test("every key may be kept until it is loaded; after, no kept key reads absent and few others read present")
    func loadAndProbe() async throws {
        let filter = KeptKeyFilter(bits: 1 << 20)
        #expect(filter.mightContain("never seen"))
        let kept = (0..<20_000).map { "user:u\($0) /api/process\u{1F}key-\($0)" }
        await filter.rebuild { add in for key in kept { add(key) } }
        #expect(kept.allSatisfy { filter.mightContain($0) })
        let others = (0..<20_000).filter { filter.mightContain("user:u\($0) /api/process\u{1F}other-\($0)") }.count
        #expect(others < 400, "\(others) of 20,000 absent keys read present")
        filter.insert("added later")
        #expect(filter.mightContain("added later"))
    }

    @Test("a key added while a rebuild reads the store is in the rebuilt filter; a failed rebuild keeps the old one")
    func rebuildRace() async throws {
        let filter = KeptKeyFilter(bits: 1 << 16)
        await filter.rebuild { add in add("old") }
        await filter.rebuild { add in
            filter.insert("during")
            add("from the store")
        }
        #expect(filter.mightContain("during") && filter.mightContain("from the store"))
        struct Failed: Error {}
        await #expect(throws: Failed.self) { try await filter.rebuild { _ in throw Failed() } }
        #expect(filter.mightContain("during"))
    }
}

extension IdempotencyEndToEndTests {
    @Test("SQLite: a kept answer is replayed by the gateway restarted on the same store")
    func keptAcrossRestart() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        let key = IdempotencyScenarios.key()
        let body = IdempotencyScenarios.body(IdempotencyScenarios.sample)
        var first: HTTPClientResponse?
        try await GatewayHarness.with(configure: { $0.database = .sqlite(path: path) }) { harness in
            first = try await IdempotencyScenarios.post(harness, body, key: key)
            #expect(first?.status == 200)
        }
        try await GatewayHarness.with(configure: { $0.database = .sqlite(path: path) }) { harness in
            let calls = harness.mock.stats.requests
            let again = try await IdempotencyScenarios.post(harness, body, key: key)
            #expect(again.status == 200)
            #expect(again.body == first?.body)
            #expect(again.header("Idempotent-Replayed") == "true")
            #expect(harness.mock.stats.requests == calls)
        }
    }
}
