import Postgres

extension PostgresStore {
    /// Whether ``append(_:)`` keeps the roll-ups. Only the store benchmark turns it off, to
    /// measure what they cost the writer: without them the console's answers are wrong.
    package var rollupsEnabled: Bool {
        get { rollupSwitch.load(ordering: .relaxed) }
        set { rollupSwitch.store(newValue, ordering: .relaxed) }
    }

    package func rollupTotals(fromSlot: Int64, toSlot: Int64) async throws(StoreError) -> RollupTotals {
        let rows = try await query(
            RollupQueries.totals(placeholders: "$1", "$2"), [.int(Int(fromSlot)), .int(Int(toSlot))]
        ).rows
        guard let row = rows.first else { return RollupTotals() }
        return RollupTotals(
            requests: row.int(0) ?? 0, cacheHits: row.int(1) ?? 0, inputTokens: row.int(2) ?? 0,
            outputTokens: row.int(3) ?? 0, errors: row.int(4) ?? 0, costMicros: Int64(row.int(5) ?? 0),
            added: LatencyHistogram(counts: (0..<16).map { row.int(6 + $0) ?? 0 }),
            upstream: LatencyHistogram(counts: (0..<16).map { row.int(22 + $0) ?? 0 })
        )
    }

    package func rollupDayTasks(fromSlot: Int64, toSlot: Int64, offsetMinutes: Int) async throws(StoreError)
        -> [RollupDayTask]
    {
        let rows = try await query(
            RollupQueries.dayTasks(placeholders: "$1", "$2", "$3", bySlotFirst: false),
            [.int(offsetMinutes * 60_000), .int(Int(fromSlot)), .int(Int(toSlot))]
        ).rows
        return RollupQueries.ordered(
            rows.map {
                RollupDayTask(
                    day: Int64($0.int(0) ?? 0), task: $0.string(1) ?? "", requests: $0.int(2) ?? 0,
                    inputTokens: $0.int(3) ?? 0, outputTokens: $0.int(4) ?? 0, errors: $0.int(5) ?? 0,
                    costMicros: Int64($0.int(6) ?? 0))
            })
    }

    package func rollupDayCodes(fromSlot: Int64, toSlot: Int64, offsetMinutes: Int) async throws(StoreError)
        -> [RollupDayCode]
    {
        let rows = try await query(
            RollupQueries.dayCodes(placeholders: "$1", "$2", "$3", bySlotFirst: false),
            [.int(offsetMinutes * 60_000), .int(Int(fromSlot)), .int(Int(toSlot))]
        ).rows
        return RollupQueries.ordered(
            rows.map { RollupDayCode(day: Int64($0.int(0) ?? 0), code: $0.string(1) ?? "", count: $0.int(2) ?? 0) })
    }

    package func rollupModels(fromSlot: Int64, toSlot: Int64) async throws(StoreError) -> [RollupModel] {
        let rows = try await query(
            RollupQueries.models(placeholders: "$1", "$2"), [.int(Int(fromSlot)), .int(Int(toSlot))]
        ).rows
        return RollupQueries.ordered(
            rows.map {
                RollupModel(
                    model: $0.string(0) ?? "", requests: $0.int(1) ?? 0, inputTokens: $0.int(2) ?? 0,
                    outputTokens: $0.int(3) ?? 0, costMicros: Int64($0.int(4) ?? 0), errors: $0.int(5) ?? 0)
            })
    }

    package func rollupCallers(fromDay: Int64, toDay: Int64) async throws(StoreError) -> [RollupCaller] {
        let rows = try await query(
            RollupQueries.callers(placeholders: "$1", "$2"), [.int(Int(fromDay)), .int(Int(toDay))]
        ).rows
        return RollupQueries.merged(
            rows.map {
                RollupCaller(
                    userID: $0.string(0) ?? "", plan: $0.string(1), requests: $0.int(2) ?? 0,
                    cacheHits: $0.int(3) ?? 0, inputTokens: $0.int(4) ?? 0, outputTokens: $0.int(5) ?? 0,
                    errors: $0.int(6) ?? 0, lastSeenMilliseconds: $0.int(7).map(Int64.init),
                    costMicros: Int64($0.int(8) ?? 0))
            })
    }

    package func recentFailures(limit: Int) async throws(StoreError) -> [FailedRequest] {
        guard limit > 0 else { return [] }
        return try await query(RollupQueries.failures(placeholder: "$1"), [.int(limit)]).rows.map {
            FailedRequest(
                sequence: Int64($0.int(0) ?? 0), requestID: $0.string(1) ?? "",
                createdAtMilliseconds: Int64($0.int(2) ?? 0), status: $0.int(3) ?? 0, code: $0.string(4),
                route: $0.string(5) ?? "", upstream: $0.string(6), task: $0.string(7), userID: $0.string(8))
        }
    }

    package func activeJobs(limit: Int) async throws(StoreError) -> [JobRecord] {
        guard limit > 0 else { return [] }
        return try await query(RollupQueries.activeJobs(placeholder: "$1"), [.int(limit)]).rows.map {
            JobsTable.record(from: $0)
        }
    }

    /// Empties the slots and makes them (and `usage_daily`'s console columns) again from every
    /// row of `requests`, in one
    /// transaction (the benchmark's seeding, after it filled `requests` with SQL of its own).
    package func rebuildRollups() async throws(StoreError) {
        try await transaction(
            (["DELETE FROM usage_rollup_slots", "DELETE FROM usage_rollup_latency"] + RollupTables.backfill(.postgres)
                + RollupTables.backfillCost)
                .map { PostgresQuery($0) })
    }

    /// Runs `statements` in one transaction: for the benchmark's seeding only.
    package func execute(_ statements: [String]) async throws(StoreError) {
        try await transaction(statements.map { PostgresQuery($0) })
    }
}
