/// Every write is one `BEGIN IMMEDIATE` transaction on the writer, which no other gateway
/// shares: what a statement read stays true until the commit, so the checks can be plain
/// reads before the writes.
extension SQLiteStore {
    package func createJob(_ job: NewJob, maxActive: Int) async throws(StoreError) -> JobCreation {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> JobCreation in
                let active =
                    try connection.queryFirst(
                        "SELECT count(*) FROM jobs WHERE caller_key = ? AND status IN \(JobsTable.active)",
                        [.text(job.callerKey)]
                    ) { $0.int(0) } ?? 0
                guard active < maxActive else { return .tooManyActive(active) }
                try connection.execute(
                    """
                    INSERT INTO jobs (id, owner_id, caller_key, request_id, task, tone, format, input_length, status,
                        done, total, input_tokens, output_tokens, created_at, updated_at, plan, trace_parent)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', 0, ?, 0, 0, ?, ?, ?, ?)
                    """,
                    [
                        .text(job.id), .text(job.ownerID), .text(job.callerKey), .text(job.requestID), .text(job.task),
                        .text(job.tone),
                        .text(job.format), .integer(job.inputLength), .integer(job.total),
                        .integer(job.createdAtMilliseconds),
                        .integer(job.createdAtMilliseconds), .text(job.plan), .text(job.traceParent),
                    ]
                )
                try Self.insert(job.items, jobID: job.id, level: 0, into: connection)
                return .created
            }
        }
    }

    package func job(id: String) async throws(StoreError) -> JobRecord? {
        try await read { connection throws(StoreError) in try Self.job(id: id, on: connection) }
    }

    package func cancelJob(id: String, nowMilliseconds: Int64) async throws(StoreError) -> JobRecord? {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> JobRecord? in
                _ = try Self.end(jobID: id, .cancelled, nowMilliseconds: nowMilliseconds, on: connection)
                return try Self.job(id: id, on: connection)
            }
        }
    }

    package func claimItems(_ claim: JobClaim) async throws(StoreError) -> [ClaimedJobItem] {
        guard claim.limit > 0, claim.perJob > 0 else { return [] }
        // Idle, every poll finds nothing: a reader says so without taking the writer's lock,
        // which the ledger's batches wait on.
        let anything = try await read { connection throws(StoreError) in
            !(try Self.claimableJobs(claim, limit: 1, on: connection)).isEmpty
        }
        guard anything else { return [] }
        return try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> [ClaimedJobItem] in
                var claimed: [ClaimedJobItem] = []
                for job in try Self.claimableJobs(claim, limit: claim.limit, on: connection)
                where claimed.count < claim.limit {
                    claimed += try Self.claim(
                        min(job.room, claim.limit - claimed.count), of: job.id, claim, on: connection)
                }
                return claimed
            }
        }
    }

    /// Active jobs, oldest first, with an item free to claim and fewer than `perJob` leased,
    /// each with the room it has left.
    private static func claimableJobs(_ claim: JobClaim, limit: Int, on connection: SQLiteConnection) throws(StoreError)
        -> [(id: String, room: Int)]
    {
        var jobs: [(id: String, room: Int)] = []
        try connection.query(
            """
            SELECT id, leased FROM (
                SELECT j.seq, j.id, (SELECT count(*) FROM job_items AS l
                    WHERE l.job_id = j.id AND l.answer IS NULL AND l.lease_until > ?1) AS leased
                FROM jobs AS j
                WHERE j.status IN \(JobsTable.active) AND EXISTS (SELECT 1 FROM job_items AS i
                    WHERE i.job_id = j.id AND i.answer IS NULL AND (i.lease_until IS NULL OR i.lease_until <= ?1))
            ) WHERE leased < ?2 ORDER BY seq LIMIT ?3
            """,
            [.integer(claim.nowMilliseconds), .integer(claim.perJob), .integer(limit)]
        ) { jobs.append((id: $0.text(0), room: claim.perJob - $0.int(1))) }
        return jobs
    }

    package func renewLeases(worker: String, items: [JobItemKey], until: Int64, nowMilliseconds: Int64)
        async throws(StoreError) -> [JobItemKey]
    {
        let keys = JobsTable.distinct(items)
        guard !keys.isEmpty else { return [] }
        return try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> [JobItemKey] in
                var held: [JobItemKey] = []
                for key in keys {
                    let renewed = try connection.execute(
                        """
                        UPDATE job_items SET lease_until = ?
                        WHERE job_id = ? AND level = ? AND idx = ? AND lease_owner = ? AND answer IS NULL
                            AND EXISTS (
                                SELECT 1 FROM jobs
                                WHERE jobs.id = job_items.job_id AND jobs.status IN \(JobsTable.active)
                            )
                        """,
                        [.integer(until), .text(key.jobID), .integer(key.level), .integer(key.index), .text(worker)]
                    )
                    if renewed > 0 { held.append(key) }
                }
                return held
            }
        }
    }

    package func completeItem(_ completion: JobItemCompletion) async throws(StoreError) -> Bool {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> Bool in
                let key = completion.key
                let stored = try connection.execute(
                    """
                    UPDATE job_items SET answer = ?, data = ?, input_tokens = ?, output_tokens = ?, cost_micros = ?,
                        lease_owner = NULL, lease_until = NULL
                    WHERE job_id = ? AND level = ? AND idx = ? AND lease_owner = ? AND answer IS NULL
                        AND EXISTS (
                            SELECT 1 FROM jobs WHERE jobs.id = job_items.job_id AND jobs.status IN \(JobsTable.active)
                        )
                    """,
                    [
                        .text(completion.answer), .text(completion.data), .integer(completion.inputTokens),
                        .integer(completion.outputTokens), .integer(completion.costMicros),
                        .text(key.jobID), .integer(key.level), .integer(key.index), .text(completion.worker),
                    ]
                )
                guard stored > 0 else { return false }
                try connection.execute(
                    """
                    UPDATE jobs SET done = done + 1, input_tokens = input_tokens + ?,
                        output_tokens = output_tokens + ?, cost_micros = cost_micros + ?, updated_at = ?
                    WHERE id = ?
                    """,
                    [
                        .integer(completion.inputTokens), .integer(completion.outputTokens),
                        .integer(completion.costMicros), .integer(completion.nowMilliseconds), .text(key.jobID),
                    ]
                )
                // A guest's job counts on the guests' line.
                try connection.execute(
                    """
                    INSERT INTO usage_daily (user_id, day, requests, input_tokens, output_tokens, cost_micros)
                    VALUES (?, ?, 0, ?, ?, ?)
                    ON CONFLICT (user_id, day) DO UPDATE SET
                        input_tokens = input_tokens + excluded.input_tokens,
                        output_tokens = output_tokens + excluded.output_tokens,
                        cost_micros = cost_micros + excluded.cost_micros
                    """,
                    [
                        .text(completion.ownerID ?? DailyUsage.guestUserID), .integer(completion.day),
                        .integer(completion.inputTokens),
                        .integer(completion.outputTokens), .integer(completion.costMicros ?? 0),
                    ]
                )
                return true
            }
        }
    }

    package func releaseItem(_ item: JobItemKey, worker: String) async throws(StoreError) {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> Void in
                try connection.execute(
                    """
                    UPDATE job_items SET lease_owner = NULL, lease_until = NULL
                    WHERE job_id = ? AND level = ? AND idx = ? AND lease_owner = ? AND answer IS NULL
                    """,
                    [.text(item.jobID), .integer(item.level), .integer(item.index), .text(worker)]
                )
            }
        }
    }

    package func levelAnswers(jobID: String, level: Int) async throws(StoreError) -> JobLevelAnswers {
        try await read { connection throws(StoreError) in
            var count = 0
            var answers: [JobItemAnswer] = []
            try connection.query(
                """
                SELECT idx, answer, data, source_start, source_end, kind FROM job_items
                WHERE job_id = ? AND level = ? ORDER BY idx
                """,
                [.text(jobID), .integer(level)]
            ) {
                count += 1
                guard let answer = $0.optionalText(1) else { return }
                answers.append(
                    JobItemAnswer(
                        index: $0.int(0), kind: JobsTable.kind($0.text(5)), answer: answer, data: $0.optionalText(2),
                        sourceStart: $0.int(3), sourceEnd: $0.int(4)))
            }
            return JobLevelAnswers(count: count, answers: answers)
        }
    }

    package func addLevel(_ level: NewJobLevel) async throws(StoreError) -> Bool {
        guard level.level > 0, !level.items.isEmpty else { return false }
        return try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> Bool in
                let ready =
                    try connection.queryFirst(
                        """
                        SELECT 1 FROM jobs WHERE id = ?1 AND status IN \(JobsTable.active)
                            AND EXISTS (SELECT 1 FROM job_items WHERE job_id = ?1 AND level = ?2 - 1)
                            AND NOT EXISTS (
                                SELECT 1 FROM job_items WHERE job_id = ?1 AND level = ?2 - 1 AND answer IS NULL
                            )
                            AND NOT EXISTS (SELECT 1 FROM job_items WHERE job_id = ?1 AND level = ?2)
                        """,
                        [.text(level.jobID), .integer(level.level)]
                    ) { _ in true } ?? false
                guard ready else { return false }
                try Self.insert(level.items, jobID: level.jobID, level: level.level, into: connection)
                try connection.execute(
                    "UPDATE jobs SET total = total + ?, updated_at = ? WHERE id = ?",
                    [.integer(level.addedCalls), .integer(level.nowMilliseconds), .text(level.jobID)]
                )
                return true
            }
        }
    }

    package func finishJob(_ finish: JobFinish) async throws(StoreError) -> Bool {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> Bool in
                try Self.end(
                    jobID: finish.jobID, JobsTable.Ending(finish.outcome), nowMilliseconds: finish.nowMilliseconds,
                    on: connection)
            }
        }
    }

    package func stalledJobs(limit: Int) async throws(StoreError) -> [JobRecord] {
        guard limit > 0 else { return [] }
        return try await read { connection throws(StoreError) in
            var jobs: [JobRecord] = []
            try connection.query(
                """
                SELECT \(JobsTable.record(of: "j")) FROM jobs AS j
                WHERE j.status = 'running'
                    AND NOT EXISTS (SELECT 1 FROM job_items AS i WHERE i.job_id = j.id AND i.answer IS NULL)
                ORDER BY j.seq LIMIT ?
                """,
                [.integer(limit)]
            ) { jobs.append(JobsTable.record(from: $0)) }
            return jobs
        }
    }

    package func purgeJobs(endedBeforeMilliseconds: Int64) async throws(StoreError) -> Int {
        try await onPool { () throws(StoreError) -> Int in
            try self.deleteInBatches(
                """
                DELETE FROM jobs
                WHERE seq IN (SELECT seq FROM jobs WHERE ended_at < ? LIMIT \(Self.jobDeletionBatch))
                """,
                [.integer(endedBeforeMilliseconds)],
                batch: Self.jobDeletionBatch
            )
        }
    }

    package func jobStatistics() async throws(StoreError) -> JobStatistics {
        try await read { connection throws(StoreError) in
            var jobs = Dictionary(uniqueKeysWithValues: JobStatus.allCases.map { ($0, 0) })
            try connection.query("SELECT status, count(*) FROM jobs GROUP BY status") {
                jobs[JobsTable.status($0.text(0))] = $0.int(1)
            }
            let pending =
                try connection.queryFirst(
                    """
                    SELECT count(*) FROM job_items AS i JOIN jobs AS j ON j.id = i.job_id
                    WHERE i.answer IS NULL AND j.status IN \(JobsTable.active)
                    """
                ) { $0.int(0) } ?? 0
            return JobStatistics(jobs: jobs, pendingItems: pending)
        }
    }

    /// How many jobs one deleting transaction removes at most: each takes its items along.
    static let jobDeletionBatch = 100

    private static func job(id: String, on connection: SQLiteConnection) throws(StoreError) -> JobRecord? {
        try connection.queryFirst("SELECT \(JobsTable.record()) FROM jobs WHERE id = ?", [.text(id)]) {
            JobsTable.record(from: $0)
        }
    }

    private static func insert(_ items: [NewJobItem], jobID: String, level: Int, into connection: SQLiteConnection)
        throws(StoreError)
    {
        for (index, item) in items.enumerated() {
            try connection.execute(
                """
                INSERT INTO job_items (job_id, level, idx, kind, input, source_start, source_end)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(jobID), .integer(level), .integer(index), .text(item.kind.rawValue), .text(item.input),
                    .integer(item.sourceStart),
                    .integer(item.sourceEnd),
                ]
            )
        }
    }

    /// Leases up to `count` free items of `jobID` in (level, index) order, and starts the job.
    private static func claim(_ count: Int, of jobID: String, _ claim: JobClaim, on connection: SQLiteConnection)
        throws(StoreError) -> [ClaimedJobItem]
    {
        // A negative LIMIT is none at all to SQLite.
        guard count > 0 else { return [] }
        var items: [(key: JobItemKey, kind: JobItemKind, input: String, attempts: Int)] = []
        try connection.query(
            """
            UPDATE job_items SET lease_owner = ?1, lease_until = ?2, attempts = attempts + 1
            WHERE job_id = ?3 AND (level, idx) IN (SELECT level, idx FROM job_items
                WHERE job_id = ?3 AND answer IS NULL AND (lease_until IS NULL OR lease_until <= ?4)
                ORDER BY level, idx LIMIT ?5)
            RETURNING level, idx, kind, input, attempts
            """,
            [
                .text(claim.worker), .integer(claim.leaseUntil), .text(jobID), .integer(claim.nowMilliseconds),
                .integer(count),
            ]
        ) {
            items.append(
                (
                    JobItemKey(jobID: jobID, level: $0.int(0), index: $0.int(1)), JobsTable.kind($0.text(2)),
                    $0.text(3), $0.int(4)
                ))
        }
        guard !items.isEmpty else { return [] }
        try connection.execute(
            "UPDATE jobs SET status = 'running', updated_at = ? WHERE id = ? AND status = 'queued'",
            [.integer(claim.nowMilliseconds), .text(jobID)]
        )
        guard let job = try Self.job(id: jobID, on: connection) else { return [] }
        var levelCounts: [Int: Int] = [:]
        var claimed: [ClaimedJobItem] = []
        // RETURNING comes in no promised order.
        for item in items.sorted(by: { ($0.key.level, $0.key.index) < ($1.key.level, $1.key.index) }) {
            let level = item.key.level
            if levelCounts[level] == nil {
                levelCounts[level] =
                    try connection.queryFirst(
                        "SELECT count(*) FROM job_items WHERE job_id = ? AND level = ?",
                        [.text(jobID), .integer(level)]
                    ) { $0.int(0) } ?? 0
            }
            claimed.append(
                ClaimedJobItem(
                    key: item.key, kind: item.kind, input: item.input, levelCount: levelCounts[level] ?? 0,
                    attempts: item.attempts, job: job)
            )
        }
        return claimed
    }

    /// Ends a queued or running job as `ending` says, clearing its items' input and leases;
    /// false when it had ended already.
    private static func end(
        jobID: String, _ ending: JobsTable.Ending, nowMilliseconds: Int64, on connection: SQLiteConnection
    ) throws(StoreError) -> Bool {
        let ended = try connection.execute(
            """
            UPDATE jobs SET status = ?, result = ?, data = ?, error_code = ?, error_message = ?,
                ended_at = ?, updated_at = ?
            WHERE id = ? AND status IN \(JobsTable.active)
            """,
            [
                .text(ending.status.rawValue), .text(ending.result), .text(ending.data), .text(ending.errorCode),
                .text(ending.errorMessage),
                .integer(nowMilliseconds), .integer(nowMilliseconds), .text(jobID),
            ]
        )
        guard ended > 0 else { return false }
        try connection.execute(
            "UPDATE job_items SET input = '', lease_owner = NULL, lease_until = NULL WHERE job_id = ?", [.text(jobID)])
        return true
    }
}
