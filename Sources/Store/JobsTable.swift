/// How the `jobs` and `job_items` tables are read back, on either backend.
enum JobsTable {
    /// The columns of a ``JobRecord``, in the order ``record(from:at:)`` reads them.
    static let recordColumns = [
        "id", "owner_id", "caller_key", "request_id", "task", "tone", "format", "input_length", "status", "done",
        "total", "result",
        "data", "input_tokens", "output_tokens", "error_code", "error_message", "created_at", "updated_at", "ended_at",
        "plan", "cost_micros", "trace_parent",
    ]

    /// ``recordColumns`` as a select list, each prefixed with `table.` when given.
    static func record(of table: String? = nil) -> String {
        let prefix = table.map { $0 + "." } ?? ""
        return recordColumns.map { prefix + $0 }.joined(separator: ", ")
    }

    /// The statuses of a job that is not over, as SQL.
    static let active = "('queued', 'running')"

    /// The job on a row of ``record(of:)``, its first column at `offset`.
    static func record(from row: borrowing SQLiteRow, at offset: Int32 = 0) -> JobRecord {
        JobRecord(
            id: row.text(offset), ownerID: row.optionalText(offset + 1), callerKey: row.text(offset + 2),
            requestID: row.text(offset + 3),
            task: row.text(offset + 4), tone: row.optionalText(offset + 5), format: row.text(offset + 6),
            inputLength: row.int(offset + 7),
            status: status(row.text(offset + 8)), done: row.int(offset + 9), total: row.int(offset + 10),
            result: row.optionalText(offset + 11),
            data: row.optionalText(offset + 12), inputTokens: row.int(offset + 13), outputTokens: row.int(offset + 14),
            errorCode: row.optionalText(offset + 15), errorMessage: row.optionalText(offset + 16),
            createdAtMilliseconds: row.int64(offset + 17),
            updatedAtMilliseconds: row.int64(offset + 18), endedAtMilliseconds: row.optionalInt64(offset + 19),
            plan: row.optionalText(offset + 20), costMicros: row.optionalInt64(offset + 21),
            traceParent: row.optionalText(offset + 22)
        )
    }

    /// A stored status; the tables' checks allow no other values.
    static func status(_ text: String) -> JobStatus {
        JobStatus(rawValue: text) ?? .failed
    }

    static func kind(_ text: String) -> JobItemKind {
        JobItemKind(rawValue: text) ?? .map
    }

    /// `keys` without repeats, in their first order.
    static func distinct(_ keys: [JobItemKey]) -> [JobItemKey] {
        var seen = Set<JobItemKey>()
        return keys.filter { seen.insert($0).inserted }
    }

    /// What ending a job writes into its row.
    struct Ending {
        var status: JobStatus
        var result: String?
        var data: String?
        var errorCode: String?
        var errorMessage: String?

        static let cancelled = Ending(status: .cancelled)

        init(
            status: JobStatus, result: String? = nil, data: String? = nil, errorCode: String? = nil,
            errorMessage: String? = nil
        ) {
            self.status = status
            self.result = result
            self.data = data
            self.errorCode = errorCode
            self.errorMessage = errorMessage
        }

        init(_ outcome: JobFinish.Outcome) {
            switch outcome {
            case .succeeded(let result, let data): self.init(status: .succeeded, result: result, data: data)
            case .failed(let code, let message): self.init(status: .failed, errorCode: code, errorMessage: message)
            }
        }
    }
}
