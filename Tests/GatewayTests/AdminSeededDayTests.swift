import ChatAPI
import EventLoop
import Gateway
import HTTPClient
import Postgres
import Store
import TestSupport
import Testing

@testable import Access
@testable import Telemetry

/// The console's answers against the store: a day of 10,000 requests of 50 callers (and
/// guests) written through the ledger's own path, then read through `/api/admin/…` and
/// compared with what those rows say.
@Suite("The console's figures against a seeded day of 10,000 requests of 50 callers", .lazyPostgresCluster)
struct AdminSeededDayTests {
    enum Backend: String, CaseIterable, Sendable {
        case sqlite, postgres
    }

    static let day: Int64 = Instant.now.utcDay - 1
    static let plans = "free:-:-:100000,pro:-:-:1000000"
    static let tasks: [String?] = ["summarize", "rewrite", "key-points", "titles", nil]
    static let failures: [(Int, String)] = [
        (400, "invalid_task"), (429, "rate_limited"), (499, "client_closed_request"), (502, "upstream_error"),
        (504, "upstream_timeout"),
    ]

    /// Yesterday's 10,000 rows, oldest first, then 30 of today's for three callers.
    static func rows() -> [LedgerRow] {
        var random = SeededGenerator(state: 40)
        let start = day * 86_400_000
        var rows: [LedgerRow] = []
        for index in 0..<10_000 {
            let caller = random.next() % 53
            let user = caller < 50 ? "caller-" + (caller < 10 ? "0" : "") + String(caller) : nil
            let failed = random.next() % 100 < 6
            let (status, code): (Int, String?) = failed ? failures[random.next() % failures.count] : (200, nil)
            let cacheHit = !failed && random.next() % 10 == 0
            let called = !cacheHit && status != 400 && status != 429
            let upstream = called ? Double(random.next() % 40_000) / 10 : nil
            let added = Double(random.next() % 300) / 100
            rows.append(
                LedgerRow(
                    requestID: "seeded-\(index)", userID: user, task: tasks[random.next() % tasks.count], tone: nil,
                    route: "/api/process", model: random.next() % 3 == 0 ? "model-b" : "model-a",
                    inputLength: 300, inputTokens: status == 200 ? 100 + random.next() % 400 : nil,
                    outputTokens: status == 200 ? 20 + random.next() % 100 : nil, status: status, code: code,
                    outcome: cacheHit ? "cache_hit" : failed ? "error" : "done", cacheHit: cacheHit,
                    durationMilliseconds: (upstream ?? 0) + added,
                    // Spread over the whole day, in order, so the newest failures are the last ones.
                    createdAtMilliseconds: start + Int64(index) * 8_640 + Int64(random.next() % 8_000),
                    plan: user.map { _ in caller % 2 == 0 ? "pro" : "free" },
                    upstream: called ? "primary" : nil, upstreamMilliseconds: upstream,
                    // A cache hit costs 0; an answer its price (unknown for every seventh).
                    costMicros: cacheHit ? 0 : status == 200 && index % 7 != 0 ? Int64(40 + index % 997) : nil))
        }
        // Today's, and in today even a minute after midnight.
        let now = max(Int64(Instant.now.secondsSinceEpoch * 1000) - 60_000, (day + 1) * 86_400_000)
        for index in 0..<30 {
            rows.append(
                LedgerRow(
                    requestID: "today-\(index)", userID: "caller-0\(index % 3)", task: "summarize", tone: nil,
                    route: "/api/process", model: "model-a", inputLength: 300, inputTokens: 1_000, outputTokens: 500,
                    status: 200, code: nil, outcome: "done", cacheHit: false, durationMilliseconds: 100,
                    createdAtMilliseconds: now + Int64(index), plan: index % 3 == 0 ? "pro" : "free",
                    upstream: "primary", upstreamMilliseconds: 99, costMicros: 1_500))
        }
        return rows
    }

    @Test(
        "summary, series, callers and failures match the rows, on SQLite and on Postgres", arguments: Backend.allCases)
    func seededDay(_ backend: Backend) async throws {
        let rows = Self.rows()
        let database = try await Self.seed(rows, on: backend)
        let plans = try PlanCatalog.parse(Self.plans)
        try await GatewayHarness.with(configure: {
            $0.database = database
            $0.adminToken = AdminConsoleTests.adminToken
            $0.plans = plans
        }) { harness in
            let from = Timestamp.iso8601(milliseconds: Self.day * 86_400_000)
            let to = Timestamp.iso8601(milliseconds: (Self.day + 1) * 86_400_000)
            let range = "from=\(from)&to=\(to)"
            let day = rows.filter { $0.createdAtMilliseconds / 86_400_000 == Self.day }
            #expect(day.count == 10_000)

            // Totals: the slots' sums and histograms.
            let summary = try await AdminConsoleTests.json(harness, "/api/admin/summary?\(range)")
            var added = LatencyHistogram()
            var upstream = LatencyHistogram()
            for row in day {
                if row.status < 400 {
                    added.add(milliseconds: max(0, row.durationMilliseconds - (row.upstreamMilliseconds ?? 0)))
                }
                if let time = row.upstreamMilliseconds, time > 0 { upstream.add(milliseconds: time) }
            }
            let errors = day.count { $0.status >= 400 }
            #expect(summary["requests"]?.intValue == 10_000)
            #expect(summary["errors"]?.intValue == errors)
            #expect(summary["cacheHits"]?.intValue == day.count { $0.cacheHit })
            #expect(
                summary["inputTokens"]?.intValue == day.filter { !$0.cacheHit }.reduce(0) { $0 + ($1.inputTokens ?? 0) }
            )
            #expect(
                summary["outputTokens"]?.intValue
                    == day.filter { !$0.cacheHit }.reduce(0) { $0 + ($1.outputTokens ?? 0) })
            #expect(summary["errorRate"]?.doubleValue == Double(errors) / 10_000)
            func cost(_ rows: [LedgerRow]) -> Int { rows.reduce(0) { $0 + Int($1.costMicros ?? 0) } }
            #expect(summary["costMicros"]?.intValue == cost(day))
            #expect(cost(day) > 1_000_000)
            #expect(summary["addedLatencyMs"]?["p50"]?.doubleValue == added.percentile(0.5))
            #expect(summary["addedLatencyMs"]?["p95"]?.doubleValue == added.percentile(0.95))
            #expect(summary["upstreamLatencyMs"]?["p50"]?.doubleValue == upstream.percentile(0.5))
            #expect(summary["upstreamLatencyMs"]?["p95"]?.doubleValue == upstream.percentile(0.95))
            #expect(summary["upstreamLatencyMs"]?["p95"]?.doubleValue.map { $0 > 0 } == true)

            // Per local day in Tehran (UTC+03:30): the UTC day splits across two local days.
            let series = try await AdminConsoleTests.json(harness, "/api/admin/series?\(range)&tzOffset=210")
            let days = try #require(series["days"]?.arrayValue)
            #expect(days.count == 2)
            for (offset, entry) in days.enumerated() {
                let local = Self.day + Int64(offset)
                let rowsOfDay = day.filter { ($0.createdAtMilliseconds + 210 * 60_000) / 86_400_000 == local }
                #expect(entry["day"]?.stringValue == Timestamp.date(day: local))
                #expect(entry["requests"]?.intValue == rowsOfDay.count)
                #expect(entry["errors"]?.intValue == rowsOfDay.count { $0.status >= 400 })
                for task in Self.tasks {
                    let ofTask = rowsOfDay.filter { $0.task == task }
                    let answered = entry["tasks"]?.arrayValue?.first { $0["task"]?.stringValue == task ?? "" }
                    #expect(answered?["requests"]?.intValue == ofTask.count, "\(task ?? "none")")
                    #expect(
                        answered?["inputTokens"]?.intValue
                            == ofTask.filter { !$0.cacheHit }.reduce(0) { $0 + ($1.inputTokens ?? 0) })
                    #expect(answered?["costMicros"]?.intValue == cost(ofTask), "\(task ?? "none")")
                }
                #expect(entry["costMicros"]?.intValue == cost(rowsOfDay))
                for (_, code) in Self.failures {
                    let counted = entry["errorCodes"]?.arrayValue?.first { $0["code"]?.stringValue == code }
                    #expect(counted?["count"]?.intValue == rowsOfDay.count { $0.code == code }, "\(code)")
                }
            }
            let csv = try await AdminConsoleTests.get(harness, "/api/admin/series?\(range)&tzOffset=210&format=csv")
            #expect(csv.header("Content-Type") == "text/csv; charset=utf-8")
            let lines = String(decoding: csv.body, as: UTF8.self).split(separator: "\r\n")
            #expect(lines.first == "day,task,requests,input_tokens,output_tokens,errors,cost_micros")
            #expect(
                lines.dropFirst().reduce(0) {
                    $0 + (Int($1.split(separator: ",", omittingEmptySubsequences: false)[6]) ?? 0)
                } == cost(day))
            #expect(
                lines.dropFirst().reduce(0) {
                    $0 + (Int($1.split(separator: ",", omittingEmptySubsequences: false)[2]) ?? 0)
                } == 10_000)

            // Callers over the UTC day; today's use against each plan's quota.
            let callers = try #require(
                try await AdminConsoleTests.json(harness, "/api/admin/callers?\(range)")["callers"]?.arrayValue)
            let users = Set(day.map { $0.userID ?? "" })
            #expect(callers.count == users.count)
            #expect(users.count == 51)
            for caller in callers {
                let user = try #require(caller["userId"]?.stringValue)
                let own = day.filter { ($0.userID ?? "") == user }
                #expect(caller["requests"]?.intValue == own.count, "\(user)")
                #expect(caller["errors"]?.intValue == own.count { $0.status >= 400 }, "\(user)")
                #expect(
                    caller["inputTokens"]?.intValue
                        == own.filter { !$0.cacheHit }.reduce(0) { $0 + ($1.inputTokens ?? 0) })
                #expect(caller["costMicros"]?.intValue == cost(own), "\(user)")
                #expect(
                    caller["lastSeen"]?.stringValue
                        == own.map(\.createdAtMilliseconds).max().map(Timestamp.iso8601(milliseconds:)))
                if user.isEmpty {
                    #expect(caller["kind"]?.stringValue == "guest")
                    #expect(caller["quotaUsedToday"]?.isNull == true)
                    continue
                }
                #expect(caller["kind"]?.stringValue == "token")
                #expect(caller["plan"]?.stringValue == own.last?.plan)
                let today = rows.filter { $0.userID == user && $0.createdAtMilliseconds / 86_400_000 == Self.day + 1 }
                let spent = today.reduce(0) { $0 + ($1.inputTokens ?? 0) + ($1.outputTokens ?? 0) }
                let quota = own.last?.plan == "pro" ? 1_000_000 : 100_000
                #expect(caller["tokensToday"]?.intValue == spent, "\(user)")
                #expect(caller["dailyTokenQuota"]?.intValue == quota)
                #expect(caller["quotaUsedToday"]?.doubleValue == Double(spent) / Double(quota))
            }
            #expect(callers.first?["requests"]?.intValue == callers.compactMap { $0["requests"]?.intValue }.max())

            // Per model that answered, with its cost; as CSV too.
            let models = try #require(
                try await AdminConsoleTests.json(harness, "/api/admin/models?\(range)")["models"]?.arrayValue)
            #expect(models.compactMap { $0["model"]?.stringValue } == ["model-a", "model-b"])
            for model in models {
                let name = try #require(model["model"]?.stringValue)
                let own = day.filter { $0.model == name }
                #expect(model["requests"]?.intValue == own.count)
                #expect(model["costMicros"]?.intValue == cost(own))
                #expect(
                    model["outputTokens"]?.intValue
                        == own.filter { !$0.cacheHit }.reduce(0) { $0 + ($1.outputTokens ?? 0) })
            }
            let modelsCSV = try await AdminConsoleTests.get(harness, "/api/admin/models?\(range)&format=csv")
            let modelLines = String(decoding: modelsCSV.body, as: UTF8.self).split(separator: "\r\n")
            #expect(modelLines.first == "model,requests,input_tokens,output_tokens,errors,cost_micros")
            #expect(modelLines.count == 3)

            // The newest failures, newest first.
            let failed = try #require(
                try await AdminConsoleTests.json(harness, "/api/admin/failures?limit=50")["failures"]?.arrayValue)
            let expected = day.filter { $0.status >= 400 }.suffix(50).reversed().map(\.requestID)
            #expect(failed.map { $0["requestId"]?.stringValue } == expected.map { Optional($0) })
            #expect(failed.first?["route"]?.stringValue == "/api/process")
        }
    }

    /// Writes `rows` through the store's append (the ledger writer's path), in batches of 500.
    static func seed(_ rows: [LedgerRow], on backend: Backend) async throws -> DatabaseLocation {
        switch backend {
        case .sqlite:
            let path = storeDirectory() + "/seeded.sqlite"
            let pool = try BlockingPool(threadCount: 1, name: "seed")
            let store = try await SQLiteStore.open(path: path, pool: pool)
            for start in stride(from: 0, to: rows.count, by: 500) {
                try await store.append(Array(rows[start..<min(start + 500, rows.count)]))
            }
            await store.close()
            await pool.shutdown()
            return .sqlite(path: path)
        case .postgres:
            let lazy = try #require(LazyPostgresCluster.current)
            let (cluster, database) = try await lazy.createDatabase()
            try await withClient(cluster.configuration(database: database)) { client in
                let store = try await PostgresStore.open(client: client)
                for start in stride(from: 0, to: rows.count, by: 500) {
                    try await store.append(Array(rows[start..<min(start + 500, rows.count)]))
                }
            }
            return try DatabaseLocation(
                url: "postgres://\(PostgresCluster.user)@127.0.0.1:\(cluster.port)/\(database)?sslmode=disable")
        }
    }
}
