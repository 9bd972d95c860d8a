import EventLoop
import Postgres
import TestSupport
import Testing

@testable import Store

extension StoreBackends {
    @Suite("store: jobs, their items, leases and answers")
    struct JobStoreTests {
        static let lease: Int64 = 30_000
        static let day: Int64 = 20_600

        static func newJob(
            _ id: String, caller: String = "alice", owner: String? = "alice", items count: Int = 3,
            at created: Int64 = 1_000
        ) -> NewJob {
            NewJob(
                id: id, ownerID: owner, callerKey: caller, requestID: "req-\(id)", task: "summarize", tone: "neutral",
                format: "text",
                inputLength: count * 100, createdAtMilliseconds: created, total: count,
                items: (0..<count).map {
                    NewJobItem(
                        kind: .map, input: "chunk \($0) of \(id)", sourceStart: $0 * 100, sourceEnd: $0 * 100 + 100)
                }
            )
        }

        static func create(_ job: NewJob, in store: any StoreBackend, maxActive: Int = 100) async throws {
            #expect(try await store.createJob(job, maxActive: maxActive) == .created)
        }

        static func claim(
            _ store: any StoreBackend, worker: String = "w1", limit: Int = 100, perJob: Int = 100, at now: Int64 = 2_000
        ) async throws -> [ClaimedJobItem] {
            try await store.claimItems(
                JobClaim(worker: worker, limit: limit, perJob: perJob, nowMilliseconds: now, leaseUntil: now + lease))
        }

        static func complete(
            _ key: JobItemKey, in store: any StoreBackend, worker: String = "w1", owner: String? = "alice",
            tokens: (Int, Int) = (10, 2), cost: Int64? = 0,
            at now: Int64 = 3_000
        ) async throws -> Bool {
            try await store.completeItem(
                JobItemCompletion(
                    key: key, worker: worker, answer: "answer \(key.level).\(key.index)", data: nil,
                    inputTokens: tokens.0, outputTokens: tokens.1, costMicros: cost,
                    ownerID: owner, day: day, nowMilliseconds: now
                )
            )
        }

        static func key(_ job: String, _ level: Int, _ index: Int) -> JobItemKey {
            JobItemKey(jobID: job, level: level, index: index)
        }

        /// Every item's stored input, read past the protocol (which never returns an ended job's).
        static func inputs(of jobID: String, in store: any StoreBackend) async throws -> [String] {
            if let sqlite = store as? SQLiteStore {
                return try await sqlite.read { connection throws(StoreError) in
                    var inputs: [String] = []
                    try connection.query(
                        "SELECT input FROM job_items WHERE job_id = ? ORDER BY level, idx", [.text(jobID)]
                    ) { inputs.append($0.text(0)) }
                    return inputs
                }
            }
            let postgres = try #require(store as? PostgresStore)
            return try await postgres.client.query(
                "SELECT input FROM job_items WHERE job_id = $1 ORDER BY level, idx", [.text(jobID)]
            ).rows.map {
                $0.string(0) ?? "<null>"
            }
        }

        /// Ten jobs of ten items in `store`, then `work` at once on eight stores of its
        /// database (`store` first), each with a connection of its own; what they all returned.
        static func concurrently<T: Sendable>(
            in store: any StoreBackend, _ fixture: StoreFixture,
            _ work: @escaping @Sendable (Int, any StoreBackend) async throws -> [T]
        ) async throws -> [T] {
            for job in 0..<10 { try await create(newJob("j\(job)", items: 10), in: store) }
            var stores: [any StoreBackend] = [store]
            var closers: [() async -> Void] = []
            func closeAll() async { for close in closers { await close() } }
            do {
                for _ in 1..<8 {
                    let (other, close) = try await fixture.openAnother()
                    stores.append(other)
                    closers.append(close)
                }
                let results = try await withThrowingTaskGroup(of: [T].self) { tasks in
                    for (index, each) in stores.enumerated() { tasks.addTask { try await work(index, each) } }
                    return try await tasks.reduce(into: []) { $0 += $1 }
                }
                await closeAll()
                return results
            } catch {
                await closeAll()
                throw error
            }
        }

        @Test(
            "a job reads back as it was created: queued, with its level-0 items unanswered", arguments: Backend.allCases
        )
        func createAndRead(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                var job = Self.newJob("j1", caller: "203.0.113.7", owner: nil)
                job.tone = nil
                // Quotes, backslashes, braces and commas travel inside a Postgres array literal.
                let awkward = "a \"quoted\" \\ back\\slash, {braces}, NULL, ünïcode ✓"
                job.items[1].input = awkward
                try await Self.create(job, in: store)
                let record = try #require(try await store.job(id: "j1"))
                #expect(
                    record
                        == JobRecord(
                            id: "j1", ownerID: nil, callerKey: "203.0.113.7", requestID: "req-j1", task: "summarize",
                            tone: nil, format: "text",
                            inputLength: 300, status: .queued, done: 0, total: 3, result: nil, data: nil,
                            inputTokens: 0, outputTokens: 0,
                            errorCode: nil, errorMessage: nil, createdAtMilliseconds: 1_000,
                            updatedAtMilliseconds: 1_000, endedAtMilliseconds: nil
                        )
                )
                #expect(try await store.levelAnswers(jobID: "j1", level: 0) == JobLevelAnswers(count: 3, answers: []))
                #expect(try await store.levelAnswers(jobID: "j1", level: 1) == JobLevelAnswers(count: 0, answers: []))
                #expect(try await store.job(id: "missing") == nil)

                let claimed = try await Self.claim(store)
                #expect(claimed.map(\.input) == ["chunk 0 of j1", awkward, "chunk 2 of j1"])
                #expect(claimed.allSatisfy { $0.kind == .map && $0.levelCount == 3 && $0.attempts == 1 })
            }
        }

        @Test(
            "a job keeps the traceparent of the request that made it, its claims and reads carry it; none reads nil",
            arguments: Backend.allCases)
        func traceParent(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                let traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                var traced = Self.newJob("traced", items: 2)
                traced.traceParent = traceParent
                try await Self.create(traced, in: store)
                try await Self.create(Self.newJob("untraced", items: 1), in: store)
                #expect(try await store.job(id: "traced")?.traceParent == traceParent)
                let untraced = try #require(try await store.job(id: "untraced"))
                #expect(untraced.traceParent == nil)
                #expect(try await store.activeJobs(limit: 10).map(\.traceParent) == [traceParent, nil])

                // A worker of any instance learns it from the claim.
                let claimed = try await Self.claim(store)
                #expect(claimed.map(\.job.id) == ["traced", "traced", "untraced"])
                #expect(claimed.map(\.job.traceParent) == [traceParent, traceParent, nil])
                #expect(try await store.cancelJob(id: "traced", nowMilliseconds: 5_000)?.traceParent == traceParent)
            }
        }

        @Test(
            "a store of schema 9 with a job migrates to 10: the old job reads back as it was, with no traceparent",
            arguments: Backend.allCases)
        func migratesFromSchema9(_ backend: Backend) async throws {
            // The job as the writer of schema 9 made it: no traceparent column yet.
            let statements = [
                """
                INSERT INTO jobs (id, owner_id, caller_key, plan, request_id, task, tone, format, input_length, status,
                    done, total, input_tokens, output_tokens, created_at, updated_at, cost_micros)
                VALUES ('old', 'alice', 'alice', 'pro', 'req-old', 'summarize', 'neutral', 'text', 200, 'queued',
                    0, 2, 0, 0, 1000, 1000, 0)
                """,
                """
                INSERT INTO job_items (job_id, level, idx, kind, input, source_start, source_end)
                VALUES ('old', 0, 0, 'map', 'chunk 0 of old', 0, 100), ('old', 0, 1, 'map', 'chunk 1 of old', 100, 200)
                """,
            ]
            let expected = JobRecord(
                id: "old", ownerID: "alice", callerKey: "alice", requestID: "req-old", task: "summarize",
                tone: "neutral", format: "text", inputLength: 200, status: .queued, done: 0, total: 2, result: nil,
                data: nil, inputTokens: 0, outputTokens: 0, errorCode: nil, errorMessage: nil,
                createdAtMilliseconds: 1_000, updatedAtMilliseconds: 1_000, endedAtMilliseconds: nil, plan: "pro",
                costMicros: 0, traceParent: nil)
            // What the migrated store must answer: the old job, its items claimable, a new job's traceparent kept.
            func expectMigrated(_ store: any StoreBackend) async throws {
                #expect(try await store.job(id: "old") == expected)
                let claimed = try await Self.claim(store)
                #expect(claimed.map(\.input) == ["chunk 0 of old", "chunk 1 of old"])
                #expect(claimed.allSatisfy { $0.job.traceParent == nil })
                var traced = Self.newJob("new", items: 1)
                traced.traceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
                try await Self.create(traced, in: store)
                #expect(try await store.job(id: "new")?.traceParent == traced.traceParent)
                #expect(try await store.integrityCheck() == [])
            }
            switch backend {
            case .sqlite:
                try await withPoolAndDirectory { pool, directory in
                    let path = directory.file("old.db")
                    let connection = try SQLiteConnection(path: path, mode: .readWrite, busyTimeout: .seconds(5))
                    try StoreSchema.migrate(connection, to: 9)
                    for statement in statements { _ = try connection.execute(statement) }
                    connection.close()
                    #expect(try sqlite3(path, "PRAGMA user_version").output == "9")
                    let store = try await SQLiteStore.open(path: path, pool: pool)
                    do {
                        try await expectMigrated(store)
                        await store.close()
                    } catch {
                        await store.close()
                        throw error
                    }
                    #expect(try sqlite3(path, "PRAGMA user_version").output == "10")
                    #expect(SQLiteStore.schemaVersion == 10)
                }
            case .postgres:
                let lazy = try #require(LazyPostgresCluster.current)
                let (cluster, database) = try await lazy.createDatabase()
                try await withClient(cluster.configuration(database: database)) { client in
                    try await PostgresSchema.migrate(client, store: "old", timeout: .seconds(10), to: 9)
                    for statement in statements { _ = try await client.query(statement) }
                    let version = "SELECT value FROM store_meta WHERE key = 'schema_version'"
                    #expect(try await client.query(version).rows.first?.int(0) == 9)
                    let store = try await PostgresStore.open(client: client)
                    try await expectMigrated(store)
                    #expect(try await client.query(version).rows.first?.int(0) == 10)
                    #expect(PostgresStore.schemaVersion == 10)
                }
            }
        }

        @Test(
            "the cap counts the caller's queued and running jobs only, and a refusal writes nothing",
            arguments: Backend.allCases)
        func cap(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                try await Self.create(Self.newJob("a1"), in: store, maxActive: 2)
                try await Self.create(Self.newJob("a2"), in: store, maxActive: 2)
                #expect(try await store.createJob(Self.newJob("a3"), maxActive: 2) == .tooManyActive(2))
                #expect(try await store.job(id: "a3") == nil)
                #expect(try await store.levelAnswers(jobID: "a3", level: 0).count == 0)
                // Another caller has a cap of its own.
                try await Self.create(Self.newJob("b1", caller: "bob", owner: "bob"), in: store, maxActive: 2)

                // A running job counts; an ended one does not.
                _ = try await Self.claim(store, limit: 1)
                #expect(try await store.job(id: "a1")?.status == .running)
                #expect(try await store.createJob(Self.newJob("a3"), maxActive: 2) == .tooManyActive(2))
                #expect(
                    try await store.finishJob(
                        JobFinish(jobID: "a1", outcome: .succeeded(result: "r", data: nil), nowMilliseconds: 5_000)))
                try await Self.create(Self.newJob("a3"), in: store, maxActive: 2)
                _ = try await store.cancelJob(id: "a2", nowMilliseconds: 5_000)
                try await Self.create(Self.newJob("a4"), in: store, maxActive: 2)
                #expect(try await store.createJob(Self.newJob("a5"), maxActive: 2) == .tooManyActive(2))
            }
        }

        @Test(
            "a claim takes the oldest job first, in (level, index) order, within the per-job and overall limits",
            arguments: Backend.allCases)
        func claimOrder(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                try await Self.create(Self.newJob("old", at: 1_000), in: store)
                try await Self.create(Self.newJob("new", at: 1_000), in: store)
                let first = try await Self.claim(store, limit: 3, perJob: 2, at: 2_000)
                #expect(first.map(\.key) == [Self.key("old", 0, 0), Self.key("old", 0, 1), Self.key("new", 0, 0)])
                #expect(first.allSatisfy { $0.job.status == .running && $0.job.updatedAtMilliseconds == 2_000 })
                #expect(try await store.job(id: "new")?.status == .running)

                // Leases already held count: one more of "new", none of "old".
                let second = try await Self.claim(store, worker: "w2", limit: 10, perJob: 2, at: 2_500)
                #expect(second.map(\.key) == [Self.key("new", 0, 1)])
                #expect(second.first?.job.updatedAtMilliseconds == 2_000, "a running job is not touched by a claim")
                #expect(try await Self.claim(store, worker: "w2", perJob: 2, at: 2_500).isEmpty)
                let third = try await Self.claim(store, worker: "w3", perJob: 3, at: 2_500)
                #expect(third.map(\.key) == [Self.key("old", 0, 2), Self.key("new", 0, 2)])
                #expect(try await Self.claim(store, worker: "w3", at: 2_500).isEmpty)
                #expect(try await Self.claim(store, limit: 0).isEmpty)

                // A job with more leased than a later claim's per-job limit gives it nothing.
                try await Self.create(Self.newJob("more", items: 4), in: store)
                #expect(try await Self.claim(store, worker: "w4", perJob: 3, at: 2_500).count == 3)
                #expect(try await Self.claim(store, worker: "w5", perJob: 2, at: 2_500).isEmpty)
            }
        }

        @Test(
            "a leased item is not claimed again while its lease runs, and is once it has passed, as a second attempt",
            arguments: Backend.allCases)
        func leases(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                try await Self.create(Self.newJob("j1", items: 1), in: store)
                let first = try await Self.claim(store, worker: "w1", at: 2_000)
                #expect(first.map(\.attempts) == [1])
                #expect(try await Self.claim(store, worker: "w2", at: 2_000 + Self.lease - 1).isEmpty)
                let second = try await Self.claim(store, worker: "w2", at: 2_000 + Self.lease)
                #expect(second.map(\.key) == [Self.key("j1", 0, 0)])
                #expect(second.map(\.attempts) == [2])
                // The first worker lost it: its answer is refused, the new holder's stored.
                #expect(try await Self.complete(Self.key("j1", 0, 0), in: store, worker: "w1") == false)
                #expect(try await Self.complete(Self.key("j1", 0, 0), in: store, worker: "w2"))
                // An answered item is never claimed again.
                #expect(try await Self.claim(store, worker: "w3", at: 1_000_000).isEmpty)
            }
        }

        @Test(
            "only the lease holder stores an answer, once, and no one after the job was cancelled",
            arguments: Backend.allCases)
        func completion(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                try await Self.create(Self.newJob("j1"), in: store)
                _ = try await Self.claim(store, worker: "w1")
                #expect(try await Self.complete(Self.key("j1", 0, 0), in: store, worker: "w2") == false)
                #expect(
                    try await Self.complete(Self.key("j1", 0, 0), in: store, worker: "w1", tokens: (30, 7), at: 4_000))
                #expect(try await Self.complete(Self.key("j1", 0, 0), in: store, worker: "w1") == false)
                #expect(try await Self.complete(Self.key("j1", 0, 9), in: store, worker: "w1") == false)
                let job = try #require(try await store.job(id: "j1"))
                #expect(
                    job.done == 1 && job.inputTokens == 30 && job.outputTokens == 7
                        && job.updatedAtMilliseconds == 4_000)
                #expect(
                    try await store.levelAnswers(jobID: "j1", level: 0)
                        == JobLevelAnswers(
                            count: 3,
                            answers: [
                                JobItemAnswer(index: 0, answer: "answer 0.0", data: nil, sourceStart: 0, sourceEnd: 100)
                            ])
                )

                let cancelled = try #require(try await store.cancelJob(id: "j1", nowMilliseconds: 5_000))
                #expect(
                    cancelled.status == .cancelled && cancelled.endedAtMilliseconds == 5_000
                        && cancelled.updatedAtMilliseconds == 5_000)
                #expect(try await Self.complete(Self.key("j1", 0, 1), in: store, worker: "w1") == false)
                #expect(try await store.job(id: "j1")?.done == 1)
                #expect(try await Self.claim(store, worker: "w2", at: 1_000_000).isEmpty)
                // Cancelling again changes nothing; a missing job is nil.
                #expect(try await store.cancelJob(id: "j1", nowMilliseconds: 9_000) == cancelled)
                #expect(try await store.cancelJob(id: "missing", nowMilliseconds: 9_000) == nil)
            }
        }

        @Test(
            "each answer adds its tokens and cost to the owner's day, as no request; a guest's to all guests' day",
            arguments: Backend.allCases)
        func usage(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                try await Self.create(Self.newJob("mine", items: 2), in: store)
                try await Self.create(Self.newJob("guest", caller: "198.51.100.1", owner: nil, items: 1), in: store)
                _ = try await Self.claim(store)
                #expect(try await Self.complete(Self.key("mine", 0, 0), in: store, tokens: (100, 20), cost: 140))
                #expect(try await Self.complete(Self.key("mine", 0, 1), in: store, tokens: (50, 5), cost: 60))
                // A call whose model had no price: the job's cost is unknown from then on; the day keeps what is known.
                #expect(
                    try await Self.complete(
                        Self.key("guest", 0, 0), in: store, owner: nil, tokens: (1_000, 1_000), cost: nil))
                // A refused answer adds nothing.
                #expect(try await Self.complete(Self.key("mine", 0, 1), in: store, tokens: (7, 7), cost: 9) == false)
                #expect(try await store.job(id: "mine")?.costMicros == 200)
                #expect(try await store.job(id: "guest")?.costMicros == nil)
                #expect(
                    try await store.usageReport(fromDay: 0, userID: nil) == [
                        DailyUsage(
                            userID: DailyUsage.guestUserID, day: Self.day, requests: 0, inputTokens: 1_000,
                            outputTokens: 1_000),
                        DailyUsage(
                            userID: "alice", day: Self.day, requests: 0, inputTokens: 150, outputTokens: 25,
                            costMicros: 200),
                    ]
                )
                // The request that made the job still counts as one, without its tokens again.
                var row = ledgerRow(
                    "req-mine", user: "alice", at: startOfDay(Self.day), inputTokens: 150, outputTokens: 25)
                row.chargesTokens = false
                try await append([row], to: store)
                #expect(try await store.tokensCharged(onDay: Self.day) == ["alice": 175])
                #expect(try await store.dailyUsage(userID: "alice", fromDay: 0).first?.requests == 1)
            }
        }

        @Test("renewing answers only the leases the worker still holds, and moves them", arguments: Backend.allCases)
        func renew(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                // "c"'s lease passes first, and another worker takes it.
                try await Self.create(Self.newJob("c", items: 1), in: store)
                _ = try await Self.claim(store, worker: "w1", at: 1_000)
                try await Self.create(Self.newJob("a", items: 3), in: store)
                try await Self.create(Self.newJob("b", items: 1), in: store)
                _ = try await Self.claim(store, worker: "w1", at: 20_000)
                #expect(try await Self.complete(Self.key("a", 0, 2), in: store, worker: "w1"))
                _ = try await store.cancelJob(id: "b", nowMilliseconds: 20_500)
                let taken = try await Self.claim(store, worker: "w2", at: 1_000 + Self.lease)
                #expect(taken.map(\.key) == [Self.key("c", 0, 0)])

                let asked = [
                    Self.key("a", 0, 0), Self.key("a", 0, 1), Self.key("a", 0, 2), Self.key("b", 0, 0),
                    Self.key("c", 0, 0), Self.key("zz", 0, 0),
                    Self.key("a", 0, 0),
                ]
                let renewed = try await store.renewLeases(
                    worker: "w1", items: asked, until: 100_000, nowMilliseconds: 1_000 + Self.lease)
                #expect(renewed == [Self.key("a", 0, 0), Self.key("a", 0, 1)])
                #expect(
                    try await store.renewLeases(worker: "w1", items: [], until: 100_000, nowMilliseconds: 2_000).isEmpty
                )
                // The renewed leases hold past their old end, and no longer.
                #expect(try await Self.claim(store, worker: "w3", at: 99_999).map(\.key) == [Self.key("c", 0, 0)])
                #expect(
                    try await Self.claim(store, worker: "w4", at: 100_000).map(\.key) == [
                        Self.key("a", 0, 0), Self.key("a", 0, 1),
                    ])
            }
        }

        @Test("a released item can be claimed at once; only its holder releases it", arguments: Backend.allCases)
        func release(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                try await Self.create(Self.newJob("j1", items: 1), in: store)
                _ = try await Self.claim(store, worker: "w1")
                try await store.releaseItem(Self.key("j1", 0, 0), worker: "w2")
                #expect(try await Self.claim(store, worker: "w2").isEmpty)
                try await store.releaseItem(Self.key("j1", 0, 0), worker: "w1")
                let again = try await Self.claim(store, worker: "w2")
                #expect(again.map(\.key) == [Self.key("j1", 0, 0)])
                #expect(again.map(\.attempts) == [2])
                #expect(try await Self.complete(Self.key("j1", 0, 0), in: store, worker: "w1") == false)
            }
        }

        @Test(
            "a level is added once, only when the level below is complete and the job goes on",
            arguments: Backend.allCases)
        func levels(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                try await Self.create(Self.newJob("j1", items: 2), in: store)
                let reduce = NewJobLevel(
                    jobID: "j1", level: 1,
                    items: [NewJobItem(kind: .reduce, input: "both answers", sourceStart: 0, sourceEnd: 200)],
                    nowMilliseconds: 6_000
                )
                _ = try await Self.claim(store)
                #expect(try await store.addLevel(reduce) == false)
                #expect(try await Self.complete(Self.key("j1", 0, 0), in: store))
                #expect(try await store.addLevel(reduce) == false)
                #expect(try await Self.complete(Self.key("j1", 0, 1), in: store))
                var skipping = reduce
                skipping.level = 2
                #expect(try await store.addLevel(skipping) == false)
                var zero = reduce
                zero.level = 0
                #expect(try await store.addLevel(zero) == false)

                #expect(try await store.addLevel(reduce))
                #expect(try await store.addLevel(reduce) == false)
                let job = try #require(try await store.job(id: "j1"))
                #expect(job.total == 3 && job.done == 2 && job.updatedAtMilliseconds == 6_000)
                let claimed = try await Self.claim(store, at: 7_000)
                #expect(claimed.map(\.key) == [Self.key("j1", 1, 0)])
                #expect(
                    claimed.first?.kind == .reduce && claimed.first?.input == "both answers"
                        && claimed.first?.levelCount == 1)

                // Nothing is added to a job that ended.
                #expect(
                    try await store.finishJob(
                        JobFinish(
                            jobID: "j1", outcome: .failed(code: "upstream_error", message: "m"), nowMilliseconds: 8_000)
                    ))
                var final = reduce
                final.level = 2
                #expect(try await Self.complete(Self.key("j1", 1, 0), in: store, at: 7_500) == false)
                #expect(try await store.addLevel(final) == false)
            }
        }

        @Test("a job finishes once, keeping its answers and clearing its items' input", arguments: Backend.allCases)
        func finish(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                try await Self.create(Self.newJob("ok", items: 2), in: store)
                try await Self.create(Self.newJob("bad", items: 1), in: store)
                _ = try await Self.claim(store)
                #expect(try await Self.complete(Self.key("ok", 0, 0), in: store))
                let done = JobFinish(
                    jobID: "ok", outcome: .succeeded(result: "the summary", data: "{\"a\":1}"), nowMilliseconds: 9_000)
                #expect(try await store.finishJob(done))
                #expect(try await store.finishJob(done) == false)
                #expect(
                    try await store.finishJob(
                        JobFinish(jobID: "ok", outcome: .failed(code: "x", message: "y"), nowMilliseconds: 9_500))
                        == false)
                let ok = try #require(try await store.job(id: "ok"))
                #expect(
                    ok.status == .succeeded && ok.result == "the summary" && ok.data == "{\"a\":1}"
                        && ok.errorCode == nil)
                #expect(ok.endedAtMilliseconds == 9_000 && ok.updatedAtMilliseconds == 9_000)
                #expect(try await Self.inputs(of: "ok", in: store) == ["", ""])
                #expect(try await store.levelAnswers(jobID: "ok", level: 0).answers.map(\.answer) == ["answer 0.0"])
                #expect(try await store.levelAnswers(jobID: "ok", level: 0).answers.map(\.sourceEnd) == [100])
                // An unanswered item of an ended job is never claimed.
                #expect(try await Self.claim(store, worker: "w2", at: 1_000_000).map(\.key.jobID) == ["bad"])

                #expect(
                    try await store.finishJob(
                        JobFinish(
                            jobID: "bad", outcome: .failed(code: "upstream_error", message: "gone"),
                            nowMilliseconds: 9_000)))
                let bad = try #require(try await store.job(id: "bad"))
                #expect(
                    bad.status == .failed && bad.errorCode == "upstream_error" && bad.errorMessage == "gone"
                        && bad.result == nil)
                #expect(try await Self.inputs(of: "bad", in: store) == [""])
                #expect(
                    try await store.finishJob(
                        JobFinish(jobID: "missing", outcome: .failed(code: "x", message: "y"), nowMilliseconds: 1))
                        == false)
            }
        }

        @Test(
            "stalled jobs are the running ones with nothing left unanswered, oldest first", arguments: Backend.allCases)
        func stalled(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                for id in ["s1", "busy", "s2", "s3"] { try await Self.create(Self.newJob(id, items: 1), in: store) }
                try await Self.create(Self.newJob("queued", items: 1), in: store)
                _ = try await Self.claim(store, limit: 4)
                for id in ["s1", "s2", "s3"] { #expect(try await Self.complete(Self.key(id, 0, 0), in: store)) }
                #expect(try await store.stalledJobs(limit: 10).map(\.id) == ["s1", "s2", "s3"])
                #expect(try await store.stalledJobs(limit: 2).map(\.id) == ["s1", "s2"])
                #expect(
                    try await store.finishJob(
                        JobFinish(jobID: "s1", outcome: .succeeded(result: "r", data: nil), nowMilliseconds: 9_000)))
                #expect(try await store.stalledJobs(limit: 10).map(\.id) == ["s2", "s3"])
                #expect(try await store.stalledJobs(limit: 0).isEmpty)
            }
        }

        @Test(
            "a purge deletes the jobs that ended before the instant, with their items, in batches",
            arguments: Backend.allCases)
        func purge(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                let batch = backend == .sqlite ? SQLiteStore.jobDeletionBatch : PostgresStore.jobDeletionBatch
                let old = batch + 3
                for index in 0..<old {
                    try await Self.create(Self.newJob("old\(index)", items: 2), in: store)
                    #expect(
                        try await store.finishJob(
                            JobFinish(
                                jobID: "old\(index)", outcome: .failed(code: "x", message: "y"), nowMilliseconds: 5_000)
                        ))
                }
                try await Self.create(Self.newJob("edge", items: 1), in: store)
                _ = try await store.cancelJob(id: "edge", nowMilliseconds: 6_000)
                try await Self.create(Self.newJob("live", items: 1), in: store)

                #expect(try await store.purgeJobs(endedBeforeMilliseconds: 6_000) == old)
                #expect(try await store.job(id: "old0") == nil)
                #expect(try await store.levelAnswers(jobID: "old0", level: 0).count == 0)
                #expect(try await store.job(id: "edge")?.status == .cancelled)
                #expect(try await store.job(id: "live")?.status == .queued)
                #expect(try await store.purgeJobs(endedBeforeMilliseconds: 6_000) == 0)
                #expect(try await store.jobStatistics().jobs[.failed] == 0)
                #expect(try await store.integrityCheck() == [])
            }
        }

        @Test(
            "statistics count jobs by status, every status present, and the unanswered items of jobs that go on",
            arguments: Backend.allCases)
        func statistics(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                let empty = try await store.jobStatistics()
                #expect(
                    empty
                        == JobStatistics(
                            jobs: [.queued: 0, .running: 0, .succeeded: 0, .failed: 0, .cancelled: 0], pendingItems: 0))
                try await Self.create(Self.newJob("run", items: 3), in: store)
                _ = try await Self.claim(store, limit: 1)
                #expect(try await Self.complete(Self.key("run", 0, 0), in: store))
                try await Self.create(Self.newJob("wait", items: 2), in: store)
                try await Self.create(Self.newJob("gone", items: 4), in: store)
                _ = try await store.cancelJob(id: "gone", nowMilliseconds: 4_000)
                let counted = try await store.jobStatistics()
                #expect(
                    counted
                        == JobStatistics(
                            jobs: [.queued: 1, .running: 1, .succeeded: 0, .failed: 0, .cancelled: 1], pendingItems: 4))
            }
        }

        @Test(
            "claims from several stores at once never hand out an item twice, nor past the per-job limit",
            arguments: Backend.allCases)
        func concurrentClaims(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let claims = try await Self.concurrently(in: store, fixture) { index, each in
                    try await Self.claim(each, worker: "w\(index)", limit: 20, perJob: 4)
                }
                let keys = claims.map(\.key)
                #expect(Set(keys).count == keys.count, "an item was claimed twice")
                let perJob = Dictionary(grouping: keys, by: \.jobID).mapValues(\.count)
                #expect(perJob.values.allSatisfy { $0 <= 4 }, "\(perJob)")
                #expect(claims.allSatisfy { $0.attempts == 1 })
            }
        }

        @Test(
            "workers of several stores claiming and answering at once answer every item exactly once",
            .timeLimit(.minutes(2)), arguments: Backend.allCases)
        func concurrentWorkers(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let answered = try await Self.concurrently(in: store, fixture) { index, each in
                    var mine: [JobItemKey] = []
                    for _ in 0..<2_000 {
                        let items = try await Self.claim(each, worker: "w\(index)", limit: 3, perJob: 4)
                        for item in items {
                            if try await Self.complete(item.key, in: each, worker: "w\(index)") {
                                mine.append(item.key)
                            }
                        }
                        if items.isEmpty {
                            if try await each.jobStatistics().pendingItems == 0 { break }
                            await Task.yield()
                        }
                    }
                    return mine
                }
                #expect(answered.count == 100)
                #expect(Set(answered).count == 100)
                for job in 0..<10 {
                    let record = try #require(try await store.job(id: "j\(job)"))
                    #expect(record.done == 10 && record.inputTokens == 100 && record.status == .running)
                }
                #expect(try await store.dailyUsage(userID: "alice", fromDay: 0).first?.inputTokens == 1_000)
            }
        }
    }
}
