/// `DATABASE_URL`: where the gateway keeps what must outlive the process.
public enum DatabaseLocation: Sendable, Equatable {
    /// Stateless: no history, no usage API, quotas in memory only.
    case off
    /// A SQLite file (relative paths are from the working directory); its directory is made
    /// when missing.
    case sqlite(path: String)

    /// The default: `sqlite:data/textgateway.sqlite`.
    public static let standard = DatabaseLocation.sqlite(path: "data/textgateway.sqlite")

    /// For the start's log line: `off` or `sqlite:<path>`.
    var logDescription: String {
        switch self {
        case .off: "off"
        case .sqlite(let path): "sqlite:" + path
        }
    }

    /// Reads `off`, `sqlite:<path>` or `sqlite://<path>` (`sqlite:///abs/path` for an absolute one).
    public init(url text: String) throws(ConfigurationError) {
        let lower = text.lowercased()
        if lower == "off" {
            self = .off
            return
        }
        if lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://") {
            throw ConfigurationError("DATABASE_URL: this version keeps its store in SQLite only (sqlite:<path>) or nowhere (off)")
        }
        let path: Substring
        if lower.hasPrefix("sqlite://") {
            path = text.dropFirst("sqlite://".count)
        } else if lower.hasPrefix("sqlite:") {
            path = text.dropFirst("sqlite:".count)
        } else {
            throw ConfigurationError("DATABASE_URL must be sqlite:<path> or off")
        }
        guard !path.isEmpty, !path.hasSuffix("/"), !path.utf8.contains(0) else {
            throw ConfigurationError("DATABASE_URL must name a file: sqlite:<path>")
        }
        self = .sqlite(path: String(path))
    }
}

/// `LEDGER_DURABILITY`: when a finished request's row is safe.
public enum LedgerDurability: String, Sendable, Equatable {
    /// The row is committed within a batch interval of the answer; `kill -9` may lose the
    /// last interval, `SIGTERM` loses nothing.
    case fast
    /// The answer waits for its row's commit.
    case strict
}
