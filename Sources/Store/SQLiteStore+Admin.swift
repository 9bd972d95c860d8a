extension SQLiteStore {
    /// Whether ``append(_:)`` keeps the roll-ups. Only the store benchmark turns it off, to
    /// measure what they cost the writer: without them the console's answers are wrong.
    package var rollupsEnabled: Bool {
        get { rollupSwitch.load(ordering: .relaxed) }
        set { rollupSwitch.store(newValue, ordering: .relaxed) }
    }

    package func rollupTotals(fromSlot: Int64, toSlot: Int64) async throws(StoreError) -> RollupTotals {
        try await read { connection throws(StoreError) in
            try connection.queryFirst(
                RollupQueries.totals(placeholders: "?1", "?2"), [.integer(fromSlot), .integer(toSlot)]
            ) { row in
                RollupTotals(
                    requests: row.int(0), cacheHits: row.int(1), inputTokens: row.int(2), outputTokens: row.int(3),
                    errors: row.int(4), costMicros: row.int64(5),
                    added: LatencyHistogram(counts: (0..<16).map { row.int(Int32(6 + $0)) }),
                    upstream: LatencyHistogram(counts: (0..<16).map { row.int(Int32(22 + $0)) })
                )
            } ?? RollupTotals()
        }
    }

    package func rollupDayTasks(fromSlot: Int64, toSlot: Int64, offsetMinutes: Int) async throws(StoreError)
        -> [RollupDayTask]
    {
        try await read { connection throws(StoreError) in
            var days: [RollupDayTask] = []
            try connection.query(
                RollupQueries.dayTasks(placeholders: "?", "?", "?", bySlotFirst: true),
                [.integer(Int64(offsetMinutes) * 60_000), .integer(fromSlot), .integer(toSlot)]
            ) {
                days.append(
                    RollupDayTask(
                        day: $0.int64(0), task: $0.text(1), requests: $0.int(2), inputTokens: $0.int(3),
                        outputTokens: $0.int(4), errors: $0.int(5), costMicros: $0.int64(6)))
            }
            return RollupQueries.ordered(days)
        }
    }

    package func rollupDayCodes(fromSlot: Int64, toSlot: Int64, offsetMinutes: Int) async throws(StoreError)
        -> [RollupDayCode]
    {
        try await read { connection throws(StoreError) in
            var days: [RollupDayCode] = []
            try connection.query(
                RollupQueries.dayCodes(placeholders: "?", "?", "?", bySlotFirst: true),
                [.integer(Int64(offsetMinutes) * 60_000), .integer(fromSlot), .integer(toSlot)]
            ) { days.append(RollupDayCode(day: $0.int64(0), code: $0.text(1), count: $0.int(2))) }
            return RollupQueries.ordered(days)
        }
    }

    package func rollupModels(fromSlot: Int64, toSlot: Int64) async throws(StoreError) -> [RollupModel] {
        try await read { connection throws(StoreError) in
            var models: [RollupModel] = []
            try connection.query(
                RollupQueries.models(placeholders: "?", "?"), [.integer(fromSlot), .integer(toSlot)]
            ) {
                models.append(
                    RollupModel(
                        model: $0.text(0), requests: $0.int(1), inputTokens: $0.int(2), outputTokens: $0.int(3),
                        costMicros: $0.int64(4), errors: $0.int(5)))
            }
            return RollupQueries.ordered(models)
        }
    }

    package func rollupCallers(fromDay: Int64, toDay: Int64) async throws(StoreError) -> [RollupCaller] {
        try await read { connection throws(StoreError) in
            var parts: [RollupCaller] = []
            try connection.query(RollupQueries.callers(placeholders: "?", "?"), [.integer(fromDay), .integer(toDay)]) {
                parts.append(
                    RollupCaller(
                        userID: $0.text(0), plan: $0.optionalText(1), requests: $0.int(2), cacheHits: $0.int(3),
                        inputTokens: $0.int(4), outputTokens: $0.int(5), errors: $0.int(6),
                        lastSeenMilliseconds: $0.optionalInt64(7), costMicros: $0.int64(8)))
            }
            return RollupQueries.merged(parts)
        }
    }

    package func recentFailures(limit: Int) async throws(StoreError) -> [FailedRequest] {
        guard limit > 0 else { return [] }
        return try await read { connection throws(StoreError) in
            var failures: [FailedRequest] = []
            try connection.query(RollupQueries.failures(placeholder: "?"), [.integer(limit)]) {
                failures.append(
                    FailedRequest(
                        sequence: $0.int64(0), requestID: $0.text(1), createdAtMilliseconds: $0.int64(2),
                        status: $0.int(3), code: $0.optionalText(4), route: $0.text(5), upstream: $0.optionalText(6),
                        task: $0.optionalText(7), userID: $0.optionalText(8)))
            }
            return failures
        }
    }

    package func activeJobs(limit: Int) async throws(StoreError) -> [JobRecord] {
        guard limit > 0 else { return [] }
        return try await read { connection throws(StoreError) in
            var jobs: [JobRecord] = []
            try connection.query(RollupQueries.activeJobs(placeholder: "?"), [.integer(limit)]) {
                jobs.append(JobsTable.record(from: $0))
            }
            return jobs
        }
    }

    /// Empties the slots and makes them (and `usage_daily`'s console columns) again from every
    /// row of `requests`, in one
    /// transaction (the benchmark's seeding, after it filled `requests` with SQL of its own).
    package func rebuildRollups() async throws(StoreError) {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                try connection.executeScript(
                    (["DELETE FROM usage_rollup_slots", "DELETE FROM usage_rollup_latency"]
                        + RollupTables.backfill(.sqlite) + RollupTables.backfillCost).joined(separator: ";\n"))
            }
        }
    }

    /// Runs `script` on the writer connection, in one transaction: for the benchmark's seeding only.
    package func executeScript(_ script: String) async throws(StoreError) {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in try connection.executeScript(script) }
        }
    }
}
