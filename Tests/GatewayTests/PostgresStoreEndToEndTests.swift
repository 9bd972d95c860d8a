import GatewayCommandLine
import HTTPClient
import JSON
import Postgres
import TestSupport
import Testing

@testable import Gateway

@Suite(
    "The store end to end on Postgres: DATABASE_URL=postgres://…, history, usage and the command line", .postgresCluster
)
struct PostgresStoreEndToEndTests {
    static let sample = ProcessEndToEndTests.sample

    /// `DATABASE_URL` for a new database of the suite's cluster.
    static func databaseURL() async throws -> String {
        let cluster = try #require(PostgresCluster.shared)
        let database = "gateway_\(UInt32.random(in: 0...UInt32.max))"
        try await withClient(cluster.configuration()) { client in
            _ = try await client.query("CREATE DATABASE \(database)")
        }
        return "postgres://\(PostgresCluster.user)@127.0.0.1:\(cluster.port)/\(database)?sslmode=disable"
    }

    @Test(
        "a gateway on Postgres answers, /api/history and /api/usage show its rows; the command line's token works"
    )
    func historyAndUsage() async throws {
        let location = try DatabaseLocation(url: try await Self.databaseURL())
        var configuration = GatewayConfiguration()
        configuration.database = location
        let created = await StoreCommand.createToken(user: "dana", plan: "default", label: "phone").run(
            configuration: configuration)
        #expect(created.status == 0, "\(created.error)")
        let token = String(created.output.prefix { $0 != "\n" })
        #expect(token.hasPrefix("tgk_"))

        try await GatewayHarness.with(configure: { $0.database = location }) { harness in
            let headers = StoreEndToEndTests.bearer(token)
            for index in 0..<3 {
                let response = try await harness.process(
                    task: "summarize", text: Self.sample, headers: headers + [("X-Request-Id", "pg-\(index)")])
                #expect(response.status == 200)
            }
            await eventually("the history has the 3 rows") {
                guard let response = try? await StoreEndToEndTests.get(harness, "/api/history?limit=100", token: token),
                    let body = try? StoreEndToEndTests.json(response)
                else { return false }
                return body["items"]?.arrayValue?.count == 3
            }
            let page = try StoreEndToEndTests.json(
                try await StoreEndToEndTests.get(harness, "/api/history?limit=2", token: token))
            #expect(page["items"]?.arrayValue?.map { $0["id"]?.stringValue } == ["pg-2", "pg-1"])
            let cursor = try #require(page["nextCursor"]?.stringValue)
            let rest = try StoreEndToEndTests.json(
                try await StoreEndToEndTests.get(harness, "/api/history?limit=2&before=\(cursor)", token: token))
            #expect(rest["items"]?.arrayValue?.map { $0["id"]?.stringValue } == ["pg-0"])
            // Another instance on the same database opens the cursor as this one does.
            try await harness.peer(configure: { $0.database = location }) { peer in
                let same = try StoreEndToEndTests.json(
                    try await StoreEndToEndTests.get(peer, "/api/history?limit=2&before=\(cursor)", token: token))
                #expect(same["items"]?.arrayValue?.map { $0["id"]?.stringValue } == ["pg-0"])
                let tampered = try await StoreEndToEndTests.get(
                    peer, "/api/history?limit=2&before=\(cursor.dropFirst())A", token: token)
                #expect(tampered.status == 400)
            }
            #expect(try await StoreEndToEndTests.delete(harness, "/api/history/pg-0", token: token).status == 204)

            let usage = try StoreEndToEndTests.json(
                try await StoreEndToEndTests.get(harness, "/api/usage", token: token))
            #expect(usage["userId"]?.stringValue == "dana")
            #expect(usage["today"]?["requests"]?.intValue == 3)
            #expect((usage["today"]?["totalTokens"]?.intValue ?? 0) > 0)
        }

        let report = await StoreCommand.usage(since: nil, user: "dana", format: .csv).run(configuration: configuration)
        #expect(report.status == 0)
        #expect(report.output.split(separator: "\r\n").count == 2)
        let tokens = await StoreCommand.listTokens(format: .json).run(configuration: configuration)
        #expect(tokens.output.contains("\"last_used\":\"20"))
        let check = await StoreCommand.check.run(configuration: configuration)
        #expect(check.output == "ok\n")
        let backup = await StoreCommand.backup(file: "/tmp/never-written.sqlite").run(configuration: configuration)
        #expect(backup.status == 1)
        #expect(backup.error.contains("pg_dump"))
    }

    @Test("db check on Postgres exits 0 when all is well, 1 when it finds damage, 2 when it cannot check")
    func checkExitCodes() async throws {
        let url = try await Self.databaseURL()
        var configuration = GatewayConfiguration()
        configuration.database = try DatabaseLocation(url: url)
        #expect(
            await StoreCommand.createToken(user: "erin", plan: "default", label: nil).run(configuration: configuration)
                .status == 0)
        let sound = await StoreCommand.check.run(configuration: configuration)
        #expect(sound.status == 0 && sound.output == "ok\n", "\(sound)")

        let cluster = try #require(PostgresCluster.shared)
        let database = String(url.split(separator: "/").last?.split(separator: "?").first ?? "")
        try await withClient(cluster.configuration(database: database)) { client in
            _ = try await client.query(
                """
                INSERT INTO usage_daily (user_id, day, requests, input_tokens, output_tokens)
                VALUES ('erin', 1, -1, 0, 0)
                """
            )
        }
        let damaged = await StoreCommand.check.run(configuration: configuration)
        #expect(damaged.status == 1, "\(damaged)")
        #expect(damaged.output.contains("usage_daily"))

        configuration.database = try DatabaseLocation(
            url: url.replacing("/\(database)?", with: "/\(database)_missing?"))
        let missing = await StoreCommand.check.run(configuration: configuration)
        #expect(missing.status == 2, "\(missing)")
    }

    @Test("two gateways on one Postgres share a job's chunks: each chunk is asked once, both instances answer some")
    func jobsAcrossInstances() async throws {
        let location = try DatabaseLocation(url: try await Self.databaseURL())
        func configure(_ configuration: inout GatewayConfiguration) {
            configuration.database = location
            configuration.jobs.chunkTokens = 400
            configuration.jobs.overlapTokens = 0
            configuration.jobs.concurrencyPerJob = 6
            // Each instance takes at most half of what the job may run at once.
            configuration.jobs.workers = 3
        }
        try await GatewayHarness.with(configure: configure) { first in
            try await first.peer(configure: configure) { second in
                let text = JobsEndToEndTests.longText(sentences: 240, extra: " [mock:latency-ms=150]")
                let chunks = JobsEndToEndTests.chunks(text, first.running.gateway.configuration, overlap: false)
                let id = try await JobsEndToEndTests.submitted(first, task: "summarize", text: text, token: nil)
                var job: JSONValue?
                await eventually(
                    "the job succeeds on the second instance: \(String(describing: job))", within: .seconds(60)
                ) {
                    job = try? await JobsEndToEndTests.job(second, id, token: nil)
                    return job?["status"]?.stringValue == "succeeded"
                }
                #expect((job?["progress"]?["done"]?.intValue ?? 0) > chunks.count)
                #expect(job?["progress"]?["done"]?.intValue == job?["progress"]?["total"]?.intValue)
                let sent = first.mock.receivedUserTexts
                for chunk in chunks { #expect(sent.filter { $0.contains(chunk.text) }.count == 1) }
                func answered(_ harness: GatewayHarness) async throws -> Int {
                    let metrics = String(
                        decoding: try await harness.client.send(HTTPClientRequest(url: harness.base + "/metrics")).body,
                        as: UTF8.self)
                    let line = metrics.split(separator: "\n").first {
                        $0.hasPrefix("textgateway_job_items_total{kind=\"map\"}")
                    }
                    return Int(line?.split(separator: " ").last.flatMap { Double($0) } ?? 0)
                }
                let (byFirst, bySecond) = (try await answered(first), try await answered(second))
                #expect(byFirst + bySecond == chunks.count)
                #expect(byFirst > 0 && bySecond > 0, "\(byFirst) and \(bySecond)")
            }
        }
    }

    @Test("DATABASE_URL takes postgres:// and postgresql://, and never shows the password")
    func parsesURLs() throws {
        let location = try DatabaseLocation(
            url: "postgres://app:s3cret%21@db.internal:6543/textgateway?sslmode=require")
        guard case .postgres(let configuration) = location else {
            Issue.record("not a Postgres location: \(location)")
            return
        }
        #expect(configuration.host == "db.internal")
        #expect(configuration.port == 6543)
        #expect(configuration.user == "app")
        #expect(configuration.password == "s3cret!")
        #expect(configuration.database == "textgateway")
        #expect(!"\(location)".contains("s3cret"))
        #expect(
            try DatabaseLocation(url: "POSTGRESQL://app@db/textgateway")
                == .postgres(
                    PostgresConfiguration(
                        host: "db", user: "app", database: "textgateway"
                    )))
        #expect(throws: ConfigurationError.self) { try DatabaseLocation(url: "postgres://app:s3cret@db:notaport/x") }
        do {
            _ = try DatabaseLocation(url: "postgres://app:s3cret@db:notaport/x")
        } catch {
            #expect(!"\(error)".contains("s3cret"))
        }
    }
}
