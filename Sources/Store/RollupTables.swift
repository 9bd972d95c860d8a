/// The operator's roll-ups (``AdminStore``), shared by both backends: their tables, the
/// back-fill from `requests`, and a batch of ledger rows added up by key before it is written,
/// so that a batch costs one upsert per distinct key rather than one per row.
///
/// Two roll-ups, chosen for what a batch costs the writer: `usage_rollup_slots` per 15-minute
/// slot, task, model, status and code (with the latency histograms), and, per caller and UTC
/// day, the columns migration 6 adds to `usage_daily`, whose upsert the writer makes anyway.
/// A table keyed by day, caller, task, model, status and code was measured first: a batch
/// then has nearly as many keys as rows, and the writer committed 35 % fewer rows a second.
///
/// What a row adds: one request; a cache hit; its tokens unless it was a cache hit (whether it
/// charged a quota is `usage_daily`'s business, and the back-fill could not tell); its added
/// latency, max(0, duration - upstream), when its status is below 400; its upstream latency
/// when it made an upstream call. Absent task, model and code are kept as "", a guest as "".
enum RollupTables {
    enum Dialect {
        case sqlite, postgres

        /// The two-argument maximum: SQLite's scalar `max`, Postgres's `greatest`.
        var greatest: String { self == .sqlite ? "max" : "greatest" }
        var integer: String { self == .sqlite ? "INTEGER" : "bigint" }
        var text: String { self == .sqlite ? "TEXT" : "text" }
    }

    static let slotMilliseconds: Int64 = 900_000
    static let dayMilliseconds: Int64 = 86_400_000
    static let slotsPerDay = dayMilliseconds / slotMilliseconds

    static let addedColumns = (0..<LatencyHistogram.bounds.count).map { "a\($0)" }
    static let upstreamColumns = (0..<LatencyHistogram.bounds.count).map { "u\($0)" }
    static let histogramColumns = addedColumns + upstreamColumns

    static let slotKeyColumns = ["slot", "task", "model", "status", "code"]
    /// The slots' columns as migration 6 made them (its back-fill names them: a shipped
    /// migration never changes), and as the ledger writes them since migration 9.
    static let slotColumnsV6 = slotKeyColumns + ["requests", "cache_hits", "input_tokens", "output_tokens"]
    static let slotColumns = slotColumnsV6 + ["cost_micros"]
    /// The histograms have a table of their own, one row per slot: summed over a month of
    /// the slots' table (a row per task, model and code), their 32 columns took 160 of the
    /// totals' 200 ms on SQLite with 10 million requests behind them.
    static let latencyColumns = ["slot"] + histogramColumns

    // MARK: SQL

    /// The bucket of `expression` (milliseconds) as SQL, from ``LatencyHistogram/bounds``:
    /// the same rule as ``LatencyHistogram/bucket(ofMilliseconds:)``.
    static func bucketCase(_ expression: String) -> String {
        let bounds = LatencyHistogram.bounds.dropLast()
        let cases = bounds.enumerated().map { "WHEN \(expression) <= \($0.element) THEN \($0.offset)" }
        return "CASE " + cases.joined(separator: " ") + " ELSE \(bounds.count) END"
    }

    /// The slots' tables (their keys start with the slot, so a range is one scan of a primary
    /// key) and `usage_daily`'s new columns. A day from before them has no last use or plan.
    static func create(_ dialect: Dialect) -> [String] {
        let (integer, text) = (dialect.integer, dialect.text)
        let histogram = histogramColumns.map { "\($0) \(integer) NOT NULL DEFAULT 0" }.joined(separator: ", ")
        let suffix = dialect == .sqlite ? " STRICT, WITHOUT ROWID" : ""
        return [
            """
            CREATE TABLE usage_rollup_slots (
                slot \(integer) NOT NULL, task \(text) NOT NULL, model \(text) NOT NULL,
                status \(integer) NOT NULL, code \(text) NOT NULL,
                requests \(integer) NOT NULL, cache_hits \(integer) NOT NULL,
                input_tokens \(integer) NOT NULL, output_tokens \(integer) NOT NULL,
                PRIMARY KEY (\(slotKeyColumns.joined(separator: ", ")))
            )\(suffix)
            """,
            "CREATE TABLE usage_rollup_latency (slot \(integer) PRIMARY KEY, \(histogram))\(suffix)",
            "ALTER TABLE usage_daily ADD COLUMN cache_hits \(integer) NOT NULL DEFAULT 0",
            "ALTER TABLE usage_daily ADD COLUMN errors \(integer) NOT NULL DEFAULT 0",
            "ALTER TABLE usage_daily ADD COLUMN last_seen_ms \(integer)",
            "ALTER TABLE usage_daily ADD COLUMN plan \(text)",
        ]
    }

    /// Migration 9: what requests cost, beside their tokens, in `usage_daily` (what the caller's
    /// day charged, as its tokens), the slots and the jobs (a job's cost is null once one of its
    /// calls had no price), filled from the rows' own costs (migration 8 began keeping them).
    static func addCost(_ dialect: Dialect) -> [String] {
        let integer = dialect.integer
        return [
            "ALTER TABLE usage_daily ADD COLUMN cost_micros \(integer) NOT NULL DEFAULT 0",
            "ALTER TABLE usage_rollup_slots ADD COLUMN cost_micros \(integer) NOT NULL DEFAULT 0",
            "ALTER TABLE jobs ADD COLUMN cost_micros \(integer) DEFAULT 0",
            "ALTER TABLE job_items ADD COLUMN cost_micros \(integer)",
        ] + backfillCost
    }

    /// The cost of the days and the slots from the rows (after ``backfill(_:)``, which knows
    /// no cost). A job's row adds to its slot, not to its caller's day: its calls did.
    static let backfillCost: [String] = {
        let charged = "cost_micros IS NOT NULL AND NOT cache_hit"
        return [
            """
            UPDATE usage_daily SET cost_micros = r.c
            FROM (
                SELECT coalesce(user_id, '') AS user_id, created_at / \(dayMilliseconds) AS day, sum(cost_micros) AS c
                FROM requests WHERE \(charged) AND route <> '\(Spending.jobsRoute)'
                GROUP BY coalesce(user_id, ''), created_at / \(dayMilliseconds)
            ) AS r
            WHERE usage_daily.user_id = r.user_id AND usage_daily.day = r.day
            """,
            """
            UPDATE usage_rollup_slots SET cost_micros = r.c
            FROM (
                SELECT created_at / \(slotMilliseconds) AS slot, coalesce(task, '') AS task,
                    coalesce(model, '') AS model, status, coalesce(code, '') AS code, sum(cost_micros) AS c
                FROM requests WHERE \(charged)
                GROUP BY created_at / \(slotMilliseconds), coalesce(task, ''), coalesce(model, ''), status,
                    coalesce(code, '')
            ) AS r
            WHERE usage_rollup_slots.slot = r.slot AND usage_rollup_slots.task = r.task
                AND usage_rollup_slots.model = r.model AND usage_rollup_slots.status = r.status
                AND usage_rollup_slots.code = r.code
            """,
        ]
    }()

    /// The slots made from every row of `requests`, into an empty table, and `usage_daily`'s
    /// new columns filled from the same rows (migration 6, and the benchmark's seeding). Rows
    /// from before migration 6 have no upstream time (their added latency is their whole
    /// duration) and no plan; days whose rows history retention deleted keep no errors.
    static func backfill(_ dialect: Dialect) -> [String] {
        let greatest = dialect.greatest
        let source = """
            SELECT created_at / \(slotMilliseconds) AS slot,
                coalesce(task, '') AS task, coalesce(model, '') AS model,
                status, coalesce(code, '') AS code, cache_hit,
                CASE WHEN cache_hit THEN 0 ELSE \(greatest)(0, coalesce(input_tokens, 0)) END AS input_tokens,
                CASE WHEN cache_hit THEN 0 ELSE \(greatest)(0, coalesce(output_tokens, 0)) END AS output_tokens,
                CASE WHEN status < 400 THEN \(bucketCase("\(greatest)(0, duration_ms - coalesce(upstream_ms, 0))")) END
                    AS ab,
                CASE WHEN upstream_ms > 0 THEN \(bucketCase("upstream_ms")) END AS ub
            FROM requests
            """
        // The histograms in two steps: by slot and buckets first, so each row's buckets are
        // worked out once (a flattened subquery would repeat them in each of the 32 counts).
        let key = slotKeyColumns.joined(separator: ", ")
        let histogram =
            (0..<LatencyHistogram.bounds.count).map { "sum(CASE WHEN ab = \($0) THEN n ELSE 0 END)" }
            + (0..<LatencyHistogram.bounds.count).map { "sum(CASE WHEN ub = \($0) THEN n ELSE 0 END)" }
        let slots = """
            INSERT INTO usage_rollup_slots (\(slotColumnsV6.joined(separator: ", ")))
            SELECT \(key), count(*), count(*) FILTER (WHERE cache_hit), sum(input_tokens), sum(output_tokens)
            FROM (\(source)) AS r GROUP BY \(key)
            """
        let latency = """
            INSERT INTO usage_rollup_latency (\(latencyColumns.joined(separator: ", ")))
            SELECT slot, \(histogram.joined(separator: ", "))
            FROM (SELECT slot, ab, ub, count(*) AS n FROM (\(source)) AS r GROUP BY slot, ab, ub) AS b
            GROUP BY slot
            """
        let usage = """
            UPDATE usage_daily SET cache_hits = r.c, errors = r.e, last_seen_ms = r.seen
            FROM (
                SELECT coalesce(user_id, '') AS user_id, created_at / \(dayMilliseconds) AS day,
                    count(*) FILTER (WHERE cache_hit) AS c, count(*) FILTER (WHERE status >= 400) AS e,
                    max(created_at) AS seen
                FROM requests GROUP BY coalesce(user_id, ''), created_at / \(dayMilliseconds)
            ) AS r
            WHERE usage_daily.user_id = r.user_id AND usage_daily.day = r.day
            """
        return [slots, latency, usage]
    }

    /// The upsert of `rows` callers' days into `usage_daily`, ten values each: user, day,
    /// requests, input and output tokens and cost (those the quota and budgets count), cache
    /// hits, errors, the latest use, and the plan of the latest row that had one. Without
    /// roll-ups (the benchmark's comparison), the first six.
    static func upsertUsage(_ dialect: Dialect, rows: Int, rollups: Bool = true) -> String {
        let table = "usage_daily"
        let columns =
            ["user_id", "day", "requests", "input_tokens", "output_tokens", "cost_micros"]
            + (rollups ? ["cache_hits", "errors", "last_seen_ms", "plan"] : [])
        let summed =
            ["requests", "input_tokens", "output_tokens", "cost_micros"] + (rollups ? ["cache_hits", "errors"] : [])
        var sets = summed.map { "\($0) = \(table).\($0) + excluded.\($0)" }
        if rollups {
            // Both read the row as it was: every SET of one upsert sees the old values.
            sets.append(
                "plan = CASE WHEN excluded.plan IS NOT NULL AND excluded.last_seen_ms >= "
                    + "coalesce(\(table).last_seen_ms, 0) THEN excluded.plan "
                    + "ELSE coalesce(\(table).plan, excluded.plan) END"
            )
            sets.append("last_seen_ms = \(dialect.greatest)(coalesce(\(table).last_seen_ms, 0), excluded.last_seen_ms)")
        }
        return """
            INSERT INTO \(table) (\(columns.joined(separator: ", ")))
            VALUES \(placeholders(dialect, rows: rows, columns: columns.count))
            ON CONFLICT (user_id, day) DO UPDATE SET \(sets.joined(separator: ", "))
            """
    }

    static func upsertSlots(_ dialect: Dialect, rows: Int) -> String {
        let table = "usage_rollup_slots"
        let sums = ["requests", "cache_hits", "input_tokens", "output_tokens", "cost_micros"].map {
            "\($0) = \(table).\($0) + excluded.\($0)"
        }
        return """
            INSERT INTO \(table) (\(slotColumns.joined(separator: ", ")))
            VALUES \(placeholders(dialect, rows: rows, columns: slotColumns.count))
            ON CONFLICT (\(slotKeyColumns.joined(separator: ", "))) DO UPDATE SET \(sums.joined(separator: ", "))
            """
    }

    static func upsertLatency(_ dialect: Dialect, rows: Int) -> String {
        let table = "usage_rollup_latency"
        let sums = histogramColumns.map { "\($0) = \(table).\($0) + excluded.\($0)" }
        return """
            INSERT INTO \(table) (\(latencyColumns.joined(separator: ", ")))
            VALUES \(placeholders(dialect, rows: rows, columns: latencyColumns.count))
            ON CONFLICT (slot) DO UPDATE SET \(sums.joined(separator: ", "))
            """
    }

    private static func placeholders(_ dialect: Dialect, rows: Int, columns: Int) -> String {
        guard dialect == .sqlite else { return PostgresStore.placeholders(rows: rows, columns: columns) }
        let row = "(" + Array(repeating: "?", count: columns).joined(separator: ", ") + ")"
        return Array(repeating: row, count: rows).joined(separator: ", ")
    }

    /// What retention deletes before `day`: each table, its key, and its first key column's bound.
    static func retention(beforeDay day: Int64) -> [(table: String, key: String, bound: (column: String, value: Int64))]
    {
        [
            ("usage_rollup_slots", slotKeyColumns.joined(separator: ", "), ("slot", day * slotsPerDay)),
            ("usage_rollup_latency", "slot", ("slot", day * slotsPerDay)),
        ]
    }

    // MARK: A batch added up

    struct SlotKey: Hashable, Comparable {
        var slot: Int64
        var task: String
        var model: String
        var status: Int
        var code: String

        static func < (left: SlotKey, right: SlotKey) -> Bool {
            (left.slot, left.task, left.model, left.status, left.code)
                < (right.slot, right.task, right.model, right.status, right.code)
        }
    }

    /// What the rows of one key add.
    struct Counts {
        var requests = 0
        var cacheHits = 0
        var inputTokens = 0
        var outputTokens = 0
        var costMicros: Int64 = 0

        /// One row's part, from its fields read where the row lies: a whole row copied would
        /// retain every string in it.
        mutating func add(cacheHit: Bool, inputTokens input: Int?, outputTokens output: Int?, costMicros cost: Int64?) {
            requests += 1
            if cacheHit {
                cacheHits += 1
            } else {
                inputTokens &+= max(0, input ?? 0)
                outputTokens &+= max(0, output ?? 0)
                costMicros &+= max(0, cost ?? 0)
            }
        }
    }

    /// A slot's two histograms: the added latency of the rows answered below 400, and the
    /// upstream's time of every row that called one.
    struct Latency {
        var added = LatencyHistogram()
        var upstream = LatencyHistogram()

        mutating func add(status: Int, duration: Double, upstream time: Double?) {
            if status < 400 { added.add(milliseconds: max(0, duration - (time ?? 0))) }
            if let time, time > 0 { upstream.add(milliseconds: time) }
        }
    }

    /// The rows added up by slot, task, model, status and code, and their latency by slot.
    static func aggregate<Rows: RandomAccessCollection<LedgerRow>>(_ rows: Rows)
        -> (slots: [SlotKey: Counts], latency: [Int64: Latency])
    {
        var slots: [SlotKey: Counts] = [:]
        var latency: [Int64: Latency] = [:]
        for index in rows.indices {
            let slot = slot(ofMilliseconds: rows[index].createdAtMilliseconds)
            let key = SlotKey(
                slot: slot, task: rows[index].task ?? "", model: rows[index].model ?? "", status: rows[index].status,
                code: rows[index].code ?? "")
            slots[key, default: Counts()].add(
                cacheHit: rows[index].cacheHit, inputTokens: rows[index].inputTokens,
                outputTokens: rows[index].outputTokens, costMicros: rows[index].costMicros)
            latency[slot, default: Latency()].add(
                status: rows[index].status, duration: rows[index].durationMilliseconds,
                upstream: rows[index].upstreamMilliseconds)
        }
        return (slots, latency)
    }

    /// The 15-minute slot of an instant, rounded down.
    static func slot(ofMilliseconds milliseconds: Int64) -> Int64 {
        let (slot, rest) = milliseconds.quotientAndRemainder(dividingBy: slotMilliseconds)
        return rest < 0 ? slot - 1 : slot
    }
}
