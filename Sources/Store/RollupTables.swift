/// The operator's roll-ups (``AdminStore``), shared by both backends: their tables, the
/// back-fill from `requests`, and a batch of ledger rows added up by key before it is written,
/// so that a batch costs one upsert per distinct key rather than one per row.
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

    static let dailyKeyColumns = ["day", "user_id", "task", "model", "status", "code"]
    static let slotKeyColumns = ["slot", "task", "model", "status", "code"]
    static let dailyColumns =
        dailyKeyColumns + ["plan", "requests", "cache_hits", "input_tokens", "output_tokens", "last_seen_ms"]
        + histogramColumns
    static let slotColumns =
        slotKeyColumns + ["requests", "cache_hits", "input_tokens", "output_tokens"] + histogramColumns

    // MARK: SQL

    /// The bucket of `expression` (milliseconds) as SQL, from ``LatencyHistogram/bounds``:
    /// the same rule as ``LatencyHistogram/bucket(ofMilliseconds:)``.
    static func bucketCase(_ expression: String) -> String {
        let bounds = LatencyHistogram.bounds.dropLast()
        let cases = bounds.enumerated().map { "WHEN \(expression) <= \($0.element) THEN \($0.offset)" }
        return "CASE " + cases.joined(separator: " ") + " ELSE \(bounds.count) END"
    }

    /// The tables and the index the console's range scans use: each key starts with its slot
    /// or day, so a range of either is one scan of the primary key.
    static func create(_ dialect: Dialect) -> [String] {
        let (integer, text) = (dialect.integer, dialect.text)
        let histogram = histogramColumns.map { "\($0) \(integer) NOT NULL DEFAULT 0" }.joined(separator: ", ")
        let suffix = dialect == .sqlite ? " STRICT, WITHOUT ROWID" : ""
        return [
            """
            CREATE TABLE usage_rollup_daily (
                day \(integer) NOT NULL, user_id \(text) NOT NULL, task \(text) NOT NULL, model \(text) NOT NULL,
                status \(integer) NOT NULL, code \(text) NOT NULL, plan \(text),
                requests \(integer) NOT NULL, cache_hits \(integer) NOT NULL,
                input_tokens \(integer) NOT NULL, output_tokens \(integer) NOT NULL, last_seen_ms \(integer) NOT NULL,
                \(histogram),
                PRIMARY KEY (\(dailyKeyColumns.joined(separator: ", ")))
            )\(suffix)
            """,
            """
            CREATE TABLE usage_rollup_slots (
                slot \(integer) NOT NULL, task \(text) NOT NULL, model \(text) NOT NULL,
                status \(integer) NOT NULL, code \(text) NOT NULL,
                requests \(integer) NOT NULL, cache_hits \(integer) NOT NULL,
                input_tokens \(integer) NOT NULL, output_tokens \(integer) NOT NULL,
                \(histogram),
                PRIMARY KEY (\(slotKeyColumns.joined(separator: ", ")))
            )\(suffix)
            """,
        ]
    }

    /// Both roll-ups made from every row of `requests`, into empty tables (migration 6, and
    /// the benchmark's seeding). Rows from before migration 6 have no upstream time: their
    /// added latency is their whole duration.
    static func backfill(_ dialect: Dialect) -> [String] {
        let greatest = dialect.greatest
        let source = """
            SELECT created_at / \(dayMilliseconds) AS day, created_at / \(slotMilliseconds) AS slot,
                coalesce(user_id, '') AS user_id, coalesce(task, '') AS task, coalesce(model, '') AS model,
                status, coalesce(code, '') AS code, cache_hit, created_at,
                CASE WHEN cache_hit THEN 0 ELSE \(greatest)(0, coalesce(input_tokens, 0)) END AS input_tokens,
                CASE WHEN cache_hit THEN 0 ELSE \(greatest)(0, coalesce(output_tokens, 0)) END AS output_tokens,
                CASE WHEN status < 400 THEN \(bucketCase("\(greatest)(0, duration_ms - coalesce(upstream_ms, 0))")) END
                    AS ab,
                CASE WHEN upstream_ms > 0 THEN \(bucketCase("upstream_ms")) END AS ub
            FROM requests
            """
        // Two steps: by key and buckets first, so each row's buckets are worked out once (a
        // flattened subquery would repeat them in each of the 32 counts), then by key.
        func rollup(_ table: String, key: [String], columns: [String], lastSeen: Bool) -> String {
            let key = key.joined(separator: ", ")
            let histogram =
                (0..<LatencyHistogram.bounds.count).map { "sum(CASE WHEN ab = \($0) THEN n ELSE 0 END)" }
                + (0..<LatencyHistogram.bounds.count).map { "sum(CASE WHEN ub = \($0) THEN n ELSE 0 END)" }
            return """
                INSERT INTO \(table) (\(columns.joined(separator: ", ")))
                SELECT \(key), \(lastSeen ? "NULL, " : "")sum(n), sum(c), sum(i), sum(o),
                    \(lastSeen ? "max(seen), " : "")\(histogram.joined(separator: ", "))
                FROM (
                    SELECT \(key), ab, ub, count(*) AS n, count(*) FILTER (WHERE cache_hit) AS c,
                        sum(input_tokens) AS i, sum(output_tokens) AS o, max(created_at) AS seen
                    FROM (\(source)) AS r GROUP BY \(key), ab, ub
                ) AS b GROUP BY \(key)
                """
        }
        return [
            rollup("usage_rollup_daily", key: dailyKeyColumns, columns: dailyColumns, lastSeen: true),
            rollup("usage_rollup_slots", key: slotKeyColumns, columns: slotColumns, lastSeen: false),
        ]
    }

    /// The upsert of `rows` keys into the daily roll-up (placeholders `?` on SQLite).
    static func upsertDaily(_ dialect: Dialect, rows: Int) -> String {
        let table = "usage_rollup_daily"
        let plan = """
            plan = CASE WHEN excluded.plan IS NOT NULL AND excluded.last_seen_ms >= \(table).last_seen_ms
                THEN excluded.plan ELSE coalesce(\(table).plan, excluded.plan) END
            """
        let lastSeen = "last_seen_ms = \(dialect.greatest)(\(table).last_seen_ms, excluded.last_seen_ms)"
        return upsert(
            table, columns: dailyColumns, key: dailyKeyColumns, dialect, rows: rows, extra: [plan, lastSeen])
    }

    static func upsertSlots(_ dialect: Dialect, rows: Int) -> String {
        upsert("usage_rollup_slots", columns: slotColumns, key: slotKeyColumns, dialect, rows: rows, extra: [])
    }

    private static func upsert(
        _ table: String, columns: [String], key: [String], _ dialect: Dialect, rows: Int, extra: [String]
    ) -> String {
        let sums = (["requests", "cache_hits", "input_tokens", "output_tokens"] + histogramColumns).map {
            "\($0) = \(table).\($0) + excluded.\($0)"
        }
        let values =
            dialect == .sqlite
            ? Array(
                repeating: "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")",
                count: rows
            ).joined(separator: ", ")
            : PostgresStore.placeholders(rows: rows, columns: columns.count)
        return """
            INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES \(values)
            ON CONFLICT (\(key.joined(separator: ", "))) DO UPDATE SET \((sums + extra).joined(separator: ", "))
            """
    }

    /// What retention deletes before `day`: each table, its key, and its first key column's bound.
    static func retention(beforeDay day: Int64) -> [(table: String, key: String, bound: (column: String, value: Int64))]
    {
        [
            ("usage_rollup_daily", dailyKeyColumns.joined(separator: ", "), ("day", day)),
            ("usage_rollup_slots", slotKeyColumns.joined(separator: ", "), ("slot", day * slotsPerDay)),
        ]
    }

    // MARK: A batch added up

    struct DailyKey: Hashable, Comparable {
        var day: Int64
        var userID: String
        var task: String
        var model: String
        var status: Int
        var code: String

        static func < (left: DailyKey, right: DailyKey) -> Bool {
            (left.day, left.userID, left.task, left.model, left.status, left.code)
                < (right.day, right.userID, right.task, right.model, right.status, right.code)
        }
    }

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
        var lastSeen = Int64.min
        /// The plan of the latest row that had one, and that row's time.
        var plan: String?
        var planAt = Int64.min
        var added = LatencyHistogram()
        var upstream = LatencyHistogram()

        mutating func add(_ row: LedgerRow) {
            requests += 1
            if row.cacheHit {
                cacheHits += 1
            } else {
                inputTokens &+= max(0, row.inputTokens ?? 0)
                outputTokens &+= max(0, row.outputTokens ?? 0)
            }
            lastSeen = max(lastSeen, row.createdAtMilliseconds)
            if let rowPlan = row.plan, row.createdAtMilliseconds >= planAt {
                plan = rowPlan
                planAt = row.createdAtMilliseconds
            }
            if row.status < 400 {
                added.add(milliseconds: max(0, row.durationMilliseconds - (row.upstreamMilliseconds ?? 0)))
            }
            if let upstreamMilliseconds = row.upstreamMilliseconds, upstreamMilliseconds > 0 {
                upstream.add(milliseconds: upstreamMilliseconds)
            }
        }
    }

    /// The rows added up by each roll-up's key.
    static func aggregate(_ rows: some Sequence<LedgerRow>) -> (daily: [DailyKey: Counts], slots: [SlotKey: Counts]) {
        var daily: [DailyKey: Counts] = [:]
        var slots: [SlotKey: Counts] = [:]
        for row in rows {
            let (task, model, code) = (row.task ?? "", row.model ?? "", row.code ?? "")
            let day = LedgerTotals.utcDay(ofMilliseconds: row.createdAtMilliseconds)
            daily[
                DailyKey(
                    day: day, userID: row.userID ?? DailyUsage.guestUserID, task: task, model: model,
                    status: row.status, code: code),
                default: Counts()
            ].add(row)
            slots[
                SlotKey(
                    slot: slot(ofMilliseconds: row.createdAtMilliseconds), task: task, model: model,
                    status: row.status, code: code),
                default: Counts()
            ].add(row)
        }
        return (daily, slots)
    }

    /// The 15-minute slot of an instant, rounded down.
    static func slot(ofMilliseconds milliseconds: Int64) -> Int64 {
        let (slot, rest) = milliseconds.quotientAndRemainder(dividingBy: slotMilliseconds)
        return rest < 0 ? slot - 1 : slot
    }
}
