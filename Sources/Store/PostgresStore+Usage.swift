import Postgres

extension PostgresStore {
    package func dailyUsage(userID: String, fromDay: Int64) async throws(StoreError) -> [DailyUsage] {
        try await usage(where: "user_id = $1 AND day >= $2 ORDER BY day DESC", [.text(userID), .int(Int(fromDay))])
    }

    package func tokensCharged(onDay day: Int64) async throws(StoreError) -> [String: Int] {
        let days = try await usage(
            where: "day = $1 AND user_id <> $2", [.int(Int(day)), .text(DailyUsage.guestUserID)])
        return Dictionary(days.map { ($0.userID, $0.totalTokens) }, uniquingKeysWith: +)
    }

    /// Users in byte order (`COLLATE "C"`), as SQLite orders them, whatever the database's locale.
    package func usageReport(fromDay: Int64, userID: String?) async throws(StoreError) -> [DailyUsage] {
        if let userID {
            return try await usage(
                where: "user_id = $1 AND day >= $2 ORDER BY day, user_id COLLATE \"C\"",
                [.text(userID), .int(Int(fromDay))])
        }
        return try await usage(where: "day >= $1 ORDER BY day, user_id COLLATE \"C\"", [.int(Int(fromDay))])
    }

    package func spending(since milliseconds: Int64) async throws(StoreError) -> [Spending] {
        try await query(
            "SELECT user_id, SUM(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)), "
                + "SUM(coalesce(cost_micros, 0)) FROM requests "
                + "WHERE created_at >= $1 AND NOT cache_hit AND route <> $2 GROUP BY user_id",
            [.int(Int(milliseconds)), .text(Spending.jobsRoute)]
        ).rows.map {
            Spending(userID: $0.string(0), tokens: Int64($0.int(1) ?? 0), micros: Int64($0.int(2) ?? 0))
        }
    }

    private func usage(where condition: String, _ parameters: [PostgresValue]) async throws(StoreError) -> [DailyUsage]
    {
        try await query(
            "SELECT user_id, day, requests, input_tokens, output_tokens, cost_micros FROM usage_daily WHERE "
                + condition, parameters
        ).rows.map {
            DailyUsage(
                userID: $0.string(0) ?? "", day: Int64($0.int(1) ?? 0), requests: $0.int(2) ?? 0,
                inputTokens: $0.int(3) ?? 0,
                outputTokens: $0.int(4) ?? 0, costMicros: Int64($0.int(5) ?? 0))
        }
    }
}
