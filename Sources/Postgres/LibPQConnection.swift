import CPostgres

#if canImport(Glibc)
    import Glibc
#endif

/// The thin wrapper over one `PGconn` in non-blocking mode: the only code of the module that
/// calls libpq on a connection. Every call here returns at once; none waits for the server.
/// Loop-confined, like the ``PostgresConnection`` that owns it.
struct LibPQConnection {
    private let handle: OpaquePointer

    enum PollStatus {
        case reading, writing, ok, failed
    }

    enum FlushStatus {
        case done, pending, failed
    }

    /// Starts connecting with `parameters` (libpq keywords and values); nil when libpq cannot
    /// even allocate the connection. The caller polls with ``poll()`` as the socket allows.
    static func start(_ parameters: [(String, String)]) -> Result<LibPQConnection, PostgresError> {
        let keywords = parameters.map { strdup($0.0) }
        let values = parameters.map { strdup($0.1) }
        defer {
            for pointer in keywords { free(pointer) }
            for pointer in values { free(pointer) }
        }
        var keywordArray: [UnsafePointer<CChar>?] = keywords.map { UnsafePointer($0) } + [nil]
        var valueArray: [UnsafePointer<CChar>?] = values.map { UnsafePointer($0) } + [nil]
        let handle = keywordArray.withUnsafeMutableBufferPointer { keywordBuffer in
            valueArray.withUnsafeMutableBufferPointer { valueBuffer in
                PQconnectStartParams(keywordBuffer.baseAddress, valueBuffer.baseAddress, 0)
            }
        }
        guard let handle else {
            return .failure(PostgresError(.connection, message: "libpq could not allocate a connection"))
        }
        let connection = LibPQConnection(handle: handle)
        if PQstatus(handle) == CONNECTION_BAD {
            let message = connection.errorMessage
            PQfinish(handle)
            return .failure(PostgresError(.connection, message: message))
        }
        CPostgres_silenceNotices(handle)
        if PQsetnonblocking(handle, 1) != 0 {
            let message = connection.errorMessage
            PQfinish(handle)
            return .failure(PostgresError(.connection, message: message))
        }
        return .success(connection)
    }

    /// The socket libpq uses now; it may change while connecting (another address is tried).
    var socket: CInt { PQsocket(handle) }

    var isBad: Bool { PQstatus(handle) == CONNECTION_BAD }

    /// libpq's last message, one line, without trailing newline.
    var errorMessage: String {
        guard let text = PQerrorMessage(handle) else { return "unknown libpq error" }
        let message = String(cString: text).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return message.isEmpty ? "unknown libpq error" : message
    }

    func poll() -> PollStatus {
        switch PQconnectPoll(handle) {
        case PGRES_POLLING_READING: .reading
        case PGRES_POLLING_WRITING: .writing
        case PGRES_POLLING_OK: .ok
        default: .failed
        }
    }

    /// Queues `query` for sending (``flush()`` sends it); false when libpq refused it (the
    /// connection is broken: ``errorMessage`` says why).
    func send(_ query: PostgresQuery) -> Bool {
        let count = query.parameters.count
        var types: [UInt32] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        var offsets: [Int?] = []
        var storage: [UInt8] = []
        types.reserveCapacity(count)
        lengths.reserveCapacity(count)
        formats.reserveCapacity(count)
        offsets.reserveCapacity(count)
        for value in query.parameters {
            types.append(value.typeOID)
            let (bytes, binary) = value.wire
            formats.append(binary ? 1 : 0)
            if let bytes {
                offsets.append(storage.count)
                lengths.append(Int32(clamping: bytes.count))
                storage.append(contentsOf: bytes)
                storage.append(0) // text values are read up to a NUL
            } else {
                offsets.append(nil)
                lengths.append(0)
            }
        }
        if storage.isEmpty { storage.append(0) } // a base address even with no values
        return storage.withUnsafeBufferPointer { bytes -> Bool in
            let base = UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self)
            let values: [UnsafePointer<CChar>?] = offsets.map { offset in offset.map { base + $0 } }
            return PQsendQueryParams(handle, query.sql, Int32(count), types, values, lengths, formats, 0) == 1
        }
    }

    func flush() -> FlushStatus {
        switch PQflush(handle) {
        case 0: .done
        case 1: .pending
        default: .failed
        }
    }

    /// Reads what the socket has; false when the connection is broken.
    func consumeInput() -> Bool {
        guard PQconsumeInput(handle) == 1 else { return false }
        // Nothing LISTENs, but a notification must not pile up in libpq.
        while let notice = PQnotifies(handle) { PQfreemem(notice) }
        return true
    }

    /// What `PQgetResult` gave: a query's result or error, a query skipped because an earlier
    /// one of its pipeline failed, or the end of a pipeline.
    enum Outcome {
        case result(PostgresResult)
        case error(PostgresError)
        case aborted
        case sync
    }

    /// Pipeline mode: queries are sent without waiting for each other's results, up to a sync
    /// point. Only while no result is pending.
    func enterPipelineMode() -> Bool { PQenterPipelineMode(handle) == 1 }

    /// Back to one query at a time; only once every result of the pipeline has been taken.
    func exitPipelineMode() -> Bool { PQexitPipelineMode(handle) == 1 }

    /// Ends the pipeline's queries with a sync point: its result comes after theirs.
    func pipelineSync() -> Bool { PQpipelineSync(handle) == 1 }

    /// Whether ``nextResult(query:)`` would block.
    var isBusy: Bool { PQisBusy(handle) == 1 }

    /// The next result of the query in flight, read and freed; nil once the query is
    /// complete. Only when ``isBusy`` is false.
    func nextResult(query: String) -> Outcome? {
        guard let result = PQgetResult(handle) else { return nil }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return .result(Self.read(result))
        case PGRES_FATAL_ERROR, PGRES_NONFATAL_ERROR:
            let sqlState = CPostgres_sqlState(result).map { String(cString: $0) }
            let message = CPostgres_primaryMessage(result).map { String(cString: $0) } ?? errorMessage
            return .error(
                PostgresError(
                    sqlState == nil ? .connection : .server, sqlState: sqlState, message: message, query: query))
        case PGRES_PIPELINE_ABORTED:
            return .aborted
        case PGRES_PIPELINE_SYNC:
            return .sync
        default:
            return .error(PostgresError(.invalidQuery, message: "COPY and replication are not supported", query: query))
        }
    }

    private static func read(_ result: OpaquePointer) -> PostgresResult {
        let columnCount = Int(PQnfields(result))
        let rowCount = Int(PQntuples(result))
        var columns: [String] = []
        var types: [UInt32] = []
        for column in 0..<columnCount {
            columns.append(PQfname(result, Int32(column)).map { String(cString: $0) } ?? "")
            types.append(PQftype(result, Int32(column)))
        }
        var rows: [PostgresRow] = []
        rows.reserveCapacity(rowCount)
        for row in 0..<rowCount {
            var values: [[UInt8]?] = []
            values.reserveCapacity(columnCount)
            for column in 0..<columnCount {
                if PQgetisnull(result, Int32(row), Int32(column)) == 1 {
                    values.append(nil)
                    continue
                }
                let length = Int(PQgetlength(result, Int32(row), Int32(column)))
                guard let pointer = PQgetvalue(result, Int32(row), Int32(column)) else {
                    values.append([])
                    continue
                }
                let bytes = UnsafeRawBufferPointer(start: pointer, count: length)
                values.append(types[column] == 17 ? Self.byteaHex(bytes) : Array(bytes))
            }
            rows.append(PostgresRow(values: values))
        }
        let affected = PQcmdTuples(result).map { String(cString: $0) }.flatMap { Int($0) } ?? 0
        return PostgresResult(columns: columns, columnTypes: types, rows: rows, affectedRows: affected)
    }

    /// A `bytea` in the text format, `\x` and hex digits (the server's default output), as bytes.
    private static func byteaHex(_ text: UnsafeRawBufferPointer) -> [UInt8] {
        guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x") else { return Array(text) }
        func nibble(_ byte: UInt8) -> UInt8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            default: byte &- UInt8(ascii: "A") &+ 10
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity((text.count - 2) / 2)
        var index = 2
        while index + 1 < text.count {
            bytes.append(nibble(text[index]) << 4 | nibble(text[index + 1]))
            index += 2
        }
        return bytes
    }

    /// What cancels the query in flight from another thread.
    func canceller() -> LibPQCanceller? {
        PQgetCancel(handle).map(LibPQCanceller.init)
    }

    /// Closes the connection (a Terminate message if the socket takes it, then close) and
    /// frees it; the value must not be used again.
    func finish() {
        PQfinish(handle)
    }
}

/// A `PGcancel`: asks the server, over a connection of its own, to cancel the query running
/// on another connection. `PQcancel` blocks until the server has the request, so it runs on a
/// thread of its own, never on a loop.
final class LibPQCanceller: @unchecked Sendable {
    // Sendable because the handle is used by exactly one thread after it is made: `sendAndFree()`
    // cancels and frees it, once; libpq documents PQcancel as safe beside the connection's use.
    private let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }

    /// Sends the cancel request and frees the handle; blocking. Returns whether it was sent.
    func sendAndFree() -> Bool {
        var buffer = [CChar](repeating: 0, count: 256)
        let sent = PQcancel(handle, &buffer, Int32(buffer.count)) == 1
        PQfreeCancel(handle)
        return sent
    }
}
