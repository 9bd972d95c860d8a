package import EventLoop

#if canImport(Glibc)
    import Glibc
#endif

extension SQLiteStore {
    /// Opens the store at `path`, creating it (and its missing directories) when it does not
    /// exist, and migrates it to ``schemaVersion``.
    ///
    /// Everything that would make the store unusable fails here rather than at the first
    /// request: a file that is not a database or is damaged, a schema from a newer binary, a
    /// read-only file or directory, and another process holding the write lock for longer
    /// than `busyTimeout`. Every error names the file.
    ///
    /// - Parameters:
    ///   - pool: where all of the store's SQLite work runs.
    ///   - busyTimeout: how long a statement waits for another connection's lock.
    ///   - readOnly: for tools that only read: the file must exist at the current schema, and
    ///     every write throws ``StoreError/Code/readOnly``.
    package static func open(
        path: String, pool: BlockingPool, busyTimeout: Duration = .seconds(5), readOnly: Bool = false
    ) async throws(StoreError) -> SQLiteStore {
        try await onPool(pool, path: path) { () throws(StoreError) -> SQLiteStore in
            if !readOnly {
                try createParentDirectory(of: path)
                try createPrivateFile(path)
            }
            let connection = try SQLiteConnection(
                path: path, mode: readOnly ? .readOnly : .readWrite, busyTimeout: busyTimeout)
            let key: [UInt8]
            do throws(StoreError) {
                if readOnly {
                    try StoreSchema.probe(connection)
                    try StoreSchema.checkReadOnly(connection)
                } else {
                    try prepareWriter(connection)
                }
                key = try historyCursorKey(connection, create: !readOnly)
            } catch {
                connection.close()
                throw error
            }
            return SQLiteStore(
                path: path, pool: pool, busyTimeout: busyTimeout, writer: connection, historyCursorKey: key)
        }
    }

    private static func prepareWriter(_ connection: SQLiteConnection) throws(StoreError) {
        // SQLite quietly opens a file it may not write read-only; say so now.
        guard !connection.isReadOnly else {
            throw StoreError(
                .readOnly,
                message: "\(connection.path) cannot be written (its permissions, flags or file system): "
                    + "the store needs to write it"
            )
        }
        let mode = try connection.queryFirst("PRAGMA journal_mode = WAL") { $0.text(0) }
        guard mode?.lowercased() == "wal" else {
            throw StoreError(
                .cannotOpen,
                message: "\(connection.path) cannot use write-ahead logging "
                    + "(journal_mode answered '\(mode ?? "nothing")'): the store needs a local file system"
            )
        }
        // In WAL mode, NORMAL loses no commit to a process crash, only the last ones to a
        // power cut, and spares an fsync per commit.
        try connection.execute("PRAGMA synchronous = NORMAL")
        try connection.execute("PRAGMA foreign_keys = ON")
        // The writer's batches touch a leaf of each index per user: a page cache of 16 MiB
        // keeps them. Its commits never checkpoint: ``checkpoint()`` does, on a connection of
        // its own (the last connection to close checkpoints too).
        try connection.execute("PRAGMA cache_size = -16384")
        try connection.execute("PRAGMA wal_autocheckpoint = 0")
        try StoreSchema.probe(connection)
        try StoreSchema.migrate(connection)
    }

    /// The store's history cursor key, made first when `create` and the store has none. Two
    /// processes opening a new store at once both insert; the first insert wins and both read it.
    private static func historyCursorKey(_ connection: SQLiteConnection, create: Bool) throws(StoreError) -> [UInt8] {
        if create {
            try connection.execute(
                "INSERT OR IGNORE INTO store_secrets (name, value) VALUES ('history_cursor', ?)",
                [.blob(SystemRandom.bytes(32))]
            )
        }
        return try connection.queryFirst("SELECT value FROM store_secrets WHERE name = 'history_cursor'") { $0.blob(0) }
            ?? []
    }

    /// Creates the store's file, empty, when nothing is there, readable and writable by its
    /// owner only (0600) whatever the umask: SQLite would make it 0644 less the umask, and it
    /// gives the `-wal` and `-shm` files the main file's mode. An existing file keeps its
    /// mode; a file that cannot be made is left for SQLite's open to report.
    private static func createPrivateFile(_ path: String) throws(StoreError) {
        guard !path.isEmpty, !path.utf8.contains(0) else { return }
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        defer { Glibc.close(fd) }
        try restrictToOwner(fd, path: path)
    }

    /// Sets an open file's mode to 0600, past what the umask let `open` give it.
    static func restrictToOwner(_ fd: CInt, path: String) throws(StoreError) {
        guard fchmod(fd, 0o600) == 0 else {
            let failure = IOError(errnoCode: errno, reason: "fchmod \(path)")
            throw StoreError(.cannotOpen, message: "\(path): cannot make it readable by its owner only: \(failure)")
        }
    }

    /// Creates the directories missing above `path`, readable by their owner only (0700):
    /// the store holds who asked what and, when kept, the answers. Existing directories are
    /// left as they are.
    private static func createParentDirectory(of path: String) throws(StoreError) {
        guard let slash = path.lastIndex(of: "/") else { return }
        let directory = String(path[..<slash])
        guard !directory.isEmpty, !path.utf8.contains(0) else { return }
        var status = stat()
        if stat(directory, &status) == 0 { return }
        try createParentDirectory(of: directory)
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            let failure = IOError(errnoCode: errno, reason: "mkdir \(directory)")
            throw StoreError(.cannotOpen, message: "\(path): cannot create its directory: \(failure)")
        }
    }
}
