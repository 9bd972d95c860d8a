/// The ``AdminStore`` queries, the same SQL on both backends but for their placeholders.
enum RollupQueries {
    private static let histogramSums = RollupTables.histogramColumns.map { "coalesce(sum(\($0)), 0)" }
        .joined(separator: ", ")

    /// One row: the slots' sums, then the latency table's (each placeholder used twice:
    /// SQLite's are numbered, `?1` and `?2`).
    static func totals(placeholders from: String, _ to: String) -> String {
        """
        SELECT * FROM (
            SELECT coalesce(sum(requests), 0), coalesce(sum(cache_hits), 0), coalesce(sum(input_tokens), 0),
                coalesce(sum(output_tokens), 0), coalesce(sum(requests) FILTER (WHERE status >= 400), 0),
                coalesce(sum(cost_micros), 0)
            FROM usage_rollup_slots WHERE slot >= \(from) AND slot < \(to)
        ) AS counts, (
            SELECT \(histogramSums) FROM usage_rollup_latency WHERE slot >= \(from) AND slot < \(to)
        ) AS latency
        """
    }

    /// The local day of a slot, the offset in milliseconds bound first. Integer division
    /// rounds toward zero: the floor for any instant after the first day of 1970.
    private static func localDay(_ offset: String) -> String {
        "(slot * \(RollupTables.slotMilliseconds) + \(offset)) / \(RollupTables.dayMilliseconds)"
    }

    /// On SQLite by slot first, in the primary key's order (no sort), then by local day: a
    /// month of slots sorted whole by day took it twice as long. Postgres hashes either way,
    /// and the two levels only cost it more.
    static func dayTasks(placeholders offset: String, _ from: String, _ to: String, bySlotFirst: Bool) -> String {
        guard bySlotFirst else {
            return """
                SELECT \(localDay(offset)) AS local_day, task, sum(requests), sum(input_tokens), sum(output_tokens),
                    coalesce(sum(requests) FILTER (WHERE status >= 400), 0), sum(cost_micros)
                FROM usage_rollup_slots WHERE slot >= \(from) AND slot < \(to)
                GROUP BY local_day, task
                """
        }
        return """
            SELECT \(localDay(offset)) AS local_day, task, sum(r), sum(i), sum(o), sum(e), sum(c)
            FROM (
                SELECT slot, task, sum(requests) AS r, sum(input_tokens) AS i, sum(output_tokens) AS o,
                    coalesce(sum(requests) FILTER (WHERE status >= 400), 0) AS e, sum(cost_micros) AS c
                FROM usage_rollup_slots WHERE slot >= \(from) AND slot < \(to)
                GROUP BY slot, task
            ) AS by_slot
            GROUP BY local_day, task
            """
    }

    static func dayCodes(placeholders offset: String, _ from: String, _ to: String, bySlotFirst: Bool) -> String {
        guard bySlotFirst else {
            return """
                SELECT \(localDay(offset)) AS local_day, code, sum(requests)
                FROM usage_rollup_slots WHERE slot >= \(from) AND slot < \(to) AND status >= 400
                GROUP BY local_day, code
                """
        }
        return """
            SELECT \(localDay(offset)) AS local_day, code, sum(n)
            FROM (
                SELECT slot, code, sum(requests) AS n
                FROM usage_rollup_slots WHERE slot >= \(from) AND slot < \(to) AND status >= 400
                GROUP BY slot, code
            ) AS by_slot
            GROUP BY local_day, code
            """
    }

    static func models(placeholders from: String, _ to: String) -> String {
        """
        SELECT model, sum(requests), sum(input_tokens), sum(output_tokens), sum(cost_micros),
            coalesce(sum(requests) FILTER (WHERE status >= 400), 0)
        FROM usage_rollup_slots WHERE slot >= \(from) AND slot < \(to)
        GROUP BY model
        """
    }

    static func ordered(_ models: [RollupModel]) -> [RollupModel] {
        models.sorted { $0.model.utf8.lexicographicallyPrecedes($1.model.utf8) }
    }

    /// One row per caller and plan, merged in Swift (``merged(_:)``), from `usage_daily`'s
    /// days (its index by day): the tokens are those the quotas count.
    static func callers(placeholders from: String, _ to: String) -> String {
        """
        SELECT user_id, plan, sum(requests), sum(cache_hits), sum(input_tokens), sum(output_tokens), sum(errors),
            max(last_seen_ms), sum(cost_micros)
        FROM usage_daily WHERE day >= \(from) AND day <= \(to)
        GROUP BY user_id, plan
        """
    }

    /// Served by the partial index `requests_failures`, whose condition the query repeats.
    static func failures(placeholder limit: String) -> String {
        """
        SELECT seq, request_id, created_at, status, code, route, upstream, task, user_id
        FROM requests WHERE status >= 400 ORDER BY seq DESC LIMIT \(limit)
        """
    }

    static func activeJobs(placeholder limit: String) -> String {
        "SELECT \(JobsTable.record()) FROM jobs WHERE status IN \(JobsTable.active) ORDER BY seq LIMIT \(limit)"
    }

    /// Days oldest first, then tasks in byte order, whatever the database's collation.
    static func ordered(_ days: [RollupDayTask]) -> [RollupDayTask] {
        days.sorted { $0.day != $1.day ? $0.day < $1.day : $0.task.utf8.lexicographicallyPrecedes($1.task.utf8) }
    }

    static func ordered(_ days: [RollupDayCode]) -> [RollupDayCode] {
        days.sorted { $0.day != $1.day ? $0.day < $1.day : $0.code.utf8.lexicographicallyPrecedes($1.code.utf8) }
    }

    /// A caller's rows (one per plan it was seen with) as one: the sums added, the plan of the
    /// latest row that had one. Callers in byte order of their ids.
    static func merged(_ parts: [RollupCaller]) -> [RollupCaller] {
        var callers: [String: RollupCaller] = [:]
        var planSeen: [String: Int64] = [:]
        for part in parts {
            let seen = part.lastSeenMilliseconds ?? .min
            guard var caller = callers[part.userID] else {
                callers[part.userID] = part
                if part.plan != nil { planSeen[part.userID] = seen }
                continue
            }
            caller.requests += part.requests
            caller.cacheHits += part.cacheHits
            caller.inputTokens += part.inputTokens
            caller.outputTokens += part.outputTokens
            caller.errors += part.errors
            caller.costMicros += part.costMicros
            caller.lastSeenMilliseconds = max(caller.lastSeenMilliseconds ?? .min, seen)
            if let plan = part.plan, seen >= planSeen[part.userID] ?? .min {
                caller.plan = plan
                planSeen[part.userID] = seen
            }
            callers[part.userID] = caller
        }
        return callers.values.sorted { $0.userID.utf8.lexicographicallyPrecedes($1.userID.utf8) }
    }
}
