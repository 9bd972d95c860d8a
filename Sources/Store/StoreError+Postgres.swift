import Postgres

extension StoreError {
    /// The error for a failed Postgres call on `store` (`postgres host:port/database`), in a
    /// message that names the store, the client's code and SQLSTATE, and the statement's text.
    ///
    /// The server's own words are kept only where they cannot carry a bound value: for
    /// constraint violations (which name the constraint) and for connection failures (libpq's
    /// words). Other server messages may quote an input ("invalid input syntax …: "…"") and
    /// are left out.
    init(postgres error: PostgresError, store: String) {
        let code = Self.code(for: error)
        var message = "\(store): \(error.description)"
        if code == .constraint || error.code == .connection || error.code == .timeout || error.code == .closed {
            message += ": " + error.message
        }
        if let query = error.query { message += " in `\(Self.excerpt(of: query))`" }
        self.init(code, message: message)
    }

    /// Transient faults become ``Code/unavailable``, so the ledger writer keeps its rows and
    /// retries; a constraint is ``Code/constraint``; anything the server would refuse again
    /// is ``Code/rejected``.
    static func code(for error: PostgresError) -> Code {
        switch error.code {
        case .connection, .timeout, .cancelled: return .unavailable
        case .closed: return .closed
        case .invalidConfiguration: return .cannotOpen
        case .invalidQuery: return .rejected
        case .server:
            guard let state = error.sqlState else { return .rejected }
            if error.isTransient || state == "57014" { return .unavailable }
            if state.hasPrefix("23") { return .constraint }
            // Credentials refused, no such database: the store cannot be opened as configured.
            if state.hasPrefix("28") || state == "3D000" { return .cannotOpen }
            if state.hasPrefix("25") || state.hasPrefix("40") { return .unavailable }
            return .rejected
        }
    }
}
