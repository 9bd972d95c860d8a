import Postgres

/// Each operation is one statement, or a short list sent as one transaction.
///
/// Several gateways write at once, at Read Committed, where each statement reads a snapshot
/// taken when it starts. A check that must see what a concurrent writer just committed (the
/// cap on jobs in flight, a level added twice, the leases of a job another claim just took
/// from) therefore runs in a statement after the one that took the lock it waited for.
/// Lock order is the job row first, then its items, everywhere, so no two of these
/// operations wait on each other in a circle.
extension PostgresStore {
    package func createJob(_ job: NewJob, maxActive: Int) async throws(StoreError) -> JobCreation {
        let results = try await transaction([
            // Two submissions of one caller take turns; other callers' do not wait.
            PostgresQuery(
                "SELECT pg_advisory_xact_lock(\(Self.jobCreationLock), hashtext($1))", [.text(job.callerKey)]),
            PostgresQuery(
                """
                WITH active AS (
                    SELECT count(*) AS n FROM jobs WHERE caller_key = $3::text AND status IN \(JobsTable.active)
                ),
                created AS (
                    INSERT INTO jobs (id, owner_id, caller_key, request_id, task, tone, format, input_length, status,
                        done, total, input_tokens, output_tokens, created_at, updated_at, plan, trace_parent)
                    SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8, 'queued',
                        0, $9, 0, 0, $10, $10, $16::text, $17::text
                    FROM active WHERE active.n < $11
                    RETURNING id
                ),
                items AS (\(Self.insertItems(from: "created", level: "0", arrays: 12)))
                SELECT n FROM active
                """,
                [
                    .text(job.id), job.ownerID.postgresValue, .text(job.callerKey), .text(job.requestID),
                    .text(job.task), job.tone.postgresValue,
                    .text(job.format), .int(job.inputLength), .int(job.total), .int(Int(job.createdAtMilliseconds)),
                    .int(maxActive),
                ] + Self.itemArrays(job.items) + [job.plan.postgresValue, job.traceParent.postgresValue]
            ),
        ])
        let active = results.last?.rows.first?.int(0) ?? 0
        return active < maxActive ? .created : .tooManyActive(active)
    }

    package func job(id: String) async throws(StoreError) -> JobRecord? {
        try await query("SELECT \(JobsTable.record()) FROM jobs WHERE id = $1", [.text(id)]).rows.first.map {
            JobsTable.record(from: $0)
        }
    }

    package func cancelJob(id: String, nowMilliseconds: Int64) async throws(StoreError) -> JobRecord? {
        let results = try await transaction([
            Self.end(jobID: id, .cancelled, nowMilliseconds: nowMilliseconds),
            PostgresQuery("SELECT \(JobsTable.record()) FROM jobs WHERE id = $1", [.text(id)]),
        ])
        return results.last?.rows.first.map { JobsTable.record(from: $0) }
    }

    /// Two statements. The first locks, `SKIP LOCKED`, the oldest jobs with a free item and
    /// room under `perJob`, and marks them with this claim's id. The second, whose snapshot
    /// is taken once those locks are held (so it sees every lease a claim before committed),
    /// counts each job's leases again, leases its free items in (level, index) order within
    /// the room and the limit, starts the jobs it took from and takes the marks off. The item
    /// update checks again that each item is free, against its newest version.
    package func claimItems(_ claim: JobClaim) async throws(StoreError) -> [ClaimedJobItem] {
        guard claim.limit > 0, claim.perJob > 0 else { return [] }
        let claimID = Self.newBatchID()
        let isFree = "i.answer IS NULL AND (i.lease_until IS NULL OR i.lease_until <= $2)"
        let leased =
            "(SELECT count(*) FROM job_items AS l WHERE l.job_id = j.id AND l.answer IS NULL AND l.lease_until > $2)"
        let results = try await transaction([
            PostgresQuery(
                """
                UPDATE jobs SET claim_id = $1 WHERE id IN (
                    SELECT j.id FROM jobs AS j
                    WHERE j.status IN \(JobsTable.active)
                        AND EXISTS (SELECT 1 FROM job_items AS i WHERE i.job_id = j.id AND \(isFree))
                        AND \(leased) < $3
                    ORDER BY j.seq LIMIT $4
                    FOR UPDATE SKIP LOCKED
                )
                """,
                [.text(claimID), .int(Int(claim.nowMilliseconds)), .int(claim.perJob), .int(claim.limit)]
            ),
            PostgresQuery(
                """
                WITH held AS (
                    SELECT j.id, j.seq, $3 - \(leased) AS room FROM jobs AS j WHERE j.claim_id = $1
                ),
                free AS (
                    SELECT i.job_id, i.level, i.idx, h.seq, h.room,
                        row_number() OVER (PARTITION BY i.job_id ORDER BY i.level, i.idx) AS rank
                    FROM held AS h JOIN job_items AS i ON i.job_id = h.id
                    WHERE \(isFree)
                ),
                chosen AS (
                    SELECT job_id, level, idx FROM free WHERE rank <= room ORDER BY seq, level, idx LIMIT $4
                ),
                claimed AS (
                    UPDATE job_items AS i SET lease_owner = $5, lease_until = $6, attempts = i.attempts + 1
                    FROM chosen AS c
                    WHERE i.job_id = c.job_id AND i.level = c.level AND i.idx = c.idx AND \(isFree)
                    RETURNING i.job_id, i.level, i.idx, i.kind, i.input, i.attempts
                ),
                released AS (
                    UPDATE jobs AS j SET claim_id = NULL,
                        status = CASE WHEN j.status = 'queued' AND j.id IN (SELECT job_id FROM claimed)
                            THEN 'running' ELSE j.status END,
                        updated_at = CASE WHEN j.status = 'queued' AND j.id IN (SELECT job_id FROM claimed)
                            THEN $2 ELSE j.updated_at END
                    WHERE j.claim_id = $1
                    RETURNING j.seq, \(JobsTable.record(of: "j"))
                )
                SELECT c.level, c.idx, c.kind, c.input, c.attempts,
                    (SELECT count(*) FROM job_items AS n WHERE n.job_id = c.job_id AND n.level = c.level),
                    \(JobsTable.record(of: "r"))
                FROM claimed AS c JOIN released AS r ON r.id = c.job_id
                ORDER BY r.seq, c.level, c.idx
                """,
                [
                    .text(claimID), .int(Int(claim.nowMilliseconds)), .int(claim.perJob), .int(claim.limit),
                    .text(claim.worker),
                    .int(Int(claim.leaseUntil)),
                ]
            ),
        ])
        return (results.last?.rows ?? []).map { row in
            let job = JobsTable.record(from: row, at: 6)
            return ClaimedJobItem(
                key: JobItemKey(jobID: job.id, level: row.int(0) ?? 0, index: row.int(1) ?? 0),
                kind: JobsTable.kind(row.string(2) ?? ""),
                input: row.string(3) ?? "", levelCount: row.int(5) ?? 0, attempts: row.int(4) ?? 0, job: job
            )
        }
    }

    package func renewLeases(worker: String, items: [JobItemKey], until: Int64, nowMilliseconds: Int64)
        async throws(StoreError) -> [JobItemKey]
    {
        let keys = JobsTable.distinct(items)
        guard !keys.isEmpty else { return [] }
        let result = try await query(
            """
            UPDATE job_items AS i SET lease_until = $5
            FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS k (job_id, level, idx), jobs AS j
            WHERE i.job_id = k.job_id AND i.level = k.level AND i.idx = k.idx
                AND i.lease_owner = $1 AND i.answer IS NULL
                AND j.id = i.job_id AND j.status IN \(JobsTable.active)
            RETURNING i.job_id, i.level, i.idx
            """,
            [
                .text(worker), JobsTable.textArray(keys.map(\.jobID)), JobsTable.integerArray(keys.map(\.level)),
                JobsTable.integerArray(keys.map(\.index)), .int(Int(until)),
            ]
        )
        let held = Set(
            result.rows.map { JobItemKey(jobID: $0.string(0) ?? "", level: $0.int(1) ?? 0, index: $0.int(2) ?? 0) })
        return keys.filter(held.contains)
    }

    /// One statement: the job row is locked first (and its status checked on its newest
    /// version), then the item is answered only if its worker still holds it, and only then
    /// are the job's progress and the owner's day counted.
    package func completeItem(_ completion: JobItemCompletion) async throws(StoreError) -> Bool {
        let key = completion.key
        let result = try await query(
            """
            WITH job AS (
                SELECT id FROM jobs WHERE id = $1 AND status IN \(JobsTable.active) FOR UPDATE
            ),
            item AS (
                UPDATE job_items AS i SET answer = $5, data = $6, input_tokens = $7, output_tokens = $8,
                    cost_micros = $12, lease_owner = NULL, lease_until = NULL
                FROM job
                WHERE i.job_id = job.id AND i.level = $2 AND i.idx = $3 AND i.lease_owner = $4 AND i.answer IS NULL
                RETURNING i.job_id
            ),
            progress AS (
                UPDATE jobs SET done = jobs.done + 1, input_tokens = jobs.input_tokens + $7,
                    output_tokens = jobs.output_tokens + $8, cost_micros = jobs.cost_micros + $12, updated_at = $9
                FROM item WHERE jobs.id = item.job_id
            ),
            usage AS (
                INSERT INTO usage_daily (user_id, day, requests, input_tokens, output_tokens, cost_micros)
                SELECT $10::text, $11, 0, $7, $8, coalesce($12::bigint, 0) FROM item
                ON CONFLICT (user_id, day) DO UPDATE SET
                    input_tokens = usage_daily.input_tokens + excluded.input_tokens,
                    output_tokens = usage_daily.output_tokens + excluded.output_tokens,
                    cost_micros = usage_daily.cost_micros + excluded.cost_micros
            )
            SELECT count(*) FROM item
            """,
            [
                .text(key.jobID), .int(key.level), .int(key.index), .text(completion.worker), .text(completion.answer),
                completion.data.postgresValue,
                .int(completion.inputTokens), .int(completion.outputTokens), .int(Int(completion.nowMilliseconds)),
                // A guest's job counts on the guests' line.
                .text(completion.ownerID ?? DailyUsage.guestUserID),
                .int(Int(completion.day)),
                completion.costMicros.map { PostgresValue.int(Int($0)) } ?? .null,
            ]
        )
        return (result.rows.first?.int(0) ?? 0) > 0
    }

    package func releaseItem(_ item: JobItemKey, worker: String) async throws(StoreError) {
        try await query(
            """
            UPDATE job_items SET lease_owner = NULL, lease_until = NULL
            WHERE job_id = $1 AND level = $2 AND idx = $3 AND lease_owner = $4 AND answer IS NULL
            """,
            [.text(item.jobID), .int(item.level), .int(item.index), .text(worker)]
        )
    }

    package func levelAnswers(jobID: String, level: Int) async throws(StoreError) -> JobLevelAnswers {
        let rows = try await query(
            """
            SELECT idx, answer, data, source_start, source_end, kind FROM job_items
            WHERE job_id = $1 AND level = $2 ORDER BY idx
            """,
            [.text(jobID), .int(level)]
        ).rows
        let answers = rows.compactMap { row in
            row.string(1).map {
                JobItemAnswer(
                    index: row.int(0) ?? 0, kind: JobsTable.kind(row.string(5) ?? ""), answer: $0, data: row.string(2),
                    sourceStart: row.int(3) ?? 0, sourceEnd: row.int(4) ?? 0)
            }
        }
        return JobLevelAnswers(count: rows.count, answers: answers)
    }

    /// The job row is locked by a statement of its own, so the checks, in the next one, see a
    /// level another worker added while this one waited.
    package func addLevel(_ level: NewJobLevel) async throws(StoreError) -> Bool {
        guard level.level > 0, !level.items.isEmpty else { return false }
        let results = try await transaction([
            PostgresQuery("SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE", [.text(level.jobID)]),
            PostgresQuery(
                """
                WITH ready AS (
                    SELECT id FROM jobs WHERE id = $1 AND status IN \(JobsTable.active)
                        AND EXISTS (SELECT 1 FROM job_items WHERE job_id = $1 AND level = $2 - 1)
                        AND NOT EXISTS (SELECT 1 FROM job_items WHERE job_id = $1 AND level = $2 - 1 AND answer IS NULL)
                        AND NOT EXISTS (SELECT 1 FROM job_items WHERE job_id = $1 AND level = $2)
                ),
                items AS (\(Self.insertItems(from: "ready", level: "$2", arrays: 5))),
                grown AS (
                    UPDATE jobs SET total = jobs.total + $3, updated_at = $4 FROM ready WHERE jobs.id = ready.id
                )
                SELECT count(*) FROM ready
                """,
                [.text(level.jobID), .int(level.level), .int(level.addedCalls), .int(Int(level.nowMilliseconds))]
                    + Self.itemArrays(level.items)
            ),
        ])
        return (results.last?.rows.first?.int(0) ?? 0) > 0
    }

    package func finishJob(_ finish: JobFinish) async throws(StoreError) -> Bool {
        let results = try await transaction([
            Self.end(jobID: finish.jobID, JobsTable.Ending(finish.outcome), nowMilliseconds: finish.nowMilliseconds)
        ])
        return (results.first?.rows.first?.int(0) ?? 0) > 0
    }

    package func stalledJobs(limit: Int) async throws(StoreError) -> [JobRecord] {
        guard limit > 0 else { return [] }
        return try await query(
            """
            SELECT \(JobsTable.record(of: "j")) FROM jobs AS j
            WHERE j.status = 'running'
                AND NOT EXISTS (SELECT 1 FROM job_items AS i WHERE i.job_id = j.id AND i.answer IS NULL)
            ORDER BY j.seq LIMIT $1
            """,
            [.int(limit)]
        ).rows.map { JobsTable.record(from: $0) }
    }

    /// Items go with their jobs (`ON DELETE CASCADE`).
    package func purgeJobs(endedBeforeMilliseconds: Int64) async throws(StoreError) -> Int {
        try await deleteInBatches(
            "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE ended_at < $1 LIMIT \(Self.jobDeletionBatch))",
            [.int(Int(endedBeforeMilliseconds))],
            batch: Self.jobDeletionBatch
        )
    }

    package func jobStatistics() async throws(StoreError) -> JobStatistics {
        let results = try await transaction([
            PostgresQuery("SELECT status, count(*) FROM jobs GROUP BY status"),
            PostgresQuery(
                """
                SELECT count(*) FROM job_items AS i JOIN jobs AS j ON j.id = i.job_id
                WHERE i.answer IS NULL AND j.status IN \(JobsTable.active)
                """
            ),
        ])
        var jobs = Dictionary(uniqueKeysWithValues: JobStatus.allCases.map { ($0, 0) })
        for row in results.first?.rows ?? [] { jobs[JobsTable.status(row.string(0) ?? "")] = row.int(1) ?? 0 }
        return JobStatistics(jobs: jobs, pendingItems: results.last?.rows.first?.int(0) ?? 0)
    }

    /// How many jobs one deleting statement removes at most: each takes its items along.
    static let jobDeletionBatch = 100

    /// The first key of the advisory locks that make one caller's submissions take turns
    /// (a constant of ours: "TGjb"), apart from the migrations' single-key lock.
    static let jobCreationLock = 0x5447_6A62

    /// An `INSERT` of items, for a `WITH` clause: for each row of `source` (a job's `id`), at
    /// `level`, the items of four array parameters from `$arrays` on (``itemArrays(_:)``).
    private static func insertItems(from source: String, level: String, arrays first: Int) -> String {
        """
        INSERT INTO job_items (job_id, level, idx, kind, input, source_start, source_end)
            SELECT \(source).id, \(level), v.n - 1, v.kind, v.input, v.source_start, v.source_end
            FROM \(source),
                unnest($\(first)::text[], $\(first + 1)::text[], $\(first + 2)::bigint[], $\(first + 3)::bigint[])
                WITH ORDINALITY AS v (kind, input, source_start, source_end, n)
        """
    }

    /// The kinds, inputs and source ranges of `items`, as ``insertItems(from:level:arrays:)`` takes them.
    private static func itemArrays(_ items: [NewJobItem]) -> [PostgresValue] {
        [
            JobsTable.textArray(items.map(\.kind.rawValue)), JobsTable.textArray(items.map(\.input)),
            JobsTable.integerArray(items.map(\.sourceStart)), JobsTable.integerArray(items.map(\.sourceEnd)),
        ]
    }

    /// Ends a queued or running job as `ending` says and clears its items' input and leases;
    /// its one row counts the jobs it ended (0 or 1).
    private static func end(jobID: String, _ ending: JobsTable.Ending, nowMilliseconds: Int64) -> PostgresQuery {
        PostgresQuery(
            """
            WITH ended AS (
                UPDATE jobs SET status = $2, result = $3, data = $4, error_code = $5, error_message = $6,
                    ended_at = $7, updated_at = $7
                WHERE id = $1 AND status IN \(JobsTable.active)
                RETURNING id
            ),
            cleared AS (
                UPDATE job_items SET input = '', lease_owner = NULL, lease_until = NULL
                FROM ended WHERE job_items.job_id = ended.id
            )
            SELECT count(*) FROM ended
            """,
            [
                .text(jobID), .text(ending.status.rawValue), ending.result.postgresValue, ending.data.postgresValue,
                ending.errorCode.postgresValue,
                ending.errorMessage.postgresValue, .int(Int(nowMilliseconds)),
            ]
        )
    }
}
