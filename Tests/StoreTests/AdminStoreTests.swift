import EventLoop
import Postgres
import TestSupport
import Testing

@testable import Store

@Suite("The latency histogram's buckets and percentiles")
struct LatencyHistogramTests {
    @Test("a value goes to the first bucket whose bound is at or above it; the SQL bucket says the same")
    func buckets() async throws {
        let cases: [(Double, Int)] = [
            (-3, 0), (0, 0), (0.5, 0), (0.51, 1), (1, 1), (2, 2), (4.9, 3), (10, 4), (20, 5), (50, 6), (99, 7),
            (200, 8), (500, 9), (1_000, 10), (2_000, 11), (5_000, 12), (10_000, 13), (30_000, 14), (30_000.5, 15),
            (1e12, 15),
        ]
        for (value, bucket) in cases { #expect(LatencyHistogram.bucket(ofMilliseconds: value) == bucket, "\(value)") }
        #expect(LatencyHistogram.bounds.count == 16 && LatencyHistogram.bounds.last == .infinity)

        try await withStore { store, _, _ in
            let sql = "SELECT \(RollupTables.bucketCase("v")) FROM (SELECT ? AS v)"
            for (value, bucket) in cases {
                let answer = try await store.read { connection throws(StoreError) in
                    try connection.queryFirst(sql, [.real(value)]) { $0.int(0) }
                }
                #expect(answer == bucket, "\(value)")
            }
        }
    }

    @Test("a percentile is the bound of the bucket where the running count reaches ceil(p * total)")
    func percentiles() {
        #expect(LatencyHistogram().percentile(0.5) == nil)
        var histogram = LatencyHistogram()
        for value in [0.2, 1.5, 1.7, 40_000] { histogram.add(milliseconds: value) }
        #expect(histogram.counts[0] == 1 && histogram.counts[2] == 2 && histogram.counts[15] == 1)
        #expect(histogram.percentile(0.25) == 0.5)
        // ceil(0.5 * 4) = 2: the second value, in the bucket up to 2 ms.
        #expect(histogram.percentile(0.5) == 2)
        #expect(histogram.percentile(0.75) == 2)
        // ceil(0.95 * 4) = 4: the open bucket reports its lower edge.
        #expect(histogram.percentile(0.95) == 30_000)
        #expect(histogram.percentile(0) == 0.5)
        var one = LatencyHistogram()
        one.add(milliseconds: 7)
        #expect(one.percentile(0.5) == 10 && one.percentile(0.99) == 10)
    }
}

extension StoreBackends {
    @Suite("store: the operator console's roll-ups")
    struct AdminStoreTests {
        static let firstDay: Int64 = 20_400
        static let days: Int64 = 5

        /// A small deterministic generator (the rows must be the same on both backends).
        struct Generator {
            var state: UInt64
            mutating func next(_ bound: Int) -> Int {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Int((state >> 33) % UInt64(bound))
            }
        }

        /// Rows of five callers and the guests, four tasks (and none), two models (and none),
        /// mostly successes, some cache hits, latencies from under a millisecond to over 30 s,
        /// over five days; identified callers change plan halfway. Distinct instants.
        static func rows(count: Int = 360, seed: UInt64 = 42, upstreams: Bool = true) -> [LedgerRow] {
            var random = Generator(state: seed)
            let users: [String?] = [nil, "alice", "bob", "carol", "dave", "erin"]
            let tasks: [String?] = [nil, "summarize", "translate", "tone", "keywords"]
            let models: [String?] = [nil, "model-a", "model-b"]
            let failures: [(Int, String?)] = [
                (400, "invalid_request"), (429, "rate_limited"), (499, nil), (502, "upstream_error"),
                (504, "upstream_timeout"),
            ]
            let latencies: [Double] = [0.2, 0.7, 3, 8, 15, 45, 90, 180, 450, 900, 1_800, 4_000, 9_000, 25_000, 45_000]
            let span = Int(days * 86_400_000)
            var instants = Set<Int64>()
            var rows: [LedgerRow] = []
            for index in 0..<count {
                var at = startOfDay(firstDay) + Int64(random.next(span))
                while !instants.insert(at).inserted { at += 1 }
                // 23:40 UTC: its slot starts at 23:30, another local day 30 minutes east of UTC.
                if index == 0 { at = startOfDay(firstDay + 1) - 20 * 60_000 }
                let user = users[random.next(users.count)]
                let (status, code) = random.next(10) < 8 ? (200, nil) : failures[random.next(failures.count)]
                let cacheHit = status == 200 && random.next(8) == 0
                let upstream: Double? =
                    !upstreams || cacheHit || status == 400 || status == 429
                    ? nil : latencies[random.next(latencies.count)]
                let duration = (upstream ?? 0) + latencies[random.next(8)]
                let late = at >= startOfDay(firstDay) + Int64(span / 2)
                rows.append(
                    LedgerRow(
                        requestID: "r\(index)", userID: user, tokenID: nil, task: tasks[random.next(tasks.count)],
                        tone: nil, route: index % 7 == 0 ? "/v1/chat/completions" : "/api/process",
                        model: models[random.next(models.count)], inputLength: 100,
                        inputTokens: random.next(10) == 0 ? nil : random.next(500),
                        outputTokens: random.next(300), status: status, code: code, outcome: "done",
                        cacheHit: cacheHit, durationMilliseconds: duration, createdAtMilliseconds: at,
                        plan: user == nil ? nil : (late == (user == "alice") ? "free" : "pro"),
                        upstream: upstream == nil ? nil : (random.next(2) == 0 ? "primary" : "backup"),
                        upstreamMilliseconds: upstream,
                        // An answer's cost (unknown for every fifth); a cached one costs 0.
                        costMicros: cacheHit ? 0 : status == 200 && index % 5 != 0 ? Int64(10 + index % 90) : nil
                    ))
            }
            return rows
        }

        // MARK: What a plain aggregation of the rows gives

        static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
            let (quotient, rest) = value.quotientAndRemainder(dividingBy: divisor)
            return rest < 0 ? quotient - 1 : quotient
        }

        static func slot(_ row: LedgerRow) -> Int64 { floorDivide(row.createdAtMilliseconds, 900_000) }

        static func tokens(_ row: LedgerRow) -> (Int, Int) {
            row.cacheHit ? (0, 0) : (max(0, row.inputTokens ?? 0), max(0, row.outputTokens ?? 0))
        }

        static func cost(_ row: LedgerRow) -> Int64 { row.cacheHit ? 0 : max(0, row.costMicros ?? 0) }

        static func expectedTotals(_ rows: [LedgerRow], _ slots: Range<Int64>) -> RollupTotals {
            var totals = RollupTotals()
            for row in rows where slots.contains(slot(row)) {
                totals.requests += 1
                if row.cacheHit { totals.cacheHits += 1 }
                totals.inputTokens += tokens(row).0
                totals.outputTokens += tokens(row).1
                totals.costMicros += cost(row)
                if row.status >= 400 { totals.errors += 1 }
                if row.status < 400 {
                    totals.added.add(milliseconds: max(0, row.durationMilliseconds - (row.upstreamMilliseconds ?? 0)))
                }
                if let upstream = row.upstreamMilliseconds, upstream > 0 { totals.upstream.add(milliseconds: upstream) }
            }
            return totals
        }

        static func localDay(_ row: LedgerRow, _ offset: Int) -> Int64 {
            floorDivide(slot(row) * 900_000 + Int64(offset) * 60_000, 86_400_000)
        }

        static func expectedDayTasks(_ rows: [LedgerRow], _ slots: Range<Int64>, offset: Int) -> [RollupDayTask] {
            var days: [String: RollupDayTask] = [:]
            for row in rows where slots.contains(slot(row)) {
                let day = localDay(row, offset)
                let task = row.task ?? ""
                var entry =
                    days["\(day)/\(task)"]
                    ?? RollupDayTask(day: day, task: task, requests: 0, inputTokens: 0, outputTokens: 0, errors: 0)
                entry.requests += 1
                entry.inputTokens += tokens(row).0
                entry.outputTokens += tokens(row).1
                entry.costMicros += cost(row)
                if row.status >= 400 { entry.errors += 1 }
                days["\(day)/\(task)"] = entry
            }
            return days.values.sorted { ($0.day, $0.task) < ($1.day, $1.task) }
        }

        static func expectedDayCodes(_ rows: [LedgerRow], _ slots: Range<Int64>, offset: Int) -> [RollupDayCode] {
            var days: [String: RollupDayCode] = [:]
            for row in rows where slots.contains(slot(row)) && row.status >= 400 {
                let day = localDay(row, offset)
                let code = row.code ?? ""
                days["\(day)/\(code)", default: RollupDayCode(day: day, code: code, count: 0)].count += 1
            }
            return days.values.sorted { ($0.day, $0.code) < ($1.day, $1.code) }
        }

        static func expectedCallers(_ rows: [LedgerRow], days: ClosedRange<Int64>) -> [RollupCaller] {
            var callers: [String: RollupCaller] = [:]
            var planAt: [String: Int64] = [:]
            for row in rows where days.contains(floorDivide(row.createdAtMilliseconds, 86_400_000)) {
                let user = row.userID ?? ""
                var caller =
                    callers[user]
                    ?? RollupCaller(
                        userID: user, plan: nil, requests: 0, cacheHits: 0, inputTokens: 0, outputTokens: 0,
                        errors: 0, lastSeenMilliseconds: nil)
                caller.requests += 1
                if row.cacheHit { caller.cacheHits += 1 }
                caller.inputTokens += tokens(row).0
                caller.outputTokens += tokens(row).1
                caller.costMicros += cost(row)
                if row.status >= 400 { caller.errors += 1 }
                caller.lastSeenMilliseconds = max(caller.lastSeenMilliseconds ?? .min, row.createdAtMilliseconds)
                if let plan = row.plan, row.createdAtMilliseconds > planAt[user] ?? .min {
                    caller.plan = plan
                    planAt[user] = row.createdAtMilliseconds
                }
                callers[user] = caller
            }
            return callers.values.sorted { $0.userID < $1.userID }
        }

        /// The slot ranges and offsets every check runs over: all, none, part of a day to part of
        /// another, one slot.
        static var ranges: [Range<Int64>] {
            let first = firstDay * 96
            return [
                0..<(Int64.max / 1_000_000), first..<(first + days * 96), (first + 37)..<(first + 3 * 96 + 5),
                (first + 95)..<(first + 96), (first - 96)..<first,
            ]
        }
        static let offsets = [0, 29, 30, 210, -300, 840, -840]

        /// Every answer of `store` against the plain aggregation of `rows`.
        static func expectAnswers(_ store: any StoreBackend, _ rows: [LedgerRow]) async throws {
            for range in ranges {
                let totals = try await store.rollupTotals(fromSlot: range.lowerBound, toSlot: range.upperBound)
                #expect(totals == expectedTotals(rows, range), "\(range)")
                for offset in offsets {
                    let tasks = try await store.rollupDayTasks(
                        fromSlot: range.lowerBound, toSlot: range.upperBound, offsetMinutes: offset)
                    #expect(tasks == expectedDayTasks(rows, range, offset: offset), "\(range) \(offset)")
                    let codes = try await store.rollupDayCodes(
                        fromSlot: range.lowerBound, toSlot: range.upperBound, offsetMinutes: offset)
                    #expect(codes == expectedDayCodes(rows, range, offset: offset), "\(range) \(offset)")
                }
            }
            for days in [0...100_000, firstDay...firstDay, (firstDay + 1)...(firstDay + 3), 0...(firstDay - 1)] {
                let callers = try await store.rollupCallers(fromDay: days.lowerBound, toDay: days.upperBound)
                #expect(callers == expectedCallers(rows, days: days), "\(days)")
            }
        }

        /// Appends `rows` in batches of varied sizes through the store's own append.
        static func appendInBatches(_ rows: [LedgerRow], to store: any StoreBackend) async throws {
            var offset = 0
            var size = 1
            while offset < rows.count {
                let end = min(rows.count, offset + size)
                try await store.append(Array(rows[offset..<end]))
                offset = end
                size = size % 61 + 17
            }
        }

        @Test("every answer equals a plain aggregation of the rows appended", arguments: Backend.allCases)
        func answers(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                let rows = Self.rows()
                // The row at 23:40 UTC (slot 23:30) is another local day 30 minutes east, not 29.
                #expect(Self.localDay(rows[0], 30) == Self.firstDay + 1 && Self.localDay(rows[0], 29) == Self.firstDay)
                try await Self.appendInBatches(rows, to: store)
                try await Self.expectAnswers(store, rows)
                #expect(try await store.rollupTotals(fromSlot: 10, toSlot: 5) == RollupTotals())
            }
        }

        @Test("on SQLite the roll-ups agree with GROUP BY over the requests table")
        func sqliteGroupBy() async throws {
            try await withStore { store, _, _ in
                let rows = Self.rows(seed: 9)
                try await Self.appendInBatches(rows, to: store)
                let first = Self.firstDay * 86_400_000
                for (from, to) in [(first, first + 5 * 86_400_000), (first + 3_600_000, first + 40 * 900_000)] {
                    let direct = try await store.read { connection throws(StoreError) in
                        try connection.queryFirst(
                            """
                            SELECT count(*), total(cache_hit),
                                total(CASE WHEN cache_hit THEN 0 ELSE max(0, coalesce(input_tokens, 0)) END),
                                total(CASE WHEN cache_hit THEN 0 ELSE max(0, coalesce(output_tokens, 0)) END),
                                total(status >= 400),
                                total(CASE WHEN cache_hit THEN 0 ELSE max(0, coalesce(cost_micros, 0)) END)
                            FROM requests WHERE created_at >= ? AND created_at < ?
                            """,
                            [.integer(from), .integer(to)]
                        ) { [$0.int(0), $0.int(1), $0.int(2), $0.int(3), $0.int(4), $0.int(5)] } ?? []
                    }
                    let totals = try await store.rollupTotals(fromSlot: from / 900_000, toSlot: to / 900_000)
                    #expect(
                        direct == [
                            totals.requests, totals.cacheHits, totals.inputTokens, totals.outputTokens, totals.errors,
                            Int(totals.costMicros),
                        ])
                    let offset = 210
                    let byDay = try await store.read { connection throws(StoreError) in
                        var days: [RollupDayTask] = []
                        try connection.query(
                            """
                            SELECT (created_at / 900000 * 900000 + ?) / 86400000 AS d, coalesce(task, ''), count(*),
                                total(CASE WHEN cache_hit THEN 0 ELSE max(0, coalesce(input_tokens, 0)) END),
                                total(CASE WHEN cache_hit THEN 0 ELSE max(0, coalesce(output_tokens, 0)) END),
                                total(status >= 400),
                                total(CASE WHEN cache_hit THEN 0 ELSE max(0, coalesce(cost_micros, 0)) END)
                            FROM requests WHERE created_at >= ? AND created_at < ?
                            GROUP BY 1, 2 ORDER BY 1, 2
                            """,
                            [.integer(Int64(offset) * 60_000), .integer(from), .integer(to)]
                        ) {
                            days.append(
                                RollupDayTask(
                                    day: $0.int64(0), task: $0.text(1), requests: $0.int(2), inputTokens: $0.int(3),
                                    outputTokens: $0.int(4), errors: $0.int(5), costMicros: Int64($0.int(6))))
                        }
                        return days
                    }
                    let tasks = try await store.rollupDayTasks(
                        fromSlot: from / 900_000, toSlot: to / 900_000, offsetMinutes: offset)
                    #expect(tasks == byDay)
                }
            }
        }

        @Test("the latest failures come newest first with their upstream", arguments: Backend.allCases)
        func failures(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                let rows = Self.rows(count: 200, seed: 3)
                try await Self.appendInBatches(rows, to: store)
                let expected = rows.filter { $0.status >= 400 }.reversed()
                for limit in [1, 7, 200] {
                    let failures = try await store.recentFailures(limit: limit)
                    #expect(failures.map(\.requestID) == expected.prefix(limit).map(\.requestID))
                    for (failure, row) in zip(failures, expected) {
                        #expect(
                            failure.status == row.status && failure.code == row.code && failure.route == row.route
                                && failure.upstream == row.upstream && failure.task == row.task
                                && failure.userID == row.userID
                                && failure.createdAtMilliseconds == row.createdAtMilliseconds)
                    }
                    #expect(zip(failures, failures.dropFirst()).allSatisfy { $0.sequence > $1.sequence })
                }
                #expect(try await store.recentFailures(limit: 0).isEmpty)
                // The history reads the new columns back too.
                let item = try await store.history(userID: "alice", limit: 1, before: nil).items.first
                let last = try #require(rows.last { $0.userID == "alice" })
                #expect(item?.row.upstream == last.upstream)
                #expect(item?.row.upstreamMilliseconds == last.upstreamMilliseconds)
            }
        }

        @Test("active jobs are the queued and running ones, oldest first", arguments: Backend.allCases)
        func activeJobs(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                for (index, id) in ["j1", "j2", "j3", "j4"].enumerated() {
                    try await JobStoreTests.create(
                        JobStoreTests.newJob(id, items: 1, at: Int64(1_000 + index)), in: store)
                }
                _ = try await store.cancelJob(id: "j2", nowMilliseconds: 1_500)
                // Claims the first job's item: it is running now.
                _ = try await JobStoreTests.claim(store, limit: 1)
                let jobs = try await store.activeJobs(limit: 10)
                #expect(jobs.map(\.id) == ["j1", "j3", "j4"])
                #expect(jobs.map(\.status) == [.running, .queued, .queued])
                #expect(try await store.activeJobs(limit: 2).map(\.id) == ["j1", "j3"])
            }
        }

        @Test("retention purges roll-up rows of the days before the cutoff", arguments: Backend.allCases)
        func retention(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                let rows = Self.rows(count: 200, seed: 5)
                try await Self.appendInBatches(rows, to: store)
                let cutoff = Self.firstDay + 2
                _ = try await store.purge(historyBeforeMilliseconds: startOfDay(cutoff), usageBeforeDay: cutoff)
                let kept = rows.filter { $0.createdAtMilliseconds >= startOfDay(cutoff) }
                #expect(kept.count < rows.count && !kept.isEmpty)
                try await Self.expectAnswers(store, kept)
            }
        }

        @Test("migration 6 fills the roll-ups from the rows already there", arguments: Backend.allCases)
        func backfill(_ backend: Backend) async throws {
            // Rows written before migration 6 have no upstream time and no plan.
            let rows = Self.rows(count: 300, seed: 11, upstreams: false).map {
                var row = $0
                row.plan = nil
                row.upstream = nil
                row.costMicros = nil
                return row
            }
            // What the writer before migration 6 kept per caller and day beside the rows.
            let version5Usage = """
                INSERT INTO usage_daily (user_id, day, requests, input_tokens, output_tokens)
                SELECT coalesce(user_id, ''), created_at / 86400000, count(*),
                    sum(CASE WHEN cache_hit THEN 0 ELSE coalesce(input_tokens, 0) END),
                    sum(CASE WHEN cache_hit THEN 0 ELSE coalesce(output_tokens, 0) END)
                FROM requests GROUP BY coalesce(user_id, ''), created_at / 86400000
                """
            try await Self.migrated(backend, from: 5, rows: rows, columns: 16, then: [version5Usage])
        }

        @Test(
            "migration 9 fills the days' and the slots' cost from the rows' own (kept since migration 8)",
            arguments: Backend.allCases)
        func costBackfill(_ backend: Backend) async throws {
            // The plan is no concern of this migration's: left out, as the days below keep none.
            let rows = Self.rows(count: 300, seed: 13).map {
                var row = $0
                row.plan = nil
                return row
            }
            // What the writer of schema 8 kept: the rows with their cost, the days and the slots without.
            let version8Usage = """
                INSERT INTO usage_daily (user_id, day, requests, input_tokens, output_tokens, cache_hits, errors,
                    last_seen_ms, plan)
                SELECT coalesce(user_id, ''), created_at / 86400000, count(*),
                    sum(CASE WHEN cache_hit THEN 0 ELSE coalesce(input_tokens, 0) END),
                    sum(CASE WHEN cache_hit THEN 0 ELSE coalesce(output_tokens, 0) END),
                    count(*) FILTER (WHERE cache_hit), count(*) FILTER (WHERE status >= 400), max(created_at), NULL
                FROM requests GROUP BY coalesce(user_id, ''), created_at / 86400000
                """
            let slots = { (dialect: RollupTables.Dialect) in Array(RollupTables.backfill(dialect).prefix(2)) }
            try await Self.migrated(
                backend, from: 8, rows: rows, columns: RequestsTable.columnCount,
                then: [version8Usage], sqlite: slots(.sqlite), postgres: slots(.postgres))
        }

        /// A store of schema `version` holding `rows` (their first `columns` columns, as that
        /// schema had them) and what `then` (and each backend's own statements) wrote beside
        /// them, opened by this binary: its answers must be those of the rows.
        static func migrated(
            _ backend: Backend, from version: Int, rows: [LedgerRow], columns: Int, then statements: [String],
            sqlite: [String] = [], postgres: [String] = []
        ) async throws {
            let names = RequestsTable.columns.split(separator: ",").prefix(columns).joined(separator: ",")
            switch backend {
            case .sqlite:
                try await withPoolAndDirectory { pool, directory in
                    let path = directory.file("old.db")
                    let connection = try SQLiteConnection(path: path, mode: .readWrite, busyTimeout: .seconds(5))
                    try StoreSchema.migrate(connection, to: version)
                    let insert =
                        "INSERT INTO requests (\(names)) VALUES ("
                        + Array(repeating: "?", count: columns).joined(separator: ", ") + ")"
                    try connection.transaction { () throws(StoreError) in
                        for row in rows {
                            var values: [SQLiteValue] = []
                            RequestsTable.values(of: row, into: &values)
                            try connection.execute(insert, Array(values.prefix(columns)))
                        }
                        for statement in statements + sqlite { _ = try connection.execute(statement) }
                    }
                    connection.close()
                    let store = try await SQLiteStore.open(path: path, pool: pool)
                    do {
                        try await Self.expectAnswers(store, rows)
                        await store.close()
                    } catch {
                        await store.close()
                        throw error
                    }
                }
            case .postgres:
                let lazy = try #require(LazyPostgresCluster.current)
                let (cluster, database) = try await lazy.createDatabase()
                try await withClient(cluster.configuration(database: database)) { client in
                    try await PostgresSchema.migrate(client, store: "old", timeout: .seconds(10), to: version)
                    var values: [PostgresValue] = []
                    for row in rows {
                        var all: [PostgresValue] = []
                        RequestsTable.values(of: row, into: &all)
                        values += all.prefix(columns)
                    }
                    _ = try await client.query(
                        "INSERT INTO requests (\(names)) VALUES "
                            + PostgresStore.placeholders(rows: rows.count, columns: columns),
                        values)
                    for statement in statements + postgres { _ = try await client.query(statement) }
                    let store = try await PostgresStore.open(client: client)
                    try await Self.expectAnswers(store, rows)
                }
            }
        }
    }
}
