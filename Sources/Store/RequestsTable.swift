/// How a ``LedgerRow`` goes into the `requests` table and comes back as a ``HistoryItem``.
enum RequestsTable {
    /// The columns a row fills, in the order of ``values(of:into:)``.
    static let columns =
        "request_id, user_id, task, tone, route, model, input_length, input_tokens, output_tokens, "
        + "status, code, outcome, cache_hit, duration_ms, created_at, result, upstream, upstream_ms, cost_micros"
    static let columnCount = 19

    /// What ``item(from:)`` reads: the sequence number, then ``columns``.
    static let selection = "seq, " + columns

    /// The `INSERT` of one row.
    static let insert =
        "INSERT INTO requests (\(columns)) VALUES (" + Array(repeating: "?", count: columnCount).joined(separator: ", ")
        + ")"

    static func values(of row: LedgerRow, into values: inout [SQLiteValue]) {
        values.append(.text(row.requestID))
        values.append(.text(row.userID))
        values.append(.text(row.task))
        values.append(.text(row.tone))
        values.append(.text(row.route))
        values.append(.text(row.model))
        values.append(.integer(row.inputLength))
        values.append(.integer(row.inputTokens))
        values.append(.integer(row.outputTokens))
        values.append(.integer(Int64(row.status)))
        values.append(.text(row.code))
        values.append(.text(row.outcome))
        values.append(.integer(row.cacheHit ? 1 : 0))
        values.append(.real(row.durationMilliseconds))
        values.append(.integer(row.createdAtMilliseconds))
        values.append(.text(row.result))
        values.append(.text(row.upstream))
        values.append(row.upstreamMilliseconds.map(SQLiteValue.real) ?? .null)
        values.append(.integer(row.costMicros))
    }

    /// The item on a row of ``selection``.
    static func item(from row: borrowing SQLiteRow) -> HistoryItem {
        HistoryItem(
            sequence: row.int64(0),
            row: LedgerRow(
                requestID: row.text(1), userID: row.optionalText(2), task: row.optionalText(3),
                tone: row.optionalText(4),
                route: row.text(5), model: row.optionalText(6), inputLength: row.optionalInt(7),
                inputTokens: row.optionalInt(8),
                outputTokens: row.optionalInt(9), status: row.int(10), code: row.optionalText(11),
                outcome: row.text(12),
                cacheHit: row.bool(13), durationMilliseconds: row.double(14), createdAtMilliseconds: row.int64(15),
                result: row.optionalText(16),
                upstream: row.optionalText(17), upstreamMilliseconds: row.isNull(18) ? nil : row.double(18),
                costMicros: row.isNull(19) ? nil : row.int64(19)
            )
        )
    }
}
