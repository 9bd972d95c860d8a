import Gateway
import GatewayCommandLine
import HTTPClient
import JSON
import TestSupport
import Testing

@testable import Access

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh directory for one test's store, under the system's temporary directory.
func storeDirectory() -> String {
    var template = Array("/tmp/textgateway-store-XXXXXX".utf8CString)
    guard mkdtemp(&template) != nil else { return "/tmp" }
    return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

extension JSONValue {
    var arrayValue: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    var doubleValue: Double? {
        if case .number(let value) = self { return value }
        return nil
    }
}

@Suite("The store end to end: usage, history, quotas and tokens over a real SQLite file", .serialized)
struct StoreEndToEndTests {
    static let sample = ProcessEndToEndTests.sample
    static let alice = "tg-alice-token-0123456789"
    static let bob = "tg-bob-token-0123456789"

    static func configure(_ configuration: inout GatewayConfiguration, path: String, plans: String = "pro:-:-:1000000")
    {
        configuration.database = .sqlite(path: path)
        configuration.rateLimitsEnabled = true
        configuration.tokens = try? TokenStore.parse(
            inline: "\(TokenStore.hashLine(forToken: alice)):alice:pro,\(TokenStore.hashLine(forToken: bob)):bob:pro")
        configuration.plans = (try? PlanCatalog.parse(plans)) ?? PlanCatalog()
        configuration.authRequired = true
    }

    static func bearer(_ token: String) -> [(name: String, value: String)] { [("Authorization", "Bearer \(token)")] }

    static func get(_ harness: GatewayHarness, _ path: String, token: String? = alice) async throws
        -> HTTPClientResponse
    {
        try await harness.client.send(HTTPClientRequest(url: harness.base + path, headers: token.map(bearer) ?? []))
    }

    static func delete(_ harness: GatewayHarness, _ path: String, token: String = alice) async throws
        -> HTTPClientResponse
    {
        try await harness.client.send(
            HTTPClientRequest(method: "DELETE", url: harness.base + path, headers: bearer(token)))
    }

    static func json(_ response: HTTPClientResponse) throws -> JSONValue {
        try JSONValue.parse(response.body)
    }

    /// Waits until the writer has committed `count` rows for alice.
    static func waitForHistory(_ harness: GatewayHarness, count: Int) async throws {
        await eventually("the history has \(count) rows") {
            guard let response = try? await get(harness, "/api/history?limit=100"), let body = try? json(response)
            else { return false }
            return body["items"]?.arrayValue?.count == count
        }
    }

    @Test("/api/usage and /api/history answer in docs/api.md's shapes, newest first, page by page")
    func shapes() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        try await GatewayHarness.with(configure: { Self.configure(&$0, path: path) }) { harness in
            var ids: [String] = []
            for index in 0..<3 {
                let id = "shape-\(index)"
                ids.append(id)
                let response = try await harness.process(
                    task: "summarize", text: Self.sample, tone: index == 1 ? "formal" : nil,
                    headers: Self.bearer(Self.alice) + [("X-Request-Id", id)])
                #expect(response.status == 200)
            }
            #expect(
                try await harness.process(
                    task: "nonsense", text: Self.sample,
                    headers: Self.bearer(Self.alice) + [("X-Request-Id", "shape-bad")]
                ).status == 400)
            try await Self.waitForHistory(harness, count: 4)

            let usage = try await Self.get(harness, "/api/usage")
            #expect(usage.status == 200)
            #expect(usage.header("Content-Type") == "application/json; charset=utf-8")
            let body = try Self.json(usage)
            #expect(body["userId"]?.stringValue == "alice")
            #expect(body["plan"]?.stringValue == "pro")
            let today = try #require(body["today"])
            #expect(today["requests"]?.intValue == 4)
            let total = try #require(today["totalTokens"]?.intValue)
            #expect(total > 0)
            #expect(today["inputTokens"]?.intValue.map { $0 + (today["outputTokens"]?.intValue ?? 0) } == total)
            #expect(body["limits"]?["tokensPerDay"]?.intValue == 1_000_000)
            #expect(body["limits"]?["requestsPerMinute"]?.isNull == true)
            #expect(body["remaining"]?["tokensToday"]?.intValue == 1_000_000 - total)
            #expect(body["days"]?.arrayValue?.count == 1)
            #expect(body["days"]?.arrayValue?.first?["date"]?.stringValue == today["date"]?.stringValue)

            let page = try Self.json(try await Self.get(harness, "/api/history?limit=2"))
            let items = try #require(page["items"]?.arrayValue)
            #expect(items.map { $0["id"]?.stringValue } == ["shape-bad", "shape-2"])
            #expect(items[0]["status"]?.intValue == 400)
            #expect(items[0]["code"]?.stringValue == "invalid_task")
            let second = items[1]
            #expect(second["task"]?.stringValue == "summarize")
            #expect(second["route"]?.stringValue == "/api/process")
            #expect(second["model"]?.stringValue == "test-model")
            #expect(second["inputLength"]?.intValue == Self.sample.count)
            #expect(second["cacheHit"]?.boolValue == false)
            #expect(second["code"]?.isNull == true)
            #expect(second["result"]?.isNull == true)
            #expect(second["usage"]?["totalTokens"]?.intValue != nil)
            #expect(second["createdAt"]?.stringValue?.hasSuffix("Z") == true)
            #expect(second["durationMs"]?.doubleValue != nil)
            let cursor = try #require(page["nextCursor"]?.stringValue)
            let rest = try Self.json(try await Self.get(harness, "/api/history?limit=2&before=\(cursor)"))
            #expect(rest["items"]?.arrayValue?.map { $0["id"]?.stringValue } == ["shape-1", "shape-0"])
            #expect(rest["items"]?.arrayValue?.first?["tone"]?.stringValue == "formal")
            let end = try Self.json(
                try await Self.get(harness, "/api/history?limit=2&before=\(rest["nextCursor"]?.stringValue ?? "")"))
            #expect(end["items"]?.arrayValue?.isEmpty == true)
            #expect(end["nextCursor"]?.isNull == true)

            for bad in ["limit=0", "limit=101", "limit=x", "before=abc", "limit=2&limit=3"] {
                let refused = try await Self.get(harness, "/api/history?\(bad)")
                #expect(refused.status == 400, "\(bad)")
                #expect(try Body(refused).code == "invalid_parameter")
            }
        }
    }

    @Test("a caller sees only its own rows: another caller's id is 404 exactly like a missing one; deletes are its own")
    func ownership() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        try await GatewayHarness.with(configure: { Self.configure(&$0, path: path) }) { harness in
            for (token, id) in [(Self.alice, "own-a1"), (Self.alice, "own-a2"), (Self.bob, "own-b1")] {
                #expect(
                    try await harness.process(
                        task: "titles", text: Self.sample, headers: Self.bearer(token) + [("X-Request-Id", id)]
                    ).status == 200)
            }
            try await Self.waitForHistory(harness, count: 2)
            // Bob's row is written by the same writer, but maybe in a later batch: waited for too.
            await eventually("bob's row own-b1 is in his history") {
                (try? await Self.get(harness, "/api/history/own-b1", token: Self.bob))?.status == 200
            }
            let item = try await Self.get(harness, "/api/history/own-a1")
            #expect(item.status == 200)
            #expect(try Self.json(item)["id"]?.stringValue == "own-a1")
            let foreign = try await Self.get(harness, "/api/history/own-b1")
            let missing = try await Self.get(harness, "/api/history/own-zz")
            #expect(foreign.status == 404)
            #expect(missing.status == 404)
            #expect(try Body(foreign).code == "not_found")
            #expect(try Body(foreign).message == (try Body(missing).message))
            #expect(try await Self.delete(harness, "/api/history/own-b1").status == 404)
            #expect(try await Self.get(harness, "/api/history/own-b1", token: Self.bob).status == 200)

            #expect(try await Self.delete(harness, "/api/history/own-a1").status == 204)
            #expect(try await Self.get(harness, "/api/history/own-a1").status == 404)
            #expect(try await Self.delete(harness, "/api/history").status == 204)
            #expect(try Self.json(try await Self.get(harness, "/api/history"))["items"]?.arrayValue?.isEmpty == true)
            #expect(
                try Self.json(try await Self.get(harness, "/api/history", token: Self.bob))["items"]?.arrayValue?.count
                    == 1)

            for path in ["/api/usage", "/api/history", "/api/history/own-b1"] {
                let guest = try await Self.get(harness, path, token: nil)
                #expect(guest.status == 401, "\(path)")
                #expect(try await Self.get(harness, path, token: "wrong-token").status == 401, "\(path)")
            }
            #expect(try await Self.get(harness, "/api/history/a/b").status == 404)
            let post = try await harness.client.send(
                HTTPClientRequest(method: "POST", url: harness.base + "/api/history", headers: Self.bearer(Self.alice)))
            #expect(post.status == 405)
            #expect(post.header("Allow")?.contains("DELETE") == true)
        }
    }

    @Test(
        "history cursors are opaque, good across restarts; tampered, a row number, another caller's or store's: 400"
    )
    func opaqueCursors() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        func refused(_ harness: GatewayHarness, _ cursor: String, token: String = Self.alice) async throws {
            let response = try await Self.get(harness, "/api/history?limit=1&before=\(cursor)", token: token)
            #expect(response.status == 400, "\(cursor)")
            #expect(try Body(response).code == "invalid_parameter")
        }
        var cursor = ""
        try await GatewayHarness.with(configure: { Self.configure(&$0, path: path) }) { harness in
            // Others' requests first: a row number would count them.
            #expect(
                try await harness.process(task: "summarize", text: Self.sample, headers: Self.bearer(Self.bob)).status
                    == 200)
            for index in 0..<3 {
                let response = try await harness.process(
                    task: "summarize", text: Self.sample,
                    headers: Self.bearer(Self.alice) + [("X-Request-Id", "opaque-\(index)")])
                #expect(response.status == 200)
            }
            try await Self.waitForHistory(harness, count: 3)
            let page = try Self.json(try await Self.get(harness, "/api/history?limit=1"))
            cursor = try #require(page["nextCursor"]?.stringValue)
            #expect(cursor.utf8.count == 32 && Int(cursor) == nil, "\(cursor)")
            let next = try Self.json(try await Self.get(harness, "/api/history?limit=1&before=\(cursor)"))
            #expect(next["items"]?.arrayValue?.map { $0["id"]?.stringValue } == ["opaque-1"])

            let last = cursor.last == "A" ? "B" : "A"
            try await refused(harness, String(cursor.dropLast()) + last)
            try await refused(harness, "4")
            try await refused(harness, cursor, token: Self.bob)
        }
        try await GatewayHarness.with(configure: { Self.configure(&$0, path: path) }) { harness in
            let next = try Self.json(try await Self.get(harness, "/api/history?limit=1&before=\(cursor)"))
            #expect(next["items"]?.arrayValue?.map { $0["id"]?.stringValue } == ["opaque-1"])
        }
        try await GatewayHarness.with(configure: { Self.configure(&$0, path: storeDirectory() + "/other.sqlite") }) {
            harness in
            try await refused(harness, cursor)
        }
    }

    @Test("a restart keeps usage, history and the daily quota")
    func survivesRestart() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        // A quota one answer (~270 tokens) leaves too little of for another's worst case (~100).
        let plans = "pro:-:-:300"
        func configure(_ configuration: inout GatewayConfiguration) {
            Self.configure(&configuration, path: path, plans: plans)
            configuration.maxTokens = 50
        }
        try await GatewayHarness.with(configure: configure) { harness in
            #expect(
                try await harness.process(
                    task: "summarize", text: Self.sample,
                    headers: Self.bearer(Self.alice) + [("X-Request-Id", "before-restart")]
                ).status == 200)
            let refused = try await harness.process(
                task: "summarize", text: Self.sample, headers: Self.bearer(Self.alice))
            #expect(refused.status == 429)
        }
        try await GatewayHarness.with(configure: configure) { harness in
            let refused = try await harness.process(
                task: "summarize", text: Self.sample, headers: Self.bearer(Self.alice))
            #expect(refused.status == 429)
            #expect(try Body(refused).code == "rate_limited")
            // The refusal's row comes within a batch interval.
            await eventually("today's usage counts 3 requests") {
                (try? Self.json(try await Self.get(harness, "/api/usage")))?["today"]?["requests"]?.intValue == 3
            }
            let usage = try Self.json(try await Self.get(harness, "/api/usage"))
            #expect((usage["remaining"]?["tokensToday"]?.intValue ?? 300) < 100) // less than a request's worst case
            let history = try Self.json(try await Self.get(harness, "/api/history"))
            #expect(history["items"]?.arrayValue?.last?["id"]?.stringValue == "before-restart")
            // Bob's quota is his own.
            #expect(
                try await harness.process(task: "summarize", text: Self.sample, headers: Self.bearer(Self.bob)).status
                    == 200)
        }
    }

    @Test("results are stored only when HISTORY_STORE_RESULTS is on, and the input text never")
    func resultsOnlyWhenAsked() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        try await GatewayHarness.with(configure: {
            Self.configure(&$0, path: path)
            $0.historyStoresResults = true
        }) { harness in
            let answer = try await harness.process(
                task: "rewrite", text: Self.sample, headers: Self.bearer(Self.alice) + [("X-Request-Id", "kept-result")]
            )
            let result = try #require(try Body(answer).result)
            try await Self.waitForHistory(harness, count: 1)
            #expect(
                try Self.json(try await Self.get(harness, "/api/history/kept-result"))["result"]?.stringValue == result)
        }
        let file = try #require(fopen(path, "rb"))
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        fclose(file)
        #expect(!bytes.isEmpty)
        let text = Array(Self.sample.utf8)
        #expect(!bytes.indices.contains { bytes[$0...].starts(with: text) })
    }

    @Test("strict durability answers only after the row is committed")
    func strictCommitsBeforeAnswering() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        try await GatewayHarness.with(configure: {
            Self.configure(&$0, path: path)
            $0.ledgerDurability = .strict
        }) { harness in
            for index in 0..<5 {
                let id = "strict-\(index)"
                #expect(
                    try await harness.process(
                        task: "summarize", text: Self.sample, headers: Self.bearer(Self.alice) + [("X-Request-Id", id)]
                    ).status == 200)
                // No waiting: the row is there when the answer is.
                #expect(try await Self.get(harness, "/api/history/\(id)").status == 200)
            }
            let streamed = try await harness.client.send(
                HTTPClientRequest(
                    method: "POST", url: harness.base + "/api/process",
                    headers: [("Content-Type", "application/json"), ("X-Request-Id", "strict-stream")]
                        + Self.bearer(Self.alice),
                    body: Array("{\"task\":\"summarize\",\"text\":\(jsonString(Self.sample)),\"stream\":true}".utf8)
                ))
            #expect(streamed.status == 200)
            #expect(String(decoding: streamed.body, as: UTF8.self).contains("event: done"))
            #expect(try await Self.get(harness, "/api/history/strict-stream").status == 200)
        }
    }

    @Test("two gateways on one SQLite file both keep their rows, and each sees the other's")
    func twoGatewaysOneFile() async throws {
        let path = storeDirectory() + "/shared.sqlite"
        try await GatewayHarness.with(configure: { Self.configure(&$0, path: path) }) { first in
            try await GatewayHarness.with(configure: { Self.configure(&$0, path: path) }) { second in
                for index in 0..<20 {
                    let gateway = index.isMultiple(of: 2) ? first : second
                    #expect(
                        try await gateway.process(
                            task: "titles", text: Self.sample,
                            headers: Self.bearer(Self.alice) + [("X-Request-Id", "two-\(index)")]
                        ).status == 200)
                }
                try await Self.waitForHistory(first, count: 20)
                try await Self.waitForHistory(second, count: 20)
            }
        }
    }

    @Test("history older than HISTORY_RETENTION_DAYS is purged by the retention task, usage kept for its own days")
    func retention() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        let clock = TestClock()
        try await GatewayHarness.with(configure: { Self.configure(&$0, path: path) }, clock: { clock.now }) { harness in
            #expect(
                try await harness.process(
                    task: "summarize", text: Self.sample,
                    headers: Self.bearer(Self.alice) + [("X-Request-Id", "old-row")]
                ).status == 200)
            try await Self.waitForHistory(harness, count: 1)
        }
        // 31 days on, the start's first retention pass removes the row; the day's usage stays (400 days).
        clock.advance(31 * 86_400)
        try await GatewayHarness.with(configure: { Self.configure(&$0, path: path) }, clock: { clock.now }) { harness in
            await eventually("the old rows are gone from the history") {
                (try? Self.json(try await Self.get(harness, "/api/history")))?["items"]?.arrayValue?.isEmpty == true
            }
            #expect(try await Self.get(harness, "/api/history/old-row").status == 404)
            let usage = try Self.json(try await Self.get(harness, "/api/usage"))
            #expect(usage["today"]?["requests"]?.intValue == 0)
            // Today's 30-day window no longer reaches the old day.
            #expect(usage["days"]?.arrayValue?.isEmpty == true)
        }
        clock.advance(-31 * 86_400)
        try await GatewayHarness.with(configure: { Self.configure(&$0, path: path) }, clock: { clock.now }) { harness in
            let usage = try Self.json(try await Self.get(harness, "/api/usage"))
            #expect(usage["today"]?["requests"]?.intValue == 1)
        }
    }

    @Test(
        "an open gateway takes a store token as its caller; a made-up or revoked one is invalid_token, never a guest"
    )
    func openGatewayIdentifiesStoreTokens() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        var configuration = GatewayConfiguration()
        configuration.database = .sqlite(path: path)
        let created = await StoreCommand.createToken(user: "dana", plan: "default", label: nil).run(
            configuration: configuration)
        #expect(created.status == 0)
        let token = String(created.output.prefix { $0 != "\n" })
        #expect(token.hasPrefix("tgk_"))
        try await GatewayHarness.with(configure: { $0.database = .sqlite(path: path) }) { harness in
            #expect(try await harness.process(task: "titles", text: Self.sample).status == 200)
            let madeUp = try await harness.process(
                task: "titles", text: Self.sample, headers: Self.bearer("sk-placeholder"))
            #expect(madeUp.status == 401)
            #expect(madeUp.header("WWW-Authenticate") == #"Bearer error="invalid_token""#)
            #expect(
                try await harness.process(
                    task: "titles", text: Self.sample, headers: Self.bearer(token) + [("X-Request-Id", "dana-1")]
                ).status == 200)
            await eventually("dana's row dana-1 is in her history") {
                (try? await Self.get(harness, "/api/history/dana-1", token: token))?.status == 200
            }
            #expect(try await Self.get(harness, "/api/history", token: "sk-placeholder").status == 401)
            let usage = try Self.json(try await Self.get(harness, "/api/usage", token: token))
            #expect(usage["userId"]?.stringValue == "dana")
            #expect(usage["today"]?["requests"]?.intValue == 1)

            let listed = await StoreCommand.listTokens(format: .json).run(configuration: configuration)
            let id = try #require(
                try JSONValue.parse(Array(listed.output.utf8))["tokens"]?.arrayValue?.first?["id"]?.stringValue)
            #expect(await StoreCommand.revokeToken(id: id).run(configuration: configuration).status == 0)
            // Refused within the token poll, as invalid_token: never served as a guest meanwhile.
            var statuses: [Int] = []
            await eventually("the revoked token is refused as invalid_token") {
                let response = try? await harness.process(
                    task: "titles", text: Self.sample, headers: Self.bearer(token))
                statuses.append(response?.status ?? 0)
                return response?.status == 401
                    && response?.header("WWW-Authenticate") == #"Bearer error="invalid_token""#
            }
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 401 })
        }
    }

    @Test("with the store off there is no usage or history route")
    func offMeansStateless() async throws {
        try await GatewayHarness.with(configure: {
            Self.configure(&$0, path: "")
            $0.database = .off
        }) { (harness: GatewayHarness) throws in
            #expect(try await Self.get(harness, "/api/usage").status == 404)
            #expect(try await Self.get(harness, "/api/history").status == 404)
        }
    }
}
