import Synchronization

/// One connection behind a mutex of its own: the thread holding the lock is the one using
/// it. Opened at first use (or given open), closed for good by ``close()``.
///
/// The connection never leaves the lock: ``withConnection(_:)`` lends it to a `@Sendable`
/// closure, which has nowhere to keep it, so no second thread can reach it while the first
/// uses it.
final class ConnectionSlot: Sendable {
    private enum State {
        case unopened
        case open(SQLiteConnection)
        case closed
    }

    private let state: Mutex<State>
    private let path: String
    private let opener: (@Sendable () throws(StoreError) -> SQLiteConnection)?

    /// A slot that opens its connection with `opener` when first used.
    init(path: String, opener: @escaping @Sendable () throws(StoreError) -> SQLiteConnection) {
        self.path = path
        self.opener = opener
        state = Mutex(.unopened)
    }

    /// A slot holding `connection`, open already.
    init(path: String, connection: sending SQLiteConnection) {
        self.path = path
        opener = nil
        state = Mutex(.open(connection))
    }

    /// Runs `body` over the connection, waiting for the lock.
    func withConnection<T: Sendable>(_ body: @Sendable (SQLiteConnection) throws(StoreError) -> T) throws(StoreError)
        -> T
    {
        try state.withLock { state throws(StoreError) -> T in try Self.use(&state, path: path, opener: opener, body) }
    }

    /// Runs `body` over the connection when no one holds it; nil without running it when
    /// someone does.
    func withConnectionIfFree<T: Sendable>(_ body: @Sendable (SQLiteConnection) throws(StoreError) -> T) -> Result<
        T, StoreError
    >? {
        state.withLockIfAvailable { state -> Result<T, StoreError> in
            Result { () throws(StoreError) -> T in try Self.use(&state, path: path, opener: opener, body) }
        }
    }

    /// Closes the connection, after whoever is using it is done; later uses throw `.closed`.
    func close() {
        state.withLock { state in
            if case .open(let connection) = state { connection.close() }
            state = .closed
        }
    }

    private static func use<T>(
        _ state: inout State, path: String, opener: (@Sendable () throws(StoreError) -> SQLiteConnection)?,
        _ body: @Sendable (SQLiteConnection) throws(StoreError) -> T
    ) throws(StoreError) -> T {
        switch state {
        case .open(let connection):
            return try body(connection)
        case .unopened:
            guard let opener else { throw StoreError(.closed, message: "\(path): the store is closed") }
            let connection = try opener()
            state = .open(connection)
            return try body(connection)
        case .closed:
            throw StoreError(.closed, message: "\(path): the store is closed")
        }
    }
}
