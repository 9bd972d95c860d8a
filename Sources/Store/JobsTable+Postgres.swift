import Postgres

extension JobsTable {
    /// The job on a row of ``record(of:)`` as Postgres returns it (text values), its first
    /// column at `offset`.
    static func record(from row: PostgresRow, at offset: Int = 0) -> JobRecord {
        JobRecord(
            id: row.string(offset) ?? "", ownerID: row.string(offset + 1), callerKey: row.string(offset + 2) ?? "",
            requestID: row.string(offset + 3) ?? "", task: row.string(offset + 4) ?? "", tone: row.string(offset + 5),
            format: row.string(offset + 6) ?? "", inputLength: row.int(offset + 7) ?? 0,
            status: status(row.string(offset + 8) ?? ""),
            done: row.int(offset + 9) ?? 0, total: row.int(offset + 10) ?? 0, result: row.string(offset + 11),
            data: row.string(offset + 12),
            inputTokens: row.int(offset + 13) ?? 0, outputTokens: row.int(offset + 14) ?? 0,
            errorCode: row.string(offset + 15),
            errorMessage: row.string(offset + 16), createdAtMilliseconds: Int64(row.int(offset + 17) ?? 0),
            updatedAtMilliseconds: Int64(row.int(offset + 18) ?? 0),
            endedAtMilliseconds: row.int(offset + 19).map(Int64.init),
            plan: row.string(offset + 20), costMicros: row.int(offset + 21).map(Int64.init),
            traceParent: row.string(offset + 22)
        )
    }

    /// `texts` as one `text[]` parameter, so a list of any length takes one `$n` and never
    /// meets the protocol's limit on parameters: every element quoted, its quotes and
    /// backslashes escaped.
    static func textArray(_ texts: some Sequence<String>) -> PostgresValue {
        var literal = "{"
        for (offset, text) in texts.enumerated() {
            if offset > 0 { literal += "," }
            literal += "\""
            for character in text.unicodeScalars {
                if character == "\"" || character == "\\" { literal += "\\" }
                literal.unicodeScalars.append(character)
            }
            literal += "\""
        }
        return .text(literal + "}")
    }

    /// `numbers` as one `bigint[]` parameter.
    static func integerArray(_ numbers: some Sequence<Int>) -> PostgresValue {
        .text("{" + numbers.map(String.init).joined(separator: ",") + "}")
    }
}
