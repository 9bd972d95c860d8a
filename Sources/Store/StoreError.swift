/// A store that could not do what was asked. Its description names the file and SQLite's
/// finding, never a value bound into a statement (user ids, results, digests).
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
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
        /// Anything else SQLite reported.
        case other
    }

    public let code: Code
    /// SQLite's extended result code, 0 when the error is not SQLite's.
    public let resultCode: Int32
    /// What failed and where, without bound values.
    public let message: String

    public init(_ code: Code, resultCode: Int32 = 0, message: String) {
        self.code = code
        self.resultCode = resultCode
        self.message = message
    }

    /// Whether trying the same write again later may succeed (busy, full, read-only, I/O):
    /// the writer keeps such rows and retries. A constraint or a misuse fails the same way
    /// every time.
    public var isTransient: Bool {
        switch code {
        case .busy, .full, .readOnly, .cannotOpen, .other, .closed: true
        case .notADatabase, .corrupt, .newerSchema, .constraint: false
        }
    }

    public var description: String { message }
}
