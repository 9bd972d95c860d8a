import EventLoop
import Postgres
import TestSupport
import Testing

@testable import Store

extension StoreBackends {
    @Suite("store: Idempotency-Key rows")
    struct IdempotencyRepositoryTests {
        static let scope = "user:alice /api/process"

        static func start(
            _ key: String = "key-1", fingerprint: UInt8 = 1, request: String = "req-1", owner: String = "gw-a",
            leaseUntil: Int64 = 10_000
        ) -> IdempotencyStart {
            IdempotencyStart(
                scope: scope, key: key, fingerprint: [UInt8](repeating: fingerprint, count: 32), requestID: request,
                owner: owner,
                leaseUntilMilliseconds: leaseUntil
            )
        }

        /// Bytes that are not UTF-8, and Persian text: both must come back as they went in.
        static let answer = StoredAnswer(
            status: 200, contentType: "application/json", upstream: "upstream-b",
            body: [0x7B, 0xFF, 0x00, 0xC3, 0x28, 0x80, 0x7D],
            text: "سلام دنیا، متن کامل", streamed: true
        )

        @Test("started, then in progress for the same fingerprint, a mismatch for another", arguments: Backend.allCases)
        func beginStates(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ throws in
                #expect(try await store.beginIdempotent(Self.start(), nowMilliseconds: 1_000) == .started)
                #expect(
                    try await store.beginIdempotent(Self.start(request: "req-2", owner: "gw-b"), nowMilliseconds: 2_000)
                        == .inProgress(requestID: "req-1", owner: "gw-a"))
                #expect(
                    try await store.beginIdempotent(
                        Self.start(fingerprint: 2, request: "req-3"), nowMilliseconds: 2_000) == .mismatch)
                // Keys are per scope and per key.
                #expect(try await store.beginIdempotent(Self.start("key-2"), nowMilliseconds: 2_000) == .started)
                var elsewhere = Self.start()
                elsewhere.scope = "user:bob /api/process"
                #expect(try await store.beginIdempotent(elsewhere, nowMilliseconds: 2_000) == .started)
            }
        }

        @Test(
            "the owner's answer comes back byte for byte; replays count up; another owner cannot complete",
            arguments: Backend.allCases)
        func completeAndReplay(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ throws in
                #expect(try await store.beginIdempotent(Self.start(), nowMilliseconds: 1_000) == .started)
                #expect(
                    try await store.completeIdempotent(
                        scope: Self.scope, key: "key-1", owner: "gw-b", answer: Self.answer,
                        expiresAtMilliseconds: 50_000) == false)
                #expect(
                    try await store.beginIdempotent(Self.start(request: "req-2"), nowMilliseconds: 2_000)
                        == .inProgress(requestID: "req-1", owner: "gw-a"))

                #expect(
                    try await store.completeIdempotent(
                        scope: Self.scope, key: "key-1", owner: "gw-a", answer: Self.answer,
                        expiresAtMilliseconds: 50_000))
                #expect(
                    try await store.beginIdempotent(Self.start(request: "req-2"), nowMilliseconds: 3_000)
                        == .completed(requestID: "req-1", answer: Self.answer))
                // Completed once: a second completion finds no running row.
                #expect(
                    try await store.completeIdempotent(
                        scope: Self.scope, key: "key-1", owner: "gw-a", answer: Self.answer,
                        expiresAtMilliseconds: 90_000) == false)
                #expect(
                    try await store.beginIdempotent(Self.start(fingerprint: 9), nowMilliseconds: 3_000) == .mismatch)

                try await store.noteIdempotentReplay(scope: Self.scope, key: "key-1")
                try await store.noteIdempotentReplay(scope: Self.scope, key: "key-1")
                var replayed = Self.answer
                replayed.replays = 2
                #expect(
                    try await store.beginIdempotent(Self.start(request: "req-3"), nowMilliseconds: 4_000)
                        == .completed(requestID: "req-1", answer: replayed))

                // An answer with nothing optional, and an empty body.
                let plain = StoredAnswer(
                    status: 422, contentType: "application/problem+json", upstream: nil, body: [], text: nil,
                    streamed: false)
                #expect(try await store.beginIdempotent(Self.start("key-2"), nowMilliseconds: 1_000) == .started)
                #expect(
                    try await store.completeIdempotent(
                        scope: Self.scope, key: "key-2", owner: "gw-a", answer: plain, expiresAtMilliseconds: 50_000))
                #expect(
                    try await store.beginIdempotent(Self.start("key-2"), nowMilliseconds: 2_000)
                        == .completed(requestID: "req-1", answer: plain))
            }
        }

        @Test(
            "a release by the owner frees the key; by another owner, or of a completed row, it does nothing",
            arguments: Backend.allCases)
        func release(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ throws in
                #expect(try await store.beginIdempotent(Self.start(), nowMilliseconds: 1_000) == .started)
                try await store.releaseIdempotent(scope: Self.scope, key: "key-1", owner: "gw-b")
                #expect(
                    try await store.beginIdempotent(Self.start(request: "req-2"), nowMilliseconds: 2_000)
                        == .inProgress(requestID: "req-1", owner: "gw-a"))
                try await store.releaseIdempotent(scope: Self.scope, key: "key-1", owner: "gw-a")
                #expect(
                    try await store.beginIdempotent(
                        Self.start(fingerprint: 2, request: "req-2", owner: "gw-b"), nowMilliseconds: 2_000) == .started
                )
                #expect(
                    try await store.completeIdempotent(
                        scope: Self.scope, key: "key-1", owner: "gw-b", answer: Self.answer,
                        expiresAtMilliseconds: 50_000))
                try await store.releaseIdempotent(scope: Self.scope, key: "key-1", owner: "gw-b")
                #expect(
                    try await store.beginIdempotent(
                        Self.start(fingerprint: 2, request: "req-3"), nowMilliseconds: 3_000)
                        == .completed(requestID: "req-2", answer: Self.answer))
            }
        }

        @Test(
            "an expired answer frees the key, whatever the fingerprint; it lives until just before its expiry",
            arguments: Backend.allCases)
        func expiredAnswer(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ throws in
                #expect(try await store.beginIdempotent(Self.start(), nowMilliseconds: 1_000) == .started)
                #expect(
                    try await store.completeIdempotent(
                        scope: Self.scope, key: "key-1", owner: "gw-a", answer: Self.answer,
                        expiresAtMilliseconds: 50_000))
                try await store.noteIdempotentReplay(scope: Self.scope, key: "key-1")
                var replayed = Self.answer
                replayed.replays = 1
                #expect(
                    try await store.beginIdempotent(Self.start(request: "req-2"), nowMilliseconds: 49_999)
                        == .completed(requestID: "req-1", answer: replayed))
                #expect(
                    try await store.beginIdempotent(
                        Self.start(fingerprint: 3, request: "req-2", owner: "gw-b", leaseUntil: 80_000),
                        nowMilliseconds: 50_000) == .started)
                // Written over as new: running, the new request's, no answer and no replays kept.
                #expect(
                    try await store.beginIdempotent(
                        Self.start(fingerprint: 3, request: "req-3"), nowMilliseconds: 51_000)
                        == .inProgress(requestID: "req-2", owner: "gw-b"))
                #expect(
                    try await store.beginIdempotent(
                        Self.start(fingerprint: 1, request: "req-3"), nowMilliseconds: 51_000) == .mismatch)
                let plain = StoredAnswer(
                    status: 200, contentType: "text/plain", upstream: nil, body: [1], text: nil, streamed: false)
                #expect(
                    try await store.completeIdempotent(
                        scope: Self.scope, key: "key-1", owner: "gw-b", answer: plain, expiresAtMilliseconds: 90_000))
                #expect(
                    try await store.beginIdempotent(
                        Self.start(fingerprint: 3, request: "req-4"), nowMilliseconds: 52_000)
                        == .completed(requestID: "req-2", answer: plain))
            }
        }

        @Test(
            "an ended lease is taken over; the old owner can then neither complete nor release",
            arguments: Backend.allCases)
        func leaseTakeover(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ throws in
                #expect(
                    try await store.beginIdempotent(Self.start(leaseUntil: 10_000), nowMilliseconds: 1_000) == .started)
                #expect(
                    try await store.beginIdempotent(Self.start(request: "req-2", owner: "gw-b"), nowMilliseconds: 9_999)
                        == .inProgress(requestID: "req-1", owner: "gw-a"))
                #expect(
                    try await store.beginIdempotent(
                        Self.start(request: "req-2", owner: "gw-b", leaseUntil: 30_000), nowMilliseconds: 10_000)
                        == .started)
                #expect(
                    try await store.completeIdempotent(
                        scope: Self.scope, key: "key-1", owner: "gw-a", answer: Self.answer,
                        expiresAtMilliseconds: 90_000) == false)
                try await store.releaseIdempotent(scope: Self.scope, key: "key-1", owner: "gw-a")
                #expect(
                    try await store.beginIdempotent(Self.start(request: "req-3"), nowMilliseconds: 11_000)
                        == .inProgress(requestID: "req-2", owner: "gw-b"))
                #expect(
                    try await store.completeIdempotent(
                        scope: Self.scope, key: "key-1", owner: "gw-b", answer: Self.answer,
                        expiresAtMilliseconds: 90_000))
                #expect(
                    try await store.beginIdempotent(Self.start(request: "req-3"), nowMilliseconds: 12_000)
                        == .completed(requestID: "req-2", answer: Self.answer))
            }
        }

        @Test("the purge removes expired answers and ended leases, and nothing live", arguments: Backend.allCases)
        func purge(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ throws in
                // Running: lease ends at 5 000 (dead at 5 000), at 5 001 (live).
                #expect(
                    try await store.beginIdempotent(Self.start("run-dead", leaseUntil: 5_000), nowMilliseconds: 1_000)
                        == .started)
                #expect(
                    try await store.beginIdempotent(Self.start("run-live", leaseUntil: 5_001), nowMilliseconds: 1_000)
                        == .started)
                // Completed: expires at 5 000 (dead), at 5 001 (live); the live one's lease ended long ago.
                for (key, expiry) in [("done-dead", Int64(5_000)), ("done-live", 5_001)] {
                    #expect(
                        try await store.beginIdempotent(Self.start(key, leaseUntil: 2_000), nowMilliseconds: 1_000)
                            == .started)
                    #expect(
                        try await store.completeIdempotent(
                            scope: Self.scope, key: key, owner: "gw-a", answer: Self.answer,
                            expiresAtMilliseconds: expiry))
                }
                #expect(try await store.purgeExpiredIdempotent(nowMilliseconds: 5_000) == 2)
                #expect(try await store.purgeExpiredIdempotent(nowMilliseconds: 5_000) == 0)
                // What is left was left whole: the live rows answer as before.
                #expect(
                    try await store.beginIdempotent(Self.start("run-live", request: "req-2"), nowMilliseconds: 5_000)
                        == .inProgress(requestID: "req-1", owner: "gw-a"))
                #expect(
                    try await store.beginIdempotent(Self.start("done-live", request: "req-2"), nowMilliseconds: 5_000)
                        == .completed(requestID: "req-1", answer: Self.answer))
                // The purged keys are free: a begin there starts without a takeover; an old
                // owner's completion finds nothing.
                #expect(
                    try await store.completeIdempotent(
                        scope: Self.scope, key: "run-dead", owner: "gw-a", answer: Self.answer,
                        expiresAtMilliseconds: 90_000) == false)
                #expect(
                    try await store.beginIdempotent(
                        Self.start("run-dead", fingerprint: 7, leaseUntil: 90_000), nowMilliseconds: 1_000) == .started)
                #expect(
                    try await store.beginIdempotent(
                        Self.start("done-dead", fingerprint: 7, leaseUntil: 90_000), nowMilliseconds: 1_000) == .started
                )
                #expect(try await store.purgeExpiredIdempotent(nowMilliseconds: 5_001) == 2)
            }
        }

        @Test(
            "a caller's kept answers are deleted by request id or all at once; running rows and others' stay",
            arguments: Backend.allCases)
        func deleteKept(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ throws in
                let chat = "user:alice /v1/chat/completions"
                let bob = "user:bob /api/process"
                func keep(_ scope: String, _ key: String, request: String) async throws {
                    var start = Self.start(key, request: request)
                    start.scope = scope
                    #expect(try await store.beginIdempotent(start, nowMilliseconds: 1_000) == .started)
                    #expect(
                        try await store.completeIdempotent(
                            scope: scope, key: key, owner: "gw-a", answer: Self.answer, expiresAtMilliseconds: 50_000))
                }
                func begin(_ scope: String, _ key: String) async throws -> IdempotencyBegin {
                    var start = Self.start(key, request: "req-new")
                    start.scope = scope
                    return try await store.beginIdempotent(start, nowMilliseconds: 2_000)
                }
                try await keep(Self.scope, "k1", request: "req-1")
                try await keep(Self.scope, "k2", request: "req-2")
                try await keep(chat, "k3", request: "req-3")
                // Another caller's answer with the same request id and key.
                try await keep(bob, "k1", request: "req-1")
                // Running: no answer to delete, and its key must stay taken.
                #expect(
                    try await store.beginIdempotent(Self.start("k4", request: "req-4"), nowMilliseconds: 1_000)
                        == .started)

                let scopes = [Self.scope, chat]
                #expect(try await store.deleteKeptIdempotent(scopes: scopes, requestID: "req-1") == 1)
                #expect(try await store.deleteKeptIdempotent(scopes: scopes, requestID: "req-1") == 0)
                #expect(try await store.deleteKeptIdempotent(scopes: scopes, requestID: "req-4") == 0)
                #expect(try await store.deleteKeptIdempotent(scopes: [], requestID: nil) == 0)
                #expect(try await begin(Self.scope, "k1") == .started)
                #expect(try await begin(Self.scope, "k2") == .completed(requestID: "req-2", answer: Self.answer))
                #expect(try await begin(bob, "k1") == .completed(requestID: "req-1", answer: Self.answer))
                #expect(try await begin(Self.scope, "k4") == .inProgress(requestID: "req-4", owner: "gw-a"))

                // All of alice's kept answers: k2 and k3; k1 and k4 run now.
                #expect(try await store.deleteKeptIdempotent(scopes: scopes, requestID: nil) == 2)
                #expect(try await begin(chat, "k3") == .started)
                #expect(try await begin(Self.scope, "k2") == .started)
                #expect(try await begin(Self.scope, "k4") == .inProgress(requestID: "req-4", owner: "gw-a"))
                #expect(try await begin(bob, "k1") == .completed(requestID: "req-1", answer: Self.answer))
            }
        }

        @Test("the purge goes in batches and counts them all", arguments: Backend.allCases)
        func purgeInBatches(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ throws in
                let count = backend.deletionBatch + 3
                for index in 0..<count {
                    #expect(
                        try await store.beginIdempotent(
                            Self.start("k\(index)", leaseUntil: 2_000), nowMilliseconds: 1_000) == .started)
                }
                #expect(try await store.purgeExpiredIdempotent(nowMilliseconds: 2_000) == count)
            }
        }

        @Test(
            "of eight stores beginning one key at once, exactly one starts; the others see it in progress",
            arguments: Backend.allCases)
        func concurrentBegin(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture throws in
                let keys = (0..<5).map { "race-\($0)" }
                // race-4 holds an ended lease: a takeover race, not only an insert race.
                #expect(
                    try await store.beginIdempotent(
                        Self.start("race-4", request: "old", owner: "gw-dead", leaseUntil: 500), nowMilliseconds: 100)
                        == .started)
                let outcomes = try await DeviceRepositoryTests.onEightStores(store, fixture) { index, each in
                    var outcomes: [IdempotencyBegin] = []
                    for key in keys {
                        outcomes.append(
                            try await each.beginIdempotent(
                                Self.start(key, request: "req-\(index)", owner: "gw-\(index)"), nowMilliseconds: 1_000))
                    }
                    return outcomes
                }
                for (column, key) in keys.enumerated() {
                    let each = outcomes.map { $0[column] }
                    let winners = each.indices.filter { each[$0] == .started }
                    #expect(winners.count == 1, "\(key): \(each)")
                    guard let winner = winners.first else { continue }
                    for (index, outcome) in each.enumerated() where index != winner {
                        #expect(outcome == .inProgress(requestID: "req-\(winner)", owner: "gw-\(winner)"), "\(key)")
                    }
                }
            }
        }

        @Test("an answer prints without its body or text")
        func description() {
            #expect(
                Self.answer.description
                    == "StoredAnswer(status: 200, contentType: application/json, body: 7 bytes, text: 35 bytes,"
                    + " streamed, replays: 0)"
            )
            #expect(!Self.answer.description.contains("سلام"))
        }

        @Test("a Postgres store of schema 4 is migrated to the latest, keeping its rows, and takes idempotency keys")
        func postgresMigratesFromSchema4() async throws {
            let lazy = try #require(LazyPostgresCluster.current)
            let (cluster, database) = try await lazy.createDatabase()
            let group = try EventLoopGroup(loopCount: 1, namePrefix: "pg-idem")
            var clients: [PostgresClient] = []
            do {
                let client = try await PostgresStoreTests.client(cluster, database, group: group)
                clients.append(client)
                let schema4 =
                    [
                        "CREATE TABLE store_meta (key text PRIMARY KEY, value bigint NOT NULL)",
                        "INSERT INTO store_meta (key, value) VALUES ('schema_version', 4)",
                    ] + PostgresSchema.migrations[0..<4].flatMap { $0 } + [
                        """
                        INSERT INTO tokens (id, digest, user_id, plan, created_at)
                        VALUES ('t1', decode(repeat('01', 32), 'hex'), 'alice', 'pro', 1000)
                        """
                    ]
                _ = try await client.transaction(schema4.map { PostgresQuery($0) })
                let store = try await PostgresStore.open(client: client)
                #expect(try await store.tokens().map(\.id) == ["t1"])
                #expect(try await store.beginIdempotent(Self.start(), nowMilliseconds: 1_000) == .started)
                #expect(
                    try await client.query("SELECT value FROM store_meta WHERE key = 'schema_version'").rows.first?.int(
                        0) == PostgresStore.schemaVersion)
                #expect(try await store.integrityCheck() == [])
            } catch {
                await PostgresStoreTests.stop(clients, group)
                throw error
            }
            await PostgresStoreTests.stop(clients, group)
        }
    }
}

@Suite("Migrating a SQLite store to idempotency keys")
struct SQLiteIdempotencyMigrationTests {
    @Test("a store of schema 4 is migrated to 5, keeping its rows, and takes idempotency keys")
    func migratesFromSchema4() async throws {
        try await withPoolAndDirectory { pool, directory in
            let path = directory.file("store.db")
            let rows = """
                INSERT INTO tokens (id, digest, user_id, plan, created_at)
                VALUES ('t1', randomblob(32), 'alice', 'pro', 1000);
                INSERT INTO store_secrets (name, value) VALUES ('history_cursor', randomblob(32));
                """
            #expect(
                try sqlite3(path, StoreSchema.migrations[0..<4].joined() + rows + "PRAGMA user_version = 4;").status
                    == 0)
            let store = try await SQLiteStore.open(path: path, pool: pool)
            #expect(try await store.tokens().map(\.id) == ["t1"])
            let start = StoreBackends.IdempotencyRepositoryTests.start()
            #expect(try await store.beginIdempotent(start, nowMilliseconds: 1_000) == .started)
            #expect(try await store.integrityCheck() == [])
            await store.close()
            #expect(try sqlite3(path, "PRAGMA user_version").output == String(SQLiteStore.schemaVersion))
        }
    }
}
