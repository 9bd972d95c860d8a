package import Postgres

/// `DATABASE_URL`: where the gateway keeps what must outlive the process.
package enum DatabaseLocation: Sendable, Equatable {
    /// Stateless: no history, no usage API, quotas in memory only.
    case off
    /// A SQLite file (relative paths are from the working directory); its directory is made
    /// when missing.
    case sqlite(path: String)
    /// A PostgreSQL database, shared by every gateway pointed at it.
    case postgres(PostgresConfiguration)

    /// The default: `sqlite:data/textgateway.sqlite`.
    package static let standard = DatabaseLocation.sqlite(path: "data/textgateway.sqlite")

    /// For the start's log line: `off`, `sqlite:<path>` or the Postgres URL with its password
    /// masked.
    var logDescription: String {
        switch self {
        case .off: "off"
        case .sqlite(let path): "sqlite:" + path
        case .postgres(let configuration): configuration.description
        }
    }

    /// Reads `off`, `sqlite:<path>` or `sqlite://<path>` (`sqlite:///abs/path` for an absolute
    /// one), or `postgres://user:password@host:port/database` (`postgresql://` too; see
    /// ``PostgresConfiguration/init(url:)`` for the query it may carry).
    package init(url text: String) throws(ConfigurationError) {
        let lower = text.lowercased()
        if lower == "off" {
            self = .off
            return
        }
        if lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://") {
            // The parser wants its scheme in lower case; the rest keeps its case (a password).
            let scheme = lower.hasPrefix("postgres://") ? "postgres://" : "postgresql://"
            do {
                self = .postgres(try PostgresConfiguration(url: scheme + text.dropFirst(scheme.count)))
            } catch {
                // Its message never carries the password.
                throw ConfigurationError(error.message)
            }
            return
        }
        let path: Substring
        if lower.hasPrefix("sqlite://") {
            path = text.dropFirst("sqlite://".count)
        } else if lower.hasPrefix("sqlite:") {
            path = text.dropFirst("sqlite:".count)
        } else {
            throw ConfigurationError("DATABASE_URL must be sqlite:<path>, postgres://… or off")
        }
        guard !path.isEmpty, !path.hasSuffix("/"), !path.utf8.contains(0) else {
            throw ConfigurationError("DATABASE_URL must name a file: sqlite:<path>")
        }
        self = .sqlite(path: String(path))
    }
}

/// `LEDGER_DURABILITY`: when a finished request's row is safe.
package enum LedgerDurability: String, Sendable, Equatable {
    /// The row is committed within a batch interval of the answer; `kill -9` may lose the
    /// last interval, `SIGTERM` loses nothing.
    case fast
    /// The answer waits for its row's commit.
    case strict
}
