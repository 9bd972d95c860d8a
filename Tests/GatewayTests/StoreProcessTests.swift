import Gateway
import HTTPClient
import HTTPServer
import JSON
import MockUpstream
import TestSupport
import Testing

@testable import Access

#if canImport(Glibc)
    import Glibc
#endif

/// The gateway as its users run it — a process on a SQLite file — killed, stopped, restarted
/// and driven by its own command line.
@Suite("The store across processes: kill -9, SIGTERM, the command line, faults", .serialized)
struct StoreProcessTests {
    static let sample = ProcessEndToEndTests.sample
    static let token = "tg-process-token-0123456789"

    /// A mock upstream for the children, and the environment that points them at it.
    struct Upstream {
        let mock: MockUpstream

        static func start() async throws -> Upstream {
            let mock = try await MockUpstream.started(apiKey: "k")
            return Upstream(mock: mock)
        }

        func environment(database: String, _ extra: [String: String] = [:]) -> [String: String] {
            CommandLineProcessTests.baseEnvironment.merging(
                [
                    "DARVAREH_API_KEY": "k", "DARVAREH_MODEL_ID": "m", "DARVAREH_BASE_URL": mock.baseURL,
                    "DATABASE_URL": "sqlite:" + database,
                    "GATEWAY_TOKENS": "\(TokenStore.hashLine(forToken: StoreProcessTests.token)):alice:default",
                    "SHUTDOWN_GRACE_SECONDS": "5", "RATE_LIMITS": "off",
                ].merging(extra) { $1 }
            ) { $1 }
        }
    }

    /// A running gateway child and its port.
    struct Gateway {
        let child: ChildProcess
        let port: Int

        static func start(
            _ environment: [String: String], directory: String, fileSizeLimitKiB: Int? = nil, umask: String? = nil
        ) async throws -> Gateway {
            let child = try ChildProcess(
                "text-gateway", arguments: ["serve", "--hostname", "127.0.0.1", "--port", "0"],
                environment: environment, workingDirectory: directory, fileSizeLimitKiB: fileSizeLimitKiB, umask: umask)
            guard await child.waitForOutput("started", seconds: 20, onTimeout: .returnsFalse) else {
                throw ChildProcess.Failure(description: "the gateway did not start: \(child.output)")
            }
            let line =
                child.output.split(separator: "\n").first { $0.contains(" started ") || $0.contains("INFO started") }
                ?? ""
            let port =
                Int(line.split(separator: " ").first { $0.hasPrefix("address=") }?.split(separator: ":").last ?? "")
                ?? 0
            return Gateway(child: child, port: port)
        }

        var base: String { "http://127.0.0.1:\(port)" }
    }

    static func process(_ client: HTTPClient, _ base: String, id: String, token: String = token) async throws -> Int {
        let body = "{\"task\":\"summarize\",\"text\":\(jsonString(sample))}"
        let response = try await client.send(
            HTTPClientRequest(
                method: "POST", url: base + "/api/process",
                headers: [
                    ("Content-Type", "application/json"), ("Authorization", "Bearer \(token)"), ("X-Request-Id", id),
                ],
                body: Array(body.utf8)
            ))
        return response.status
    }

    /// The request ids alice's history holds, read through a gateway.
    static func historyIDs(_ client: HTTPClient, _ gateway: Gateway) async throws -> Set<String> {
        var ids: Set<String> = []
        var cursor: String?
        while true {
            let query = "?limit=100" + (cursor.map { "&before=\($0)" } ?? "")
            let response = try await client.send(
                HTTPClientRequest(
                    url: gateway.base + "/api/history" + query, headers: [("Authorization", "Bearer \(token)")]))
            #expect(response.status == 200)
            let page = try JSONValue.parse(response.body)
            for item in page["items"]?.arrayValue ?? [] { if let id = item["id"]?.stringValue { ids.insert(id) } }
            guard let next = page["nextCursor"]?.stringValue else { return ids }
            cursor = next
        }
    }

    /// Runs `text-gateway <arguments>` to its end.
    static func command(_ arguments: [String], _ environment: [String: String], directory: String) async throws -> (
        status: Int32?, output: String
    ) {
        let child = try ChildProcess(
            "text-gateway", arguments: arguments, environment: environment, workingDirectory: directory)
        let status = await child.waitForExit(seconds: 30)
        return (status, child.output)
    }

    @Test("strict: every answered request is in the history after kill -9 and a restart")
    func strictSurvivesKill() async throws {
        let upstream = try await Upstream.start()
        let directory = storeDirectory()
        let environment = upstream.environment(database: directory + "/gw.sqlite", ["LEDGER_DURABILITY": "strict"])
        let client = try HTTPClient()
        let first = try await Gateway.start(environment, directory: directory)
        let base = first.base
        let answered = try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<60 {
                group.addTask {
                    try await Self.process(client, base, id: "strict-kill-\(index)") == 200
                        ? "strict-kill-\(index)" : nil
                }
            }
            var ids: Set<String> = []
            for try await id in group { if let id { ids.insert(id) } }
            return ids
        }
        #expect(answered.count == 60)
        let metrics = try await client.send(HTTPClientRequest(url: first.base + "/metrics"))
        #expect(String(decoding: metrics.body, as: UTF8.self).contains("\ntextgateway_ledger_rows_dropped_total 0\n"))
        first.child.signal(SIGKILL)
        #expect(await first.child.waitForExit(seconds: 10) == 128 + SIGKILL)
        let second = try await Gateway.start(environment, directory: directory)
        #expect(try await Self.historyIDs(client, second).isSuperset(of: answered))
        second.child.signal(SIGTERM)
        #expect(await second.child.waitForExit(seconds: 15) == 0)
        await client.shutdown()
        await upstream.mock.shutdown()
    }

    @Test("fast: kill -9 loses at most the rows of the last batch interval; SIGTERM loses none")
    func fastLosesAtMostOneBatch() async throws {
        let upstream = try await Upstream.start()
        let directory = storeDirectory()
        let environment = upstream.environment(database: directory + "/gw.sqlite")
        let client = try HTTPClient()
        let first = try await Gateway.start(environment, directory: directory)
        var settled: Set<String> = []
        for index in 0..<30 {
            #expect(try await Self.process(client, first.base, id: "fast-\(index)") == 200)
            settled.insert("fast-\(index)")
        }
        // Their rows committed (history reads what is), then a last few answers and the kill
        // right after them.
        await eventually("the history has every settled request") {
            (try? await Self.historyIDs(client, first))?.isSuperset(of: settled) == true
        }
        for index in 0..<5 { #expect(try await Self.process(client, first.base, id: "fast-last-\(index)") == 200) }
        first.child.signal(SIGKILL)
        #expect(await first.child.waitForExit(seconds: 10) == 128 + SIGKILL)

        let second = try await Gateway.start(environment, directory: directory)
        let kept = try await Self.historyIDs(client, second)
        #expect(kept.isSuperset(of: settled))
        for index in 0..<20 { #expect(try await Self.process(client, second.base, id: "term-\(index)") == 200) }
        second.child.signal(SIGTERM)
        #expect(await second.child.waitForExit(seconds: 15) == 0)

        let third = try await Gateway.start(environment, directory: directory)
        let afterTerm = try await Self.historyIDs(client, third)
        #expect(afterTerm.isSuperset(of: Set((0..<20).map { "term-\($0)" })))
        third.child.signal(SIGTERM)
        #expect(await third.child.waitForExit(seconds: 15) == 0)
        #expect(third.child.output.contains("stopped"))
        await client.shutdown()
        await upstream.mock.shutdown()
    }

    @Test("the command line's tokens, usage and backup work against a running gateway")
    func commandLineRoundTrip() async throws {
        let upstream = try await Upstream.start()
        let directory = storeDirectory()
        let environment = upstream.environment(database: directory + "/gw.sqlite")
        let client = try HTTPClient()
        let gateway = try await Gateway.start(environment, directory: directory)

        let created = try await Self.command(
            ["tokens", "create", "--user", "carol", "--label", "phone app"], environment, directory: directory)
        #expect(created.status == 0)
        let token = try #require(created.output.split(separator: "\n").first { $0.hasPrefix("tgk_") }.map(String.init))
        #expect(token.count >= 4 + 43)
        await eventually("the new token is accepted") {
            (try? await Self.process(client, gateway.base, id: "carol-1", token: token)) == 200
        }

        let listed = try await Self.command(["tokens", "list"], environment, directory: directory)
        #expect(listed.status == 0)
        #expect(listed.output.contains("carol") && listed.output.contains("phone app"))
        #expect(!listed.output.contains(token) && !listed.output.contains(String(token.dropFirst(4).prefix(12))))
        let json = try await Self.command(["tokens", "list", "--format", "json"], environment, directory: directory)
        let tokens = try JSONValue.parse(
            Array((json.output.split(separator: "\n").first { $0.hasPrefix("{") } ?? "").utf8))
        let carol = try #require(tokens["tokens"]?.arrayValue?.first { $0["user"]?.stringValue == "carol" })
        let id = try #require(carol["id"]?.stringValue)
        await eventually("tokens list shows when the token was last used") {
            let again = try? await Self.command(
                ["tokens", "list", "--format", "json"], environment, directory: directory)
            return again?.output.contains("\"last_used\":\"") == true
        }

        let usage = try await Self.command(
            ["usage", "--format", "csv", "--user", "carol"], environment, directory: directory)
        #expect(usage.status == 0)
        #expect(usage.output.contains("date,user,requests,input_tokens,output_tokens,total_tokens"))
        #expect(usage.output.contains(",carol,1,"))

        let copy = directory + "/backup.sqlite"
        let backup = try await Self.command(["db", "backup", copy], environment, directory: directory)
        #expect(backup.status == 0)
        let check = try await Self.command(
            ["db", "check"], environment.merging(["DATABASE_URL": "sqlite:" + copy]) { $1 }, directory: directory)
        #expect(check.status == 0)
        #expect(check.output.contains("ok"))
        let copied = try await Self.command(
            ["usage", "--format", "json", "--user", "carol"],
            environment.merging(["DATABASE_URL": "sqlite:" + copy]) { $1 }, directory: directory)
        #expect(copied.output.contains("\"user\":\"carol\""))

        let revoked = try await Self.command(["tokens", "revoke", id], environment, directory: directory)
        #expect(revoked.status == 0)
        await eventually("the revoked token is refused") {
            (try? await Self.process(client, gateway.base, id: "carol-2", token: token)) == 401
        }
        #expect(try await Self.command(["tokens", "revoke", id], environment, directory: directory).status == 1)
        #expect(
            try await Self.command(["tokens", "create", "--user", "bad user"], environment, directory: directory).status
                == 2)
        #expect(
            try await Self.command(
                ["tokens", "create", "--user", "dave", "--plan", "gold"], environment, directory: directory
            ).status == 2)
        #expect(!gateway.child.output.contains(token))

        gateway.child.signal(SIGTERM)
        #expect(await gateway.child.waitForExit(seconds: 15) == 0)
        await client.shutdown()
        await upstream.mock.shutdown()
    }

    @Test("usage reports all guests' requests, from any address, as one line a day beside each user's")
    func usageGuestsLine() async throws {
        let upstream = try await Upstream.start()
        let directory = storeDirectory()
        // Guests allowed, each address vouched for by the proxy (loopback).
        let environment = upstream.environment(
            database: directory + "/gw.sqlite", ["AUTH_REQUIRED": "off", "TRUSTED_PROXIES": "127.0.0.1"])
        let client = try HTTPClient()
        let gateway = try await Gateway.start(environment, directory: directory)
        let body = Array("{\"task\":\"summarize\",\"text\":\(jsonString(Self.sample))}".utf8)
        for address in ["203.0.113.1", "203.0.113.2", "198.51.100.7"] {
            let response = try await client.send(
                HTTPClientRequest(
                    method: "POST", url: gateway.base + "/api/process",
                    headers: [("Content-Type", "application/json"), ("X-Forwarded-For", address)],
                    body: body
                ))
            #expect(response.status == 200)
        }
        #expect(try await Self.process(client, gateway.base, id: "alice-1") == 200)
        // Committed within a batch interval; the report reads the file.
        await eventually("the usage report has alice's row and the guests'") {
            let csv =
                (try? await Self.command(["usage", "--format", "csv"], environment, directory: directory))?.output
                ?? ""
            return csv.contains(",alice,1,") && csv.contains(",,3,")
        }
        let csv = try await Self.command(["usage", "--format", "csv"], environment, directory: directory).output
        let lines = csv.split(separator: "\r\n")
        #expect(lines.count == 3, "\(csv)")
        #expect(lines.filter { $0.contains(",,") }.count == 1)

        let table = try await Self.command(["usage"], environment, directory: directory)
        #expect(table.status == 0)
        let guests = table.output.split(separator: "\n").filter { $0.contains("(all guests)") }
        #expect(guests.count == 1 && guests[0].split(separator: " ").contains("3"), "\(table.output)")
        let json = try await Self.command(["usage", "--format", "json"], environment, directory: directory)
        let report = try JSONValue.parse(
            Array((json.output.split(separator: "\n").first { $0.hasPrefix("{") } ?? "").utf8))
        let days = try #require(report["usage"]?.arrayValue)
        #expect(days.count == 2)
        #expect(days.first { $0["user"]?.isNull == true }?["requests"]?.intValue == 3)
        // One user's report has no guests' line.
        let alice = try await Self.command(
            ["usage", "--format", "csv", "--user", "alice"], environment, directory: directory)
        #expect(alice.output.split(separator: "\r\n").count == 2)

        gateway.child.signal(SIGTERM)
        #expect(await gateway.child.waitForExit(seconds: 15) == 0)
        await client.shutdown()
        await upstream.mock.shutdown()
    }

    @Test("db check exits 0 on a sound store, 1 when it finds damage, 2 when it cannot check")
    func checkExitCodes() async throws {
        let upstream = try await Upstream.start()
        let directory = storeDirectory()
        func check(_ database: String?, _ arguments: [String] = []) async throws -> (status: Int32?, output: String) {
            let environment = upstream.environment(database: "").merging([
                "DATABASE_URL": database.map { "sqlite:" + $0 } ?? "off"
            ]) { $1 }
            return try await Self.command(["db", "check"] + arguments, environment, directory: directory)
        }
        func python(_ script: String, _ path: String) async throws {
            let child = try ChildProcess("/usr/bin/python3", arguments: ["-c", script, path], environment: [:])
            #expect(await child.waitForExit(seconds: 10) == 0, "\(child.output)")
        }

        let sound = directory + "/sound.sqlite"
        #expect(
            try await Self.command(
                ["tokens", "create", "--user", "x"], upstream.environment(database: sound), directory: directory
            ).status == 0)
        let ok = try await check(sound)
        #expect(ok.status == 0, "\(ok.output)")
        #expect(ok.output.contains("ok"))

        // Found by the check: a job's item whose job is gone (written with foreign keys off).
        let orphan = directory + "/orphan.sqlite"
        #expect(
            try await Self.command(
                ["tokens", "create", "--user", "x"], upstream.environment(database: orphan), directory: directory
            ).status == 0)
        try await python(
            """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.execute("INSERT INTO job_items (job_id, level, idx, kind, input, source_start, source_end) "
                      "VALUES ('gone', 0, 0, 'map', 't', 0, 1)")
            c.commit(); c.close()
            """, orphan)
        let found = try await check(orphan)
        #expect(found.status == 1, "\(found.output)")
        #expect(found.output.contains("job_items"), "\(found.output)")

        // Too damaged to open: pages past the first overwritten; and a file that is no database.
        let corrupt = directory + "/corrupt.sqlite"
        #expect(
            try await Self.command(
                ["tokens", "create", "--user", "x"], upstream.environment(database: corrupt), directory: directory
            ).status == 0)
        try await python(
            """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()
            with open(sys.argv[1], 'r+b') as f:
                size = f.seek(0, 2)
                f.seek(4096)
                f.write(b'\\xff' * (size - 4096))
            """, corrupt)
        let damaged = try await check(corrupt)
        #expect(damaged.status == 1, "\(damaged.output)")
        #expect(damaged.output.contains(corrupt))
        let garbage = directory + "/garbage.sqlite"
        Self.write(Array(repeating: 0x5A, count: 8192), to: garbage)
        let notADatabase = try await check(garbage)
        #expect(notADatabase.status == 1, "\(notADatabase.output)")

        // Cannot check: no such file (never created by a check), a newer schema, no store, bad arguments.
        let missing = try await check(directory + "/missing.sqlite")
        #expect(missing.status == 2, "\(missing.output)")
        #expect(access(directory + "/missing.sqlite", F_OK) != 0)
        let newer = directory + "/newer.sqlite"
        #expect(
            try await Self.command(
                ["tokens", "create", "--user", "x"], upstream.environment(database: newer), directory: directory
            ).status == 0)
        try await python(
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version = 99'); c.close()",
            newer)
        let tooNew = try await check(newer)
        #expect(tooNew.status == 2, "\(tooNew.output)")
        #expect(tooNew.output.contains("newer"))
        #expect(try await check(nil).status == 2)
        #expect(try await check(sound, ["extra"]).status == 2)
        await upstream.mock.shutdown()
    }

    @Test(
        "the store's file, its -wal and -shm, and a backup are readable by their owner only (0600), whatever the umask"
    )
    func privateFiles() async throws {
        let upstream = try await Upstream.start()
        let directory = storeDirectory()
        let database = directory + "/data/gw.sqlite"
        let environment = upstream.environment(database: database)
        func mode(_ path: String) -> mode_t? {
            var status = stat()
            return stat(path, &status) == 0 ? status.st_mode & 0o777 : nil
        }
        // A umask that takes nothing away: only the gateway's own choice can make the modes.
        let gateway = try await Gateway.start(environment, directory: directory, umask: "000")
        let client = try HTTPClient()
        #expect(try await Self.process(client, gateway.base, id: "private-1") == 200)
        await eventually("the WAL and shared-memory files exist") {
            mode(database + "-wal") != nil && mode(database + "-shm") != nil
        }
        #expect(mode(directory + "/data") == 0o700)
        for path in [database, database + "-wal", database + "-shm"] {
            #expect(mode(path) == 0o600, "\(path): \(String(mode(path) ?? 0, radix: 8))")
        }

        let copy = directory + "/backup.sqlite"
        let backup = try ChildProcess(
            "text-gateway", arguments: ["db", "backup", copy], environment: environment, workingDirectory: directory,
            umask: "000")
        #expect(await backup.waitForExit(seconds: 30) == 0, "\(backup.output)")
        #expect(mode(copy) == 0o600, "\(String(mode(copy) ?? 0, radix: 8))")

        gateway.child.signal(SIGTERM)
        #expect(await gateway.child.waitForExit(seconds: 15) == 0)
        await client.shutdown()
        await upstream.mock.shutdown()
    }

    /// Writes `bytes` to a new file at `path`.
    static func write(_ bytes: [UInt8], to path: String) {
        try? writeFile(path, bytes)
    }

    @Test("a store file that cannot serve stops the start with exit 2 and a message naming the file")
    func refusesBadFiles() async throws {
        let upstream = try await Upstream.start()
        let directory = storeDirectory()

        let garbage = directory + "/garbage.sqlite"
        Self.write(Array(repeating: 0x5A, count: 8192), to: garbage)
        let notAFile = directory + "/plain-file"
        Self.write(Array("not a directory".utf8), to: notAFile)
        let newer = directory + "/newer.sqlite"
        let made = try await Self.command(
            ["tokens", "create", "--user", "x"], upstream.environment(database: newer), directory: directory)
        #expect(made.status == 0)
        let bump = try ChildProcess(
            "/usr/bin/python3",
            arguments: [
                "-c",
                "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version = 99'); c.close()",
                newer,
            ], environment: [:])
        #expect(await bump.waitForExit(seconds: 10) == 0)

        // A store with rows whose pages past the first are overwritten: the header still says SQLite.
        let corrupt = directory + "/corrupt.sqlite"
        #expect(
            try await Self.command(
                ["tokens", "create", "--user", "x"], upstream.environment(database: corrupt), directory: directory
            ).status == 0)
        let damage = try ChildProcess(
            "/usr/bin/python3",
            arguments: [
                "-c",
                """
                import sqlite3, sys
                c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()
                with open(sys.argv[1], 'r+b') as f:
                    size = f.seek(0, 2)
                    f.seek(4096)
                    f.write(b'\\xff' * (size - 4096))
                """, corrupt,
            ], environment: [:])
        #expect(await damage.waitForExit(seconds: 10) == 0)

        for (path, mention) in [
            (garbage, "not a database"), (notAFile + "/gw.sqlite", notAFile), (newer, "newer"),
            (corrupt, "malformed|corrupt"),
        ] {
            let child = try ChildProcess(
                "text-gateway", arguments: ["serve", "--port", "0"], environment: upstream.environment(database: path),
                workingDirectory: directory)
            #expect(await child.waitForExit(seconds: 20) == 2, "\(path)")
            #expect(child.output.contains(path), "\(path): \(child.output)")
            let said = child.output.lowercased()
            #expect(
                mention.split(separator: "|").contains { said.contains($0.lowercased()) }, "\(path): \(child.output)")
            #expect(!child.output.contains("started"))
        }

        // Locked by another process for longer than the busy timeout.
        let locked = directory + "/locked.sqlite"
        #expect(
            try await Self.command(
                ["tokens", "create", "--user", "x"], upstream.environment(database: locked), directory: directory
            ).status == 0)
        let holder = try ChildProcess(
            "/usr/bin/python3",
            arguments: [
                "-c",
                "import sqlite3,sys,time; c=sqlite3.connect(sys.argv[1], isolation_level=None); "
                    + "c.execute('BEGIN IMMEDIATE'); print('holding', flush=True); time.sleep(60)",
                locked,
            ], environment: [:])
        await holder.waitForOutput("holding")
        let child = try ChildProcess(
            "text-gateway", arguments: ["serve", "--port", "0"], environment: upstream.environment(database: locked),
            workingDirectory: directory)
        #expect(await child.waitForExit(seconds: 30) == 2)
        #expect(child.output.contains(locked))
        #expect(child.output.contains("locked"))
        holder.signal(SIGKILL)
        _ = await holder.waitForExit(seconds: 5)
        await upstream.mock.shutdown()
    }

    @Test("a full disk while running: answers keep flowing, the error is counted and logged once, no row lost unsaid")
    func fullDiskWhileRunning() async throws {
        let upstream = try await Upstream.start()
        let directory = storeDirectory()
        let environment = upstream.environment(database: directory + "/gw.sqlite", ["HISTORY_STORE_RESULTS": "on"])
        let client = try HTTPClient()
        // Room for the new store's first pages and a few batches, then no more (the limit holds
        // for the child's log file too: a few hundred lines fit). A fresh store's log is about
        // 302 KiB with schema 9 and 10 (the costs' columns: 28 KiB more than schema 7's 274 KiB, whose
        // devices table rebuilt for Android took 57 KiB more than schema 6's 217 KiB).
        let gateway = try await Gateway.start(environment, directory: directory, fileSizeLimitKiB: 321)
        var statuses: [Int] = []
        for index in 0..<200 { statuses.append(try await Self.process(client, gateway.base, id: "full-\(index)")) }
        #expect(statuses.allSatisfy { $0 == 200 })
        let metrics = try await client.send(HTTPClientRequest(url: gateway.base + "/metrics"))
        let text = String(decoding: metrics.body, as: UTF8.self)
        let errors = text.split(separator: "\n").first {
            $0.hasPrefix("textgateway_store_errors_total{operation=\"ledger\"}")
        }
        #expect((errors?.split(separator: " ").last.flatMap { Double($0) } ?? 0) > 0, "\(text)")
        #expect(text.contains("textgateway_ledger_rows_dropped_total 0"))
        let logged = gateway.child.output.split(separator: "\n").filter {
            $0.contains("store_error") && $0.contains("operation=ledger")
        }
        #expect(logged.count == 1)
        gateway.child.signal(SIGTERM)
        // The stop writes what it still can (a checkpoint may have made room meanwhile) and
        // gives up on the rest within its deadline, saying how many: no row goes unaccounted.
        #expect(await gateway.child.waitForExit(seconds: 30) == 0)
        let notes = gateway.child.output.split(separator: "\n").filter { !$0.contains("INFO request") }
        let dropped = notes.filter { $0.contains("ledger_rows_dropped") }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("rows=") }.flatMap { Int($0.dropFirst(5)) }
        }.reduce(0, +)
        let counting = try ChildProcess(
            "/usr/bin/python3",
            arguments: [
                "-c",
                "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                    + "print(c.execute('SELECT count(*) FROM requests').fetchone()[0])",
                directory + "/gw.sqlite",
            ], environment: [:])
        #expect(await counting.waitForExit(seconds: 30) == 0, "\(counting.output)")
        let stored = Int(counting.output.filter(\.isNumber)) ?? -1
        #expect(stored + dropped == 200, "\(stored) stored, \(dropped) dropped: \(notes.joined(separator: "\n"))")
        await client.shutdown()
        await upstream.mock.shutdown()
    }
}
