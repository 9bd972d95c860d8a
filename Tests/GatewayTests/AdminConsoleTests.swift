import AdminConsole
import EventLoop
import HTTPClient
import JSON
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
            // Each wrong token here is one refusal to see, not an attack to stop.
            $0.adminFailuresPerMinute = 1000
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

    @Test("five wrong admin tokens from one address in a minute: its admin calls are 429 for a minute, right token too")
    func lockout() async throws {
        let clock = TestClock()
        try await GatewayHarness.with(
            configure: {
                $0.adminToken = Self.adminToken
                $0.trustedProxies = try! TrustedProxies.parse("127.0.0.1")
            }, clock: { clock.now }
        ) { harness in
            func call(_ token: String?, from address: String) async throws -> HTTPClientResponse {
                var headers = [("X-Forwarded-For", address)]
                if let token { headers.append(("Authorization", "Bearer \(token)")) }
                return try await harness.client.send(
                    HTTPClientRequest(url: harness.base + "/api/admin/plans", headers: headers))
            }
            let attacker = "2001:db8:7:7::1"
            // A call without a token guesses nothing: not counted.
            for _ in 0..<10 { #expect(try await call(nil, from: attacker).status == 401) }
            for index in 0..<5 {
                let refused = try await call("wrong-\(index)", from: "2001:db8:7:7::\(index + 1)")
                #expect(refused.status == 401, "wrong token \(index + 1)")
            }
            // The same /64: locked out, the right token included.
            let locked = try await call(Self.adminToken, from: "2001:db8:7:7::99")
            #expect(locked.status == 429)
            #expect(locked.header("Retry-After") == "60")
            #expect(try JSONValue.parse(locked.body)["code"]?.stringValue == "rate_limited")
            #expect(try await call("wrong-again", from: attacker).status == 429)
            // Another address is not.
            #expect(try await call(Self.adminToken, from: "203.0.113.50").status == 200)
            clock.advance(59)
            let later = try await call(Self.adminToken, from: attacker)
            #expect(later.status == 429)
            #expect(later.header("Retry-After") == "1")
            clock.advance(1)
            #expect(try await call(Self.adminToken, from: attacker).status == 200)
            // Four wrong in a minute, a right one, then four more: never locked.
            for _ in 0..<4 { #expect(try await call("wrong", from: "198.51.100.1").status == 401) }
            #expect(try await call(Self.adminToken, from: "198.51.100.1").status == 200)
            for _ in 0..<4 { #expect(try await call("wrong", from: "198.51.100.1").status == 401) }
            #expect(try await call(Self.adminToken, from: "198.51.100.1").status == 200)
            let log = harness.logs.lines.joined(separator: "\n")
            #expect(log.contains("admin_locked_out"))
            #expect(!log.contains(Self.adminToken) && !log.contains("wrong-0"))
        }
    }

    @Test("the lockout remembers a bounded number of addresses, the idle ones going first")
    func lockoutBounded() {
        let clock = TestClock()
        let lockout = AdminLockout(failures: 2, capacity: 100)
        lockout.failed("locked", now: clock.now)
        lockout.failed("locked", now: clock.now)
        for index in 0..<1000 {
            lockout.failed("address-\(index)", now: clock.now)
            #expect(lockout.count <= 100)
        }
        // A flood of one-off failures evicts counts, never the lockout.
        #expect(lockout.count == 100)
        #expect(lockout.retryAfter("locked", now: clock.now) == 60)
        clock.advance(61)
        lockout.failed("fresh", now: clock.now)
        #expect(lockout.count == 1)
        #expect(lockout.retryAfter("fresh", now: clock.now) == nil)
        lockout.failed("fresh", now: clock.now)
        #expect(lockout.retryAfter("fresh", now: clock.now) == 60)
    }

    @Test(
        "an ADMIN_TOKEN too easy to guess stops the start, saying the rule, never the token",
        arguments: [
            String(repeating: "a", count: 64), String(repeating: "ab", count: 40),
            String(repeating: "0123456", count: 20),
            "passwordpasswordpassword1", "adminadminadminadmin1234", "123456789012345678901234",
        ]
    )
    func guessableAdminToken(token: String) {
        #expect(AdminAccess.isGuessable(token))
        do {
            _ = try GatewayConfiguration(environment: ["ADMIN_TOKEN": token])
            Issue.record("accepted")
        } catch {
            #expect(error.message.contains("ADMIN_TOKEN is too easy to guess"), "\(error.message)")
            #expect(error.message.contains("at least 8 different characters") && error.message.contains("96"))
            #expect(!error.message.contains(token))
        }
    }

    @Test(
        "a random ADMIN_TOKEN is accepted: openssl rand -hex 32, -hex 16, -base64 24",
        arguments: [
            "3f9a1c0d2e4b5a6978877665544332211ffeeddccbbaa0099887766554433221",
            "9b2e4c6d8f0a1b3c5d7e9f1a2b3c4d5e", "q8Zt1Xv0pL3mN6bR4cW9yK2jH7gF5dS1",
            Self.adminToken,
        ]
    )
    func randomAdminToken(token: String) throws {
        #expect(!AdminAccess.isGuessable(token))
        #expect(try GatewayConfiguration(environment: ["ADMIN_TOKEN": token]).adminToken == token)
    }

    @Test("ADMIN_FAILURES_PER_MINUTE is 5 unless set, at least 1")
    func failuresSetting() throws {
        #expect(try GatewayConfiguration(environment: [:]).adminFailuresPerMinute == 5)
        #expect(
            try GatewayConfiguration(environment: ["ADMIN_FAILURES_PER_MINUTE": "20"]).adminFailuresPerMinute == 20)
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration(environment: ["ADMIN_FAILURES_PER_MINUTE": "0"])
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
            await eventually("the summary counts 2 requests: only the two /api/process requests are rows") {
                guard let body = try? await Self.json(harness, "/api/admin/summary") else { return false }
                return body["requests"]?.intValue == 2
            }
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

            await eventually("the new token is accepted") {
                (try? await harness.process(
                    task: "summarize", text: StoreEndToEndTests.sample, headers: StoreEndToEndTests.bearer(secret)))?
                    .status == 200
            }

            let revoke = try await harness.client.send(
                HTTPClientRequest(
                    method: "DELETE", url: harness.base + "/api/admin/tokens/\(id)",
                    headers: StoreEndToEndTests.bearer(Self.adminToken)))
            #expect(revoke.status == 204)
            await eventually("the revoked token is refused") {
                (try? await harness.process(
                    task: "summarize", text: StoreEndToEndTests.sample, headers: StoreEndToEndTests.bearer(secret)))?
                    .status == 401
            }
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
