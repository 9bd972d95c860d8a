import EventLoop
import Postgres
import TestSupport
import Testing

@Suite("Postgres client on a live server", .postgresCluster)
struct PostgresClientTests {
    var cluster: PostgresCluster {
        get throws { try #require(PostgresCluster.shared) }
    }

    /// A table name of this test's own, so tests running side by side do not meet.
    func uniqueTable(_ prefix: String) -> String {
        "\(prefix)_\(UInt32.random(in: 0...UInt32.max))"
    }

    @Test("connects and answers SELECT 1")
    func selectOne() async throws {
        try await withClient(try cluster.configuration()) { client in
            let result = try await client.query("SELECT 1 AS one")
            #expect(result.columns == ["one"])
            #expect(result.rows.count == 1)
            #expect(result.rows.first?.int(0) == 1)
            #expect(result.affectedRows == 1)
        }
    }

    @Test("a host name is looked up off the loop, and connects")
    func hostName() async throws {
        var configuration = try cluster.configuration()
        configuration.host = "localhost"
        try await withClient(configuration) { (client: PostgresClient) async throws -> Void in
            #expect(try await client.query("SELECT 1").rows.first?.int(0) == 1)
        }
    }

    @Test("binds NULL, Persian text, bytes, integers, booleans and doubles")
    func parameters() async throws {
        let persian = "سلام، دنیا! متن فارسی ۱۲۳"
        let bytes: [UInt8] = [0, 1, 2, 0x5C, 0x78, 0x27, 0x22, 0x7F, 0x80, 0xFE, 0xFF, 0]
        try await withClient(try cluster.configuration()) { client in
            let result = try await client.query(
                "SELECT $1::text IS NULL, $2::text, $3::bytea, $4::int8 + 1, $5::bool, $6::float8 * 2,"
                    + " length($2::text), $7::int8",
                [.null, .text(persian), .bytes(bytes), .int(41), .bool(true), .double(1.25), .int(Int.min)]
            )
            let row = try #require(result.rows.first)
            #expect(row.bool(0) == true)
            #expect(row.string(1) == persian)
            #expect(row[2] == bytes)
            #expect(row.int(3) == 42)
            #expect(row.bool(4) == true)
            #expect(row.double(5) == 2.5)
            #expect(row.int(6) == persian.count)
            #expect(row.int(7) == Int.min)
            #expect(result.columnTypes[2] == 17)

            let table = uniqueTable("values")
            _ = try await client.query("CREATE TABLE \(table) (id int8 PRIMARY KEY, name text, data bytea)")
            let inserted = try await client.query(
                "INSERT INTO \(table) VALUES ($1, $2, $3), ($4, $5, $6)",
                [1, .text(persian), .bytes(bytes), 2, nil, .null])
            #expect(inserted.affectedRows == 2)
            let back = try await client.query("SELECT id, name, data FROM \(table) ORDER BY id")
            #expect(back.columns == ["id", "name", "data"])
            #expect(back.rows.map { $0.int(0) } == [1, 2])
            #expect(back.rows[0].string(1) == persian)
            #expect(back.rows[0][2] == bytes)
            #expect(back.rows[1][1] == nil)
            #expect(back.rows[1][2] == nil)
            let empty = try await client.query("SELECT data FROM \(table) WHERE id = $1", [.int(3)])
            #expect(empty.rows.isEmpty)
            #expect(empty.columns == ["data"])
        }
    }

    @Test("a unique violation carries SQLSTATE 23505, no bound value, and the connection stays usable")
    func uniqueViolation() async throws {
        try await withClient(try cluster.configuration()) { client in
            let table = uniqueTable("unique")
            _ = try await client.query("CREATE TABLE \(table) (key text PRIMARY KEY)")
            _ = try await client.query("INSERT INTO \(table) VALUES ($1)", ["bound-secret-value"])
            do throws(PostgresError) {
                _ = try await client.query("INSERT INTO \(table) VALUES ($1)", ["bound-secret-value"])
                Issue.record("a duplicate key was accepted")
            } catch {
                #expect(error.code == .server)
                #expect(error.sqlState == "23505")
                #expect(error.condition == .uniqueViolation)
                #expect(!error.isTransient)
                #expect(error.query == "INSERT INTO \(table) VALUES ($1)")
                #expect(!String(describing: error).contains("bound-secret-value"))
                #expect(!String(reflecting: error).contains("bound-secret-value"))
                #expect(String(reflecting: error).contains("duplicate key"))
            }
            let count = try await client.query("SELECT count(*) FROM \(table)")
            #expect(count.rows.first?.int(0) == 1)
            do throws(PostgresError) {
                _ = try await client.query("SELEC nonsense")
                Issue.record("a syntax error was accepted")
            } catch {
                #expect(error.condition == .syntaxError)
            }
            #expect(try await client.query("SELECT 2").rows.first?.int(0) == 2)
        }
    }

    @Test("many queries from many tasks at once each get their own result")
    func concurrentQueries() async throws {
        try await withClient(try cluster.configuration(), loops: 2, connectionsPerLoop: 2) { client in
            try await withThrowingTaskGroup(of: (Int, Int?).self) { group in
                for index in 0..<300 {
                    group.addTask {
                        let result = try await client.query("SELECT $1::int8 * 2, pg_backend_pid()", [.int(index)])
                        return (index, result.rows.first?.int(0))
                    }
                }
                var seen = 0
                for try await (index, doubled) in group {
                    #expect(doubled == index * 2)
                    seen += 1
                }
                #expect(seen == 300)
            }
        }
    }

    @Test("a transaction commits all of its queries, or none when one fails")
    func transactions() async throws {
        try await withClient(try cluster.configuration()) { client in
            let table = uniqueTable("ledger")
            _ = try await client.query("CREATE TABLE \(table) (id int8 PRIMARY KEY, note text)")
            let results = try await client.transaction([
                PostgresQuery("INSERT INTO \(table) VALUES ($1, $2), ($3, $4), ($5, $6)", [1, "a", 2, "b", 3, "c"]),
                PostgresQuery("UPDATE \(table) SET note = $1 WHERE id = $2", ["z", 3]),
            ])
            #expect(results.map(\.affectedRows) == [3, 1])
            do throws(PostgresError) {
                _ = try await client.transaction([
                    PostgresQuery("INSERT INTO \(table) VALUES ($1, $2)", [4, "d"]),
                    PostgresQuery("INSERT INTO \(table) VALUES ($1, $2)", [1, "duplicate"]),
                ])
                Issue.record("a transaction with a duplicate key committed")
            } catch {
                #expect(error.condition == .uniqueViolation)
                #expect(error.query == "INSERT INTO \(table) VALUES ($1, $2)")
            }
            // Inside a failed transaction left open this would fail with 25P02: it was rolled back.
            let rows = try await client.query("SELECT id, note FROM \(table) ORDER BY id")
            #expect(rows.rows.map { $0.int(0) } == [1, 2, 3])
            #expect(rows.rows.map { $0.string(1) } == ["a", "b", "z"])
            let open = try await client.query("SELECT txid_current_if_assigned() IS NULL")
            #expect(open.rows.first?.bool(0) == true)
        }
    }

    @Test("transactions and single queries side by side each get their own results")
    func transactionsBesideQueries() async throws {
        try await withClient(try cluster.configuration(), loops: 2) { client in
            let table = uniqueTable("mixed")
            _ = try await client.query("CREATE TABLE \(table) (id int8 PRIMARY KEY)")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<60 {
                    group.addTask {
                        if index.isMultiple(of: 2) {
                            let results = try await client.transaction([
                                PostgresQuery("INSERT INTO \(table) VALUES ($1)", [.int(index)]),
                                PostgresQuery("SELECT $1::int8 + 1", [.int(index)]),
                            ])
                            #expect(results.count == 2)
                            #expect(results.last?.rows.first?.int(0) == index + 1)
                        } else {
                            let result = try await client.query("SELECT $1::int8", [.int(index)])
                            #expect(result.rows.first?.int(0) == index)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await client.query("SELECT count(*) FROM \(table)").rows.first?.int(0) == 30)
            #expect(try await client.transaction([]).isEmpty)
        }
    }

    @Test(
        "a thousand rows go in one multi-row INSERT; more parameters than the protocol carries are refused unsent"
    )
    func multiRowInsert() async throws {
        try await withClient(try cluster.configuration()) { (client: PostgresClient) async throws -> Void in
            let table = uniqueTable("batch")
            _ = try await client.query("CREATE TABLE \(table) (id int8 PRIMARY KEY, note text, data bytea)")
            var placeholders: [String] = []
            var values: [PostgresValue] = []
            for row in 0..<1000 {
                placeholders.append("($\(3 * row + 1), $\(3 * row + 2), $\(3 * row + 3))")
                values += [.int(row), .text("ردیف \(row)"), .bytes([UInt8(row % 256)])]
            }
            let inserted = try await client.transaction([
                PostgresQuery("INSERT INTO \(table) VALUES " + placeholders.joined(separator: ", "), values)
            ])
            #expect(inserted.first?.affectedRows == 1000)
            let check = try await client.query("SELECT count(*), sum(id), max(note) FROM \(table)")
            #expect(check.rows.first?.int(0) == 1000)
            #expect(check.rows.first?.int(1) == 499_500)
            let tooMany = [PostgresValue](repeating: .int(1), count: PostgresQuery.maxParameters + 1)
            do throws(PostgresError) {
                _ = try await client.query("SELECT 1", tooMany)
                Issue.record("65,536 parameters were sent")
            } catch {
                #expect(error.code == .invalidQuery)
            }
            #expect(try await client.query("SELECT 1").rows.count == 1)
        }
    }

    // A minute's sleep cannot end by itself while the test runs: the error's code alone says the
    // timeout, the cancel or the server's end cut it short, however loaded the machine is.
    @Test("a transaction past its timeout fails as a timeout, keeps nothing, and the client goes on")
    func transactionTimeout() async throws {
        try await withClient(try cluster.configuration(queryTimeout: .milliseconds(300))) { client in
            let table = uniqueTable("slow")
            _ = try await client.query("CREATE TABLE \(table) (id int8)")
            do throws(PostgresError) {
                _ = try await client.transaction([
                    PostgresQuery("INSERT INTO \(table) VALUES (1)"),
                    PostgresQuery("SELECT pg_sleep(60)"),
                    PostgresQuery("INSERT INTO \(table) VALUES (2)"),
                ])
                Issue.record("a transaction with pg_sleep(60) finished within a 300 ms timeout")
            } catch {
                #expect(error.code == .timeout)
            }
            #expect(try await client.query("SELECT count(*) FROM \(table)").rows.first?.int(0) == 0)
        }
    }

    @Test("a query past its timeout fails as a timeout, and the client goes on")
    func queryTimeout() async throws {
        try await withClient(try cluster.configuration(queryTimeout: .milliseconds(300))) { client in
            do throws(PostgresError) {
                _ = try await client.query("SELECT pg_sleep(60)")
                Issue.record("pg_sleep(60) finished within a 300 ms timeout")
            } catch {
                #expect(error.code == .timeout)
                #expect(error.isTransient)
            }
            #expect(try await client.query("SELECT 3").rows.first?.int(0) == 3)
            // A call's own timeout wins over the configuration's.
            let slow = try await client.query("SELECT pg_sleep(0.5), 4", timeout: .seconds(10))
            #expect(slow.rows.first?.int(1) == 4)
        }
    }

    @Test("a cancelled caller's query is cancelled on the server")
    func taskCancellation() async throws {
        try await withClient(try cluster.configuration()) { (client: PostgresClient) async throws -> Void in
            let task = Task { try await client.query("SELECT pg_sleep(60), 'cancel me'") }
            try await withClient(try cluster.configuration()) { (other: PostgresClient) async throws -> Void in
                await eventually("the query to cancel is running") {
                    let sql = """
                        SELECT count(*) FROM pg_stat_activity
                        WHERE state = 'active' AND query LIKE '%cancel me%' AND pid <> pg_backend_pid()
                        """
                    return (try? await other.query(sql))?.rows.first?.int(0) == 1
                }
            }
            task.cancel()
            let result = await task.result
            #expect(throws: PostgresError.self) { try result.get() }
            if case .failure(let error as PostgresError) = result { #expect(error.code == .cancelled) }
            #expect(try await client.query("SELECT 5").rows.first?.int(0) == 5)
        }
    }

    @Test("a session the server ends fails its query with a connection error, and the client reconnects")
    func terminatedBackend() async throws {
        let configuration = try cluster.configuration()
        try await withClient(configuration) { (client: PostgresClient) async throws -> Void in
            let pid = try #require(try await client.query("SELECT pg_backend_pid()").rows.first?.int(0))
            let sleeper = Task { try await client.query("SELECT pg_sleep(60)") }
            try await withClient(configuration) { (other: PostgresClient) async throws -> Void in
                // Only once the sleep runs: terminating the idle session would test something else.
                await eventually("the sleeping session is terminated") {
                    let sql = """
                        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                        WHERE pid = $1::int4 AND state = 'active' AND query LIKE 'SELECT pg_sleep%'
                        """
                    return (try? await other.query(sql, [.int(pid)]))?.rows.first?.bool(0) == true
                }
            }
            let result = await sleeper.result
            if case .failure(let error as PostgresError) = result {
                #expect(error.code == .connection)
                #expect(error.isTransient)
            } else {
                Issue.record("the query on a terminated session did not fail: \(result)")
            }
            await eventually("the client answers again after its session was terminated") {
                (try? await client.query("SELECT 1"))?.rows.count == 1
            }
        }
    }

    @Test("stopping lets a query in flight finish, then the client refuses queries")
    func stopped() async throws {
        let group = try EventLoopGroup(loopCount: 1, namePrefix: "pg-test")
        let client = PostgresClient(configuration: try cluster.configuration(), group: group)
        try await client.start()
        #expect(try await client.query("SELECT 1").rows.count == 1)
        // A query in flight when stop begins finishes within the deadline. It waits on an
        // advisory lock the observer holds until the stop has begun, so it is in flight then
        // however slowly a loaded machine runs either side.
        let answered = try await withClient(try cluster.configuration()) {
            (other: PostgresClient) async throws -> PostgresResult in
            _ = try await other.query("SELECT pg_advisory_lock(48001)")
            let inFlight = Task { try await client.query("SELECT pg_advisory_xact_lock(48001), 7") }
            await eventually("the query in flight waits for the advisory lock") {
                let seen = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query = $1::text"
                return (try? await other.query(seen, [.text("SELECT pg_advisory_xact_lock(48001), 7")]))?.rows.first?
                    .int(0) == 1
            }
            let stopping = Task { await client.stop(deadline: MonotonicInstant.now().advanced(by: .seconds(60))) }
            await eventually("the client is stopping") { client.isStopping }
            _ = try await other.query("SELECT pg_advisory_unlock(48001)")
            let answered = try await inFlight.value
            await stopping.value
            return answered
        }
        #expect(answered.rows.first?.int(1) == 7)
        await #expect(throws: PostgresError(.closed, message: "the client is stopped")) {
            _ = try await client.query("SELECT 1")
        }
        await group.shutdownGracefully()
    }
}

@Suite("Postgres client and a server that goes away")
struct PostgresReconnectTests {
    @Test("keeps trying while the server is down, then reconnects by itself after a restart")
    func reconnects() async throws {
        let cluster = try await PostgresCluster.start()
        do {
            try await cluster.stopServer()
            try await withClient(cluster.configuration(queryTimeout: .milliseconds(300)), waitForConnection: false) {
                client in
                // Down: a query fails with a connection error within its timeout.
                do throws(PostgresError) {
                    _ = try await client.query("SELECT 1")
                    Issue.record("a query succeeded with the server down")
                } catch {
                    #expect(error.code == .connection)
                }
                try await cluster.startServer()
                await eventually("the client connects once the server is back") {
                    (try? await client.query("SELECT 1"))?.rows.count == 1
                }
                let before = try await client.query("SELECT pg_backend_pid()").rows.first?.int(0)
                try await cluster.restart()
                await eventually("the client reconnects after the restart") {
                    (try? await client.query("SELECT 1"))?.rows.count == 1
                }
                let after = try await client.query("SELECT pg_backend_pid()").rows.first?.int(0)
                #expect(before != after)
            }
        } catch {
            await cluster.remove()
            throw error
        }
        await cluster.remove()
    }
}
