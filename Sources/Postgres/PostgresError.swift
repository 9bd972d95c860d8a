/// Why a Postgres call failed.
///
/// Its ``description`` is generic (the code and the SQLSTATE), safe for any log line; the
/// server's primary message and the query's text are in ``debugDescription``
/// (`String(reflecting:)`), never a bound value nor a password.
package struct PostgresError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    package enum Code: String, Sendable, Hashable {
        /// The configuration or URL cannot be used.
        case invalidConfiguration
        /// No connection to the server: it could not be made, or was lost with the query in
        /// flight. The query may or may not have run; the caller decides whether to retry.
        case connection
        /// The query did not finish within its timeout and was cancelled.
        case timeout
        /// The server answered with an error; ``PostgresError/sqlState`` says which.
        case server
        /// The query could not be sent as asked (too many parameters, text with a NUL byte).
        case invalidQuery
        /// The calling task was cancelled.
        case cancelled
        /// The client is stopped or was never started.
        case closed
    }

    package let code: Code
    /// The server's five-character SQLSTATE for ``Code/server`` errors, nil otherwise.
    package let sqlState: String?
    /// What happened: the server's primary message, or libpq's, or ours.
    package let message: String
    /// The SQL text of the query that failed, when there was one (bound values are never in it).
    package let query: String?

    package init(_ code: Code, sqlState: String? = nil, message: String, query: String? = nil) {
        self.code = code
        self.sqlState = sqlState
        self.message = message
        self.query = query
    }

    /// The condition named by ``sqlState``, for the codes the gateway acts on.
    package var condition: PostgresCondition? {
        sqlState.map(PostgresCondition.init(sqlState:))
    }

    /// Whether the same call may succeed later: a connection failure, a timeout, a server
    /// that is starting or shutting down, a serialization failure or a deadlock. A unique
    /// violation or a syntax error fails the same way every time.
    package var isTransient: Bool {
        switch code {
        case .connection, .timeout: return true
        case .server: return condition?.isTransient ?? false
        case .invalidConfiguration, .invalidQuery, .cancelled, .closed: return false
        }
    }

    /// This error with `query` attached.
    func with(query: String) -> PostgresError {
        PostgresError(code, sqlState: sqlState, message: message, query: query)
    }

    package var description: String {
        if let sqlState { return "postgres \(code.rawValue) \(sqlState)" }
        return "postgres \(code.rawValue)"
    }

    package var debugDescription: String {
        var text = description + ": " + message
        if let query { text += " (query: \(query))" }
        return text
    }
}
