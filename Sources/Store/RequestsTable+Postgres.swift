import Postgres

extension RequestsTable {
    /// The values of `row` for the columns of ``columns``, in order, as Postgres parameters.
    static func values(of row: LedgerRow, into values: inout [PostgresValue]) {
        values.append(.text(row.requestID))
        values.append(row.userID.postgresValue)
        values.append(row.task.postgresValue)
        values.append(row.tone.postgresValue)
        values.append(.text(row.route))
        values.append(row.model.postgresValue)
        values.append(row.inputLength.map(PostgresValue.int) ?? .null)
        values.append(row.inputTokens.map(PostgresValue.int) ?? .null)
        values.append(row.outputTokens.map(PostgresValue.int) ?? .null)
        values.append(.int(row.status))
        values.append(row.code.postgresValue)
        values.append(.text(row.outcome))
        values.append(.bool(row.cacheHit))
        values.append(.double(row.durationMilliseconds))
        values.append(.int(Int(row.createdAtMilliseconds)))
        values.append(row.result.postgresValue)
        values.append(row.upstream.postgresValue)
        values.append(row.upstreamMilliseconds.map(PostgresValue.double) ?? .null)
        values.append(row.costMicros.map { PostgresValue.int(Int($0)) } ?? .null)
    }

    /// The item on a row of ``selection`` as Postgres returns it (text values).
    static func item(from row: PostgresRow) -> HistoryItem {
        HistoryItem(
            sequence: Int64(row.int(0) ?? 0),
            row: LedgerRow(
                requestID: row.string(1) ?? "", userID: row.string(2), task: row.string(3), tone: row.string(4),
                route: row.string(5) ?? "", model: row.string(6), inputLength: row.int(7), inputTokens: row.int(8),
                outputTokens: row.int(9), status: row.int(10) ?? 0, code: row.string(11), outcome: row.string(12) ?? "",
                cacheHit: row.bool(13) ?? false, durationMilliseconds: row.double(14) ?? 0,
                createdAtMilliseconds: Int64(row.int(15) ?? 0),
                result: row.string(16), upstream: row.string(17), upstreamMilliseconds: row.double(18),
                costMicros: row.int(19).map(Int64.init)
            )
        )
    }
}
