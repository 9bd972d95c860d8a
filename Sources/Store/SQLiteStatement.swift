import CSQLite

/// One prepared statement of a ``SQLiteConnection``, which owns it (in its cache) and
/// finalizes it before closing. Not `Sendable`: it belongs to its connection's thread.
final class SQLiteStatement {
    /// The statement's text, for error messages.
    let sql: String
    private let path: String
    private let connection: OpaquePointer
    // nil once finalized.
    private var handle: OpaquePointer?

    /// Prepares `sql`, which must be exactly one statement. `persistent` tells SQLite the
    /// statement will be reused many times (it is kept in the connection's cache).
    init(sql: String, connection: OpaquePointer, path: String, persistent: Bool) throws(StoreError) {
        self.sql = sql
        self.path = path
        self.connection = connection
        var handle: OpaquePointer?
        var rest: UnsafePointer<CChar>?
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let (code, trailing) = sql.withCString { text in
            let code = sqlite3_prepare_v3(connection, text, -1, flags, &handle, &rest)
            let trailing = rest.map { tail in String(cString: tail).contains { !$0.isWhitespace } } ?? false
            return (code, trailing)
        }
        guard code == SQLITE_OK, let handle else {
            sqlite3_finalize(handle)
            throw code == SQLITE_OK
                ? StoreError(.other, message: "\(path): no statement in `\(sql)`")
                : StoreError(sqlite: code, connection: connection, path: path, sql: sql)
        }
        guard !trailing else {
            sqlite3_finalize(handle)
            throw StoreError(.other, message: "\(path): more than one statement in `\(sql)`")
        }
        self.handle = handle
    }

    deinit {
        finalize()
    }

    /// Binds `values` to the parameters in order; their count must be the statement's.
    func bind(_ values: [SQLiteValue]) throws(StoreError) {
        let handle = try open()
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard values.count == expected else {
            throw StoreError(.other, message: "\(path): \(values.count) values for \(expected) parameters in `\(sql)`")
        }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code =
                switch value {
                case .null: sqlite3_bind_null(handle, index)
                case .integer(let number): sqlite3_bind_int64(handle, index, number)
                case .real(let number): sqlite3_bind_double(handle, index, number)
                case .text(let text): Self.bind(text: text, to: handle, at: index)
                case .blob(let bytes): Self.bind(blob: bytes, to: handle, at: index)
                }
            guard code == SQLITE_OK else {
                throw StoreError(sqlite: code, connection: connection, path: path, sql: sql)
            }
        }
    }

    /// Runs the statement to its next row: true when it stands on one, false when done.
    func step() throws(StoreError) -> Bool {
        let handle = try open()
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw StoreError(sqlite: code, connection: connection, path: path, sql: sql)
        }
    }

    /// Hands the current row to `read`; only between a `step()` that answered true and the next.
    func withRow<T, E: Error>(_ read: (borrowing SQLiteRow) throws(E) -> T) throws(E) -> T {
        guard let handle else { preconditionFailure("reading a finalized statement") }
        return try read(SQLiteRow(statement: handle))
    }

    /// Makes the statement ready to run again and lets go of the bound values (results can be large).
    func reset() {
        guard let handle else { return }
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Frees the statement; later calls throw. Idempotent.
    func finalize() {
        guard let handle else { return }
        sqlite3_finalize(handle)
        self.handle = nil
    }

    private func open() throws(StoreError) -> OpaquePointer {
        guard let handle else { throw StoreError(.closed, message: "\(path): the store is closed") }
        return handle
    }

    private static func bind(text: String, to handle: OpaquePointer, at index: Int32) -> Int32 {
        var text = text
        return text.withUTF8 { bytes in
            guard let start = bytes.baseAddress, !bytes.isEmpty else {
                // A null pointer would bind NULL, not the empty string.
                return CSQLite_bind_text_transient(handle, index, "", 0)
            }
            guard bytes.count <= Int(Int32.max) else { return SQLITE_TOOBIG }
            return start.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                CSQLite_bind_text_transient(handle, index, $0, Int32(bytes.count))
            }
        }
    }

    private static func bind(blob: [UInt8], to handle: OpaquePointer, at index: Int32) -> Int32 {
        blob.withUnsafeBytes { bytes in
            // A null pointer would bind NULL, not an empty blob.
            guard let start = bytes.baseAddress, !bytes.isEmpty else { return sqlite3_bind_zeroblob(handle, index, 0) }
            guard bytes.count <= Int(Int32.max) else { return SQLITE_TOOBIG }
            return CSQLite_bind_blob_transient(handle, index, start, Int32(bytes.count))
        }
    }
}
