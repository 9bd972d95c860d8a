import AdminConsole
import ChatAPI
import EventLoop
import HTTPClient
import Postgres
import Store
import TestSupport
import Testing

@testable import Access
@testable import Gateway
@testable import Telemetry

/// The operator's console: its lock, its page, its token operations and its totals.
@Suite("The operator's console: /admin and /api/admin/…", .serialized)
struct AdminConsoleTests {
    static let adminToken = "admin-0123456789abcdef0123456789"

    static func get(_ harness: GatewayHarness, _ path: String, token: String? = adminToken) async throws
        -> HTTPClientResponse
    {
        try await harness.client.send(
            HTTPClientRequest(url: harness.base + path, headers: token.map(StoreEndToEndTests.bearer) ?? []))
    }

    static func json(_ harness: GatewayHarness, _ path: String) async throws -> JSONValue {
        let response = try await get(harness, path)
        #expect(response.status == 200, "\(path): \(String(decoding: response.body, as: UTF8.self))")
        return try JSONValue.parse(response.body)
    }

    static func configure(_ configuration: inout GatewayConfiguration, path: String) {
        configuration.database = .sqlite(path: path)
        configuration.adminToken = adminToken
    }

    // MARK: The lock

    @Test("without ADMIN_TOKEN, /admin and /api/admin/… do not exist: 404, with or without a token")
    func absentWithoutToken() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        try await GatewayHarness.with(configure: { $0.database = .sqlite(path: path) }) { harness in
            for route in ["/admin", "/admin/console.js", "/api/admin/summary", "/api/admin/tokens"] {
                let response = try await Self.get(harness, route)
                #expect(response.status == 404, "\(route)")
                #expect(try JSONValue.parse(response.body)["code"]?.stringValue == "not_found")
            }
        }
    }

    @Test("a wrong or missing admin token is 401 with realm=admin; a caller's token opens nothing here")
    func refusals() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        try await GatewayHarness.with(configure: {
            Self.configure(&$0, path: path)
            StoreEndToEndTests.configure(&$0, path: path)
        }) { harness in
            for token in [
                nil, "wrong", Self.adminToken + "x", String(Self.adminToken.dropLast()), StoreEndToEndTests.alice,
            ] {
                for route in ["/api/admin/summary", "/api/admin/tokens", "/api/admin/callers", "/api/admin/plans"] {
                    let response = try await Self.get(harness, route, token: token)
                    #expect(response.status == 401, "\(route) with \(token ?? "none")")
                    #expect(response.header("WWW-Authenticate") == "Bearer realm=\"admin\"")
                    #expect(try JSONValue.parse(response.body)["code"]?.stringValue == "unauthorized")
                }
            }
            // The admin token is no caller: /api/process refuses it where a token is required.
            let process = try await harness.process(
                task: "summarize", text: StoreEndToEndTests.sample, headers: StoreEndToEndTests.bearer(Self.adminToken))
            #expect(process.status == 401)
            #expect(try await Self.get(harness, "/api/admin/plans").status == 200)
        }
    }

    @Test("the page: Persian and right to left by default, English with ERROR_LANGUAGE=en, under a strict policy")
    func page() async throws {
        try await GatewayHarness.with(configure: { $0.adminToken = Self.adminToken }) { harness in
            let page = try await Self.get(harness, "/admin", token: nil)
            #expect(page.status == 200)
            #expect(page.header("Content-Type") == "text/html; charset=utf-8")
            let html = String(decoding: page.body, as: UTF8.self)
            #expect(html.contains("lang=\"fa\" dir=\"rtl\""))
            #expect(!html.contains("{{"))
            let policy = try #require(page.header("Content-Security-Policy"))
            #expect(policy.contains("script-src 'self'") && policy.contains("default-src 'none'"))
            #expect(page.header("X-Content-Type-Options") == "nosniff")
            let script = try await Self.get(harness, "/admin/console.js", token: nil)
            #expect(script.status == 200)
            #expect(script.header("Content-Type") == "text/javascript; charset=utf-8")
            #expect(script.body == ConsoleAssets.javascript)
            let style = try await Self.get(harness, "/admin/console.css", token: nil)
            #expect(style.header("Content-Type") == "text/css; charset=utf-8")
            let english = try await harness.client.send(
                HTTPClientRequest(url: harness.base + "/admin", headers: [("Accept-Language", "en-US,en;q=0.9")]))
            #expect(String(decoding: english.body, as: UTF8.self).contains("lang=\"en\" dir=\"ltr\""))
            // Without a store, the store's calls say so.
            let summary = try await Self.get(harness, "/api/admin/summary")
            #expect(summary.status == 503)
        }
        try await GatewayHarness.with(configure: {
            $0.adminToken = Self.adminToken
            $0.errorLanguage = .english
        }) { harness in
            let page = try await Self.get(harness, "/admin", token: nil)
            #expect(String(decoding: page.body, as: UTF8.self).contains("lang=\"en\" dir=\"ltr\""))
            let plans = try await Self.json(harness, "/api/admin/plans")
            #expect(plans["language"]?.stringValue == "en")
        }
    }

    @Test("admin calls never count against a caller's limits, and leave no ledger row")
    func outsideLimits() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        let plans = try PlanCatalog.parse("guest:1:1:1000000")
        try await GatewayHarness.with(configure: {
            Self.configure(&$0, path: path)
            $0.rateLimitsEnabled = true
            $0.plans = plans
        }) { harness in
            let first = try await harness.process(task: "summarize", text: StoreEndToEndTests.sample)
            let second = try await harness.process(task: "summarize", text: StoreEndToEndTests.sample)
            #expect(first.status == 200)
            #expect(second.status == 429)
            for _ in 0..<10 {
                #expect(try await Self.get(harness, "/api/admin/tokens").status == 200)
                #expect(try await Self.get(harness, "/api/admin/plans").status == 200)
            }
            let counted = await eventually {
                guard let body = try? await Self.json(harness, "/api/admin/summary") else { return false }
                return body["requests"]?.intValue == 2
            }
            #expect(counted, "only the two /api/process requests are rows")
        }
    }

    // MARK: Tokens

    @Test("a token made in the console works at once, is listed without its secret, and revoked is refused")
    func tokenLifecycle() async throws {
        let path = storeDirectory() + "/gateway.sqlite"
        try await GatewayHarness.with(configure: {
            Self.configure(&$0, path: path)
            $0.authRequired = true
        }) { harness in
            func post(_ body: String) async throws -> HTTPClientResponse {
                try await harness.client.send(
                    HTTPClientRequest(
                        method: "POST", url: harness.base + "/api/admin/tokens",
                        headers: StoreEndToEndTests.bearer(Self.adminToken) + [("Content-Type", "application/json")],
                        body: Array(body.utf8)))
            }
            let created = try await post(#"{"userId":"erin","plan":"default","label":"Erin's = phone"}"#)
            #expect(created.status == 201)
            let body = try JSONValue.parse(created.body)
            let secret = try #require(body["token"]?.stringValue)
            let id = try #require(body["id"]?.stringValue)
            #expect(secret.hasPrefix("tgk_"))
            #expect(body["userId"]?.stringValue == "erin")
            #expect(body["label"]?.stringValue == "Erin's = phone")
            #expect(body["revokedAt"]?.isNull == true)

            let list = try await Self.get(harness, "/api/admin/tokens")
            #expect(!String(decoding: list.body, as: UTF8.self).contains(secret))
            let listed = try JSONValue.parse(list.body)["tokens"]?.arrayValue ?? []
            #expect(listed.contains { $0["id"]?.stringValue == id && $0["token"] == nil })

            let works = await eventually {
                (try? await harness.process(
                    task: "summarize", text: StoreEndToEndTests.sample, headers: StoreEndToEndTests.bearer(secret)))?
                    .status == 200
            }
            #expect(works)

            let revoke = try await harness.client.send(
                HTTPClientRequest(
                    method: "DELETE", url: harness.base + "/api/admin/tokens/\(id)",
                    headers: StoreEndToEndTests.bearer(Self.adminToken)))
            #expect(revoke.status == 204)
            let refused = await eventually {
                (try? await harness.process(
                    task: "summarize", text: StoreEndToEndTests.sample, headers: StoreEndToEndTests.bearer(secret)))?
                    .status == 401
            }
            #expect(refused)
            let again = try await harness.client.send(
                HTTPClientRequest(
                    method: "DELETE", url: harness.base + "/api/admin/tokens/\(id)",
                    headers: StoreEndToEndTests.bearer(Self.adminToken)))
            #expect(again.status == 404)
            let revokedRow = try JSONValue.parse(try await Self.get(harness, "/api/admin/tokens").body)["tokens"]?
                .arrayValue?.first { $0["id"]?.stringValue == id }
            #expect(revokedRow?["revokedAt"]?.stringValue?.hasSuffix("Z") == true)

            for bad in [
                #"{"userId":"has space","plan":"default"}"#, #"{"userId":"x","plan":"nope"}"#,
                #"{"userId":"x","label":7}"#, #"{"userId":"x","extra":1}"#, #"{"plan":"default"}"#,
            ] {
                let response = try await post(bad)
                #expect(response.status == 400, "\(bad)")
                #expect(try JSONValue.parse(response.body)["code"]?.stringValue == "invalid_parameter")
            }
            #expect(try await post("{nope").status == 400)
        }
    }

    // MARK: Ranges and CSV

    @Test("ranges: RFC 3339 with any offset, escaped or not; 15-minute slots; local days")
    func ranges() throws {
        #expect(AdminRange.instant("1970-01-01T00:00:00Z") == 0)
        #expect(AdminRange.instant("2026-12-03T10:15:00.250Z") == 1_796_292_900_250)
        #expect(AdminRange.instant("2026-12-03T13:45:00+03:30") == 1_796_292_900_000)
        #expect(AdminRange.instant("2026-12-03T13%3A45%3A00%2B03%3A30") == 1_796_292_900_000)
        #expect(AdminRange.instant("2026-12-03T05:15:00-05:00") == 1_796_292_900_000)
        #expect(AdminRange.instant("2026-12-03T10:15:00.123456789Z") == 1_796_292_900_123)
        for bad in [
            "2026-12-03", "2026-12-03T10:15:00", "2026-13-03T10:15:00Z", "2026-12-03T24:00:00Z",
            "2026-12-03T10:15:00+0330", "2026-12-03T10:15:00.Z", "2026-12-03T10:15:00Zjunk", "%zz",
        ] {
            #expect(AdminRange.instant(bad[...]) == nil, "\(bad)")
        }
        let range = AdminRange(fromMilliseconds: 1_796_292_900_250, toMilliseconds: 1_796_292_900_000 + 900_001)
        #expect(range.fromSlot == 1_796_292_900_000 / 900_000)
        #expect(range.toSlot == range.fromSlot + 2)
        // A Tehran day (UTC+03:30) from local midnight to local midnight is one local day.
        let day = AdminRange(
            fromMilliseconds: AdminRange.instant("2026-12-03T00:00:00+03:30")!,
            toMilliseconds: AdminRange.instant("2026-12-04T00:00:00+03:30")!)
        let days = day.localDays(offsetMinutes: 210)
        #expect(days.count == 1)
        #expect(Timestamp.date(day: days.lowerBound) == "2026-12-03")
        #expect(day.localDays(offsetMinutes: 0).count == 2)
        #expect(day.fromDay == day.toDay - 1)
        let query = try QueryParameters("from=2026-12-03T00:00:00Z&to=2026-12-02T00:00:00Z")
        #expect(throws: GatewayError.invalidParameter) { try AdminRange(query, nowMilliseconds: 0) }
        let long = try QueryParameters("from=2020-01-01T00:00:00Z&to=2026-12-02T00:00:00Z")
        #expect(throws: GatewayError.invalidParameter) { try AdminRange(long, nowMilliseconds: 0) }
        let defaulted = try AdminRange(try QueryParameters(nil), nowMilliseconds: 10 * 86_400_000)
        #expect(defaulted == AdminRange(fromMilliseconds: 9 * 86_400_000, toMilliseconds: 10 * 86_400_000))
    }

    @Test("CSV: quoted where RFC 4180 needs it, and no cell a spreadsheet would run as a formula")
    func csvCells() {
        #expect(CSVWriter.cell("alice") == "alice")
        #expect(CSVWriter.cell("a,b") == "\"a,b\"")
        #expect(CSVWriter.cell("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(CSVWriter.cell("=HYPERLINK(\"x\")") == "\"'=HYPERLINK(\"\"x\"\")\"")
        #expect(CSVWriter.cell("+1") == "+1")
        #expect(CSVWriter.cell("-2.5") == "-2.5")
        #expect(CSVWriter.cell("@sum") == "'@sum")
        #expect(CSVWriter.cell("line\r\nbreak") == "\"line\r\nbreak\"")
        var writer = CSVWriter(header: ["a", "b"])
        writer.row(["1", "x,y"])
        #expect(writer.text == "a,b\r\n1,\"x,y\"\r\n")
    }
}
