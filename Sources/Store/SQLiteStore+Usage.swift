extension SQLiteStore {
    package func dailyUsage(userID: String, fromDay: Int64) async throws(StoreError) -> [DailyUsage] {
        try await usage(where: "user_id = ? AND day >= ? ORDER BY day DESC", [.text(userID), .integer(fromDay)])
    }

    package func tokensCharged(onDay day: Int64) async throws(StoreError) -> [String: Int] {
        let days = try await usage(where: "day = ? AND user_id <> ?", [.integer(day), .text(DailyUsage.guestUserID)])
        return Dictionary(days.map { ($0.userID, $0.totalTokens) }, uniquingKeysWith: +)
    }

    package func usageReport(fromDay: Int64, userID: String?) async throws(StoreError) -> [DailyUsage] {
        if let userID {
            return try await usage(
                where: "user_id = ? AND day >= ? ORDER BY day, user_id", [.text(userID), .integer(fromDay)])
        }
        return try await usage(where: "day >= ? ORDER BY day, user_id", [.integer(fromDay)])
    }

    package func spending(since milliseconds: Int64) async throws(StoreError) -> [Spending] {
        try await read { connection throws(StoreError) in
            var spending: [Spending] = []
            try connection.query(
                "SELECT user_id, SUM(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)), "
                    + "SUM(coalesce(cost_micros, 0)) FROM requests "
                    + "WHERE created_at >= ? AND cache_hit = 0 AND route <> ? GROUP BY user_id",
                [.integer(milliseconds), .text(Spending.jobsRoute)]
            ) {
                spending.append(Spending(userID: $0.optionalText(0), tokens: $0.int64(1), micros: $0.int64(2)))
            }
            return spending
        }
    }

    private func usage(where condition: String, _ values: [SQLiteValue]) async throws(StoreError) -> [DailyUsage] {
        try await read { connection throws(StoreError) in
            var days: [DailyUsage] = []
            try connection.query(
                "SELECT user_id, day, requests, input_tokens, output_tokens, cost_micros FROM usage_daily WHERE "
                    + condition, values
            ) {
                days.append(
                    DailyUsage(
                        userID: $0.text(0), day: $0.int64(1), requests: $0.int(2), inputTokens: $0.int(3),
                        outputTokens: $0.int(4), costMicros: $0.int64(5)))
            }
            return days
        }
    }
}
