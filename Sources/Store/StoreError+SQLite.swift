import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

extension StoreError {
    /// The error for SQLite's result `resultCode`, in a message that names the database file,
    /// SQLite's own words and the statement (its text only: bound values never show).
    ///
    /// `connection` is the handle whose `sqlite3_errmsg` explains the failure, when there is one.
    init(sqlite resultCode: Int32, connection: OpaquePointer?, path: String, sql: String? = nil) {
        let meaning = String(cString: sqlite3_errstr(resultCode))
        var message = "\(path): "
        if let connection, sqlite3_extended_errcode(connection) == resultCode {
            let detail = String(cString: sqlite3_errmsg(connection))
            message += detail == meaning ? detail : "\(detail) (\(meaning))"
        } else {
            message += meaning
        }
        // Opening and I/O fail for a reason of the system's (a directory, permissions, space).
        let primary = resultCode & 0xFF
        if let connection, primary == SQLITE_CANTOPEN || primary == SQLITE_IOERR {
            let systemError = sqlite3_system_errno(connection)
            if systemError != 0 { message += ": " + String(cString: strerror(systemError)) + " (errno \(systemError))" }
        }
        message += " [SQLite \(resultCode)]"
        if let sql { message += " in `\(Self.excerpt(of: sql))`" }
        self.init(Self.code(for: resultCode), resultCode: resultCode, message: message)
    }

    /// The store's code for a SQLite result code (its primary code decides).
    static func code(for resultCode: Int32) -> Code {
        switch resultCode & 0xFF {
        case SQLITE_CANTOPEN: .cannotOpen
        case SQLITE_NOTADB: .notADatabase
        case SQLITE_CORRUPT: .corrupt
        case SQLITE_BUSY, SQLITE_LOCKED: .busy
        case SQLITE_READONLY: .readOnly
        case SQLITE_FULL: .full
        case SQLITE_CONSTRAINT: .constraint
        default: .other
        }
    }
}
