/// A store that could not do what was asked. Its description names the store (a file, or a
/// Postgres server and database) and the finding, never a value bound into a statement
/// (user ids, results, digests).
package struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Code: Sendable, Equatable {
        /// The file cannot be opened or created (a missing directory, permissions).
        case cannotOpen
        /// The file exists but is not a database.
        case notADatabase
        /// The database is damaged.
        case corrupt
        /// Another connection holds the lock past the busy timeout.
        case busy
        /// The file or its directory is read-only.
        case readOnly
        /// The disk (or the file-size limit) is full.
        case full
        /// The store was written by a newer version of the gateway (its schema version is past ours).
        case newerSchema(found: Int, supported: Int)
        /// A row broke a constraint (a duplicate token id or digest, say).
        case constraint
        /// The store is closed.
        case closed
        /// The database server cannot be reached or is not serving now (connection lost,
        /// shutting down, out of resources, a timeout, a serialization failure).
        case unavailable
        /// The database server refused the statement and would refuse it again (a missing
        /// table or privilege, a value it cannot take).
        case rejected
        /// Anything else SQLite reported.
        case other
    }

    package let code: Code
    /// SQLite's extended result code, 0 when the error is not SQLite's (Postgres errors carry
    /// their SQLSTATE in ``message``).
    package let resultCode: Int32
    /// What failed and where, without bound values.
    package let message: String

    package init(_ code: Code, resultCode: Int32 = 0, message: String) {
        self.code = code
        self.resultCode = resultCode
        self.message = message
    }

    /// Whether trying the same write again later may succeed (busy, full, read-only, I/O, a
    /// server away): the writer keeps such rows and retries. A constraint or a misuse fails
    /// the same way every time.
    package var isTransient: Bool {
        switch code {
        case .busy, .full, .readOnly, .cannotOpen, .other, .closed, .unavailable: true
        case .notADatabase, .corrupt, .newerSchema, .constraint, .rejected: false
        }
    }

    package var description: String { message }

    /// A statement on one line and short enough for a log line (a multi-row insert runs to
    /// many kilobytes).
    static func excerpt(of sql: String) -> String {
        let limit = 200
        let line = sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        guard line.count > limit else { return line }
        return line.prefix(limit) + "…"
    }
}
