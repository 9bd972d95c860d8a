import EventLoop
import Postgres
import Store

#if canImport(Glibc)
    import Glibc
#endif

/// Fills a store (a SQLite file, or the Postgres database of a URL) with `--rows` ledger rows
/// spread evenly over the last `--days` days, made by the database itself (a recursive CTE on
/// SQLite, generate_series on Postgres) a million rows a transaction, then builds the roll-ups
/// with the back-fill migration 6 uses. The store is opened first, so the schema is the
/// binary's. 50 callers and a twentieth guests, 4 tasks, 2 models, 3 % failures of four codes,
/// 5 % cache hits, upstream times of 120 ms to 1.6 s with a tail of 8 s.
func seed(_ arguments: [String]) async {
    var rows = 10_000_000
    var days = 30
    var sqlitePath: String?
    var postgresURL: String?
    var rest = arguments[...]
    while let flag = rest.popFirst() {
        guard let value = rest.popFirst() else { fatalError("\(flag) needs a value") }
        switch flag {
        case "--rows": rows = Int(value) ?? rows
        case "--days": days = max(1, Int(value) ?? days)
        case "--sqlite": sqlitePath = value
        case "--postgres": postgresURL = value
        default: fatalError("unknown option \(flag)")
        }
    }
    let end = Int64(time(nil)) * 1000
    let plan = SeedPlan(rows: rows, start: end - Int64(days) * 86_400_000, step: Int64(days) * 86_400_000 / Int64(rows))
    do {
        if let sqlitePath {
            try await seedSQLite(path: sqlitePath, plan)
        } else if let postgresURL {
            try await seedPostgres(url: postgresURL, plan)
        } else {
            fatalError("seed needs --sqlite PATH or --postgres URL")
        }
    } catch {
        fatalError("\(error)")
    }
}

struct SeedPlan {
    var rows: Int
    var start: Int64
    var step: Int64
    static let chunk = 1_000_000

    /// usage_daily made again from the rows (the quotas' and the console's tokens today).
    static let usage = [
        "DELETE FROM usage_daily",
        """
        INSERT INTO usage_daily (user_id, day, requests, input_tokens, output_tokens)
        SELECT coalesce(user_id, ''), created_at / 86400000, count(*),
            coalesce(sum(CASE WHEN cache_hit THEN 0 ELSE input_tokens END), 0),
            coalesce(sum(CASE WHEN cache_hit THEN 0 ELSE output_tokens END), 0)
        FROM requests GROUP BY 1, 2
        """,
    ]

    var chunks: [(Int, Int)] {
        stride(from: 0, to: rows, by: Self.chunk).map { ($0, min(rows, $0 + Self.chunk) - 1) }
    }

    /// The `INSERT … SELECT` of rows `first...last` from `source`, a relation of one column `i`.
    func insert(from source: String, postgres: Bool) -> String {
        let requestID = postgres ? "'seed-' || lpad(i::text, 10, '0')" : "printf('seed-%010d', i)"
        let cacheHit = postgres ? "e BETWEEN 3 AND 7" : "(e BETWEEN 3 AND 7)"
        let real = postgres ? "::double precision" : ""
        // h and g: cheap integer hashes of i, the same on both databases.
        return """
            INSERT INTO requests (request_id, user_id, task, tone, route, model, input_length, input_tokens,
                output_tokens, status, code, outcome, cache_hit, duration_ms, created_at, result, upstream, upstream_ms)
            SELECT \(requestID), CASE WHEN h % 20 = 0 THEN NULL ELSE 'caller-' || (h % 50) END,
                CASE (h / 50) % 4 WHEN 0 THEN 'summarize' WHEN 1 THEN 'rewrite' WHEN 2 THEN 'key-points'
                    ELSE 'titles' END,
                NULL, '/api/process', CASE (h / 200) % 2 WHEN 0 THEN 'model-a' ELSE 'model-b' END,
                200 + g % 3000, 50 + h % 900, 20 + g % 300, status,
                CASE status WHEN 502 THEN 'upstream_error' WHEN 504 THEN 'upstream_timeout'
                    WHEN 429 THEN 'rate_limited' WHEN 400 THEN 'invalid_request' END,
                CASE WHEN status >= 400 THEN 'error' WHEN \(cacheHit) THEN 'cache_hit' ELSE 'done' END,
                \(cacheHit), coalesce(upstream_ms, 0) + 0.3 + (h % 40) / 10.0, created_at, NULL,
                CASE WHEN upstream_ms IS NULL THEN NULL ELSE 'primary' END, upstream_ms
            FROM (
                SELECT i, h, g, e, created_at, status,
                    CASE WHEN status IN (400, 429) OR (status = 200 AND e BETWEEN 3 AND 7) THEN NULL
                        ELSE (120 + g % 1500 + CASE WHEN g % 50 = 0 THEN 8000 ELSE 0 END)\(real) END AS upstream_ms
                FROM (
                    SELECT i, h, g, (h / 400) % 100 AS e, \(start) + i * \(step) AS created_at,
                        CASE WHEN (h / 400) % 100 < 3 THEN
                            CASE (h / 40000) % 4 WHEN 0 THEN 502 WHEN 1 THEN 504 WHEN 2 THEN 429 ELSE 400 END
                        ELSE 200 END AS status
                    FROM (SELECT i, (i * 2654435761 + 7) % 4294967291 AS h, (i * 40503 + 12345) % 65521 AS g
                        FROM \(source)) AS hashed
                ) AS drawn
            ) AS seeded
            """
    }
}

private func seconds(since start: MonotonicInstant) -> String {
    String(Double(start.nanoseconds(until: .now()) / 1_000_000) / 1000) + " s"
}

private func seedSQLite(path: String, _ plan: SeedPlan) async throws {
    let pool = try BlockingPool(threadCount: 2, name: "bench-seed")
    let store = try await SQLiteStore.open(path: path, pool: pool)
    let started = MonotonicInstant.now()
    for (first, last) in plan.chunks {
        try await store.executeScript(
            """
            WITH RECURSIVE n(i) AS (SELECT \(first) UNION ALL SELECT i + 1 FROM n WHERE i < \(last))
            \(plan.insert(from: "n", postgres: false))
            """)
        // The writer never checkpoints its own commits: without this the log holds every row.
        _ = try await store.checkpoint()
        print("rows \(last + 1) of \(plan.rows): \(seconds(since: started))")
    }
    let inserted = MonotonicInstant.now()
    try await store.executeScript(SeedPlan.usage.joined(separator: ";\n"))
    try await store.rebuildRollups()
    _ = try await store.checkpoint()
    print("inserted \(plan.rows) rows in \(seconds(since: started)); usage and roll-ups in \(seconds(since: inserted))")
    await store.close()
    await pool.shutdown()
}

private func seedPostgres(url: String, _ plan: SeedPlan) async throws {
    var configuration = try PostgresConfiguration(url: url)
    // One chunk and the back-fill each run as one statement.
    configuration.queryTimeout = .seconds(3_600)
    let group = try EventLoopGroup(loopCount: 1, namePrefix: "bench-seed")
    let client = PostgresClient(configuration: configuration, group: group)
    try await client.start()
    let store = try await PostgresStore.open(client: client, startTimeout: .seconds(30))
    let started = MonotonicInstant.now()
    for (first, last) in plan.chunks {
        try await store.execute([
            plan.insert(from: "generate_series(\(first)::bigint, \(last)::bigint) AS n(i)", postgres: true)
        ])
        print("rows \(last + 1) of \(plan.rows): \(seconds(since: started))")
    }
    let inserted = MonotonicInstant.now()
    try await store.execute(SeedPlan.usage)
    try await store.rebuildRollups()
    try await store.execute([
        "ANALYZE requests", "ANALYZE usage_daily", "ANALYZE usage_rollup_slots", "ANALYZE usage_rollup_latency",
    ])
    print("inserted \(plan.rows) rows in \(seconds(since: started)); usage and roll-ups in \(seconds(since: inserted))")
    await client.stop(deadline: MonotonicInstant.now().advanced(by: .seconds(5)))
    await group.shutdownGracefully()
}
