/// The store's tables, versioned by `PRAGMA user_version` and migrated forward only: each
/// migration runs in one `BEGIN IMMEDIATE` transaction together with the version bump, so a
/// store is always at exactly one version.
enum StoreSchema {
    /// Migration `n` (counting from 1) takes a store from version `n - 1` to `n`. Append
    /// only: a shipped migration never changes.
    static let migrations: [String] = [
        version1, version2, version3, version4, version5, version6, version7, version8, version9,
        version10,
    ]

    /// The version this binary writes.
    static var latestVersion: Int { migrations.count }

    /// Brings the store on `connection` to ``latestVersion``. The version is read inside
    /// each migration's transaction, so two processes starting at once migrate once.
    /// With nothing to migrate, the empty transaction still proves the file can be locked
    /// for writing.
    /// `target` is for tests that make a store of an older version.
    static func migrate(_ connection: SQLiteConnection, to target: Int = latestVersion) throws(StoreError) {
        while try connection.transaction({ () throws(StoreError) -> Bool in
            let version = try storedVersion(connection)
            try refuseNewer(version, path: connection.path)
            guard version < min(target, latestVersion) else { return false }
            try connection.executeScript(migrations[version])
            // A pragma takes no bound value; the number is ours.
            try connection.execute("PRAGMA user_version = \(version + 1)")
            return true
        }) {}
    }

    /// Checks, without writing, that a store opened read-only is at ``latestVersion``.
    static func checkReadOnly(_ connection: SQLiteConnection) throws(StoreError) {
        let version = try storedVersion(connection)
        try refuseNewer(version, path: connection.path)
        guard version == latestVersion else {
            throw StoreError(
                .readOnly,
                message: "\(connection.path) has schema \(version), this binary needs \(latestVersion): "
                    + "open it once for writing to migrate it"
            )
        }
    }

    /// Reads the schema, then the first pages of every table and index, so that a file that
    /// is not a database or is damaged where a b-tree starts fails here, at open, rather than
    /// at the first request. Each read is one short descent, whatever the store's size.
    static func probe(_ connection: SQLiteConnection) throws(StoreError) {
        var tables: [String] = []
        try connection.query("SELECT name FROM sqlite_schema WHERE type = 'table'") { tables.append($0.text(0)) }
        var indexes: [(table: String, index: String)] = []
        try connection.query(
            """
            SELECT s.name, l.name FROM sqlite_schema AS s, pragma_index_list(s.name) AS l
            WHERE s.type = 'table' AND l.partial = 0
            """
        ) { indexes.append(($0.text(0), $0.text(1))) }
        // Without the clauses, a query that needs no column would scan an index and never
        // read the table. Run once, so not cached.
        let reads =
            tables.map { "SELECT 1 FROM \(quoted($0)) NOT INDEXED LIMIT 1;" }
            + indexes.map { "SELECT 1 FROM \(quoted($0.table)) INDEXED BY \(quoted($0.index)) LIMIT 1;" }
        try connection.executeScript(reads.joined(separator: "\n"))
    }

    private static func quoted(_ name: String) -> String {
        "\"" + name.replacing("\"", with: "\"\"") + "\""
    }

    private static func storedVersion(_ connection: SQLiteConnection) throws(StoreError) -> Int {
        try connection.queryFirst("PRAGMA user_version") { $0.int(0) } ?? 0
    }

    private static func refuseNewer(_ version: Int, path: String) throws(StoreError) {
        guard version > latestVersion else { return }
        throw StoreError(
            .newerSchema(found: version, supported: latestVersion),
            message: "\(path) was written by a newer TextGateway "
                + "(schema \(version), this binary knows \(latestVersion)): upgrade the binary or restore a backup"
        )
    }

    /// The first schema. `seq` is the rowid: history pages and cursors are made of it.
    /// `token_generation` moves with every change to a token that matters to a gateway
    /// (added, revoked, given to another user or plan, deleted), and not with `last_used_at`,
    /// which the ledger writer touches all the time.
    private static let version1 = """
        CREATE TABLE requests (
            seq INTEGER PRIMARY KEY,
            request_id TEXT NOT NULL,
            user_id TEXT,
            task TEXT,
            tone TEXT,
            route TEXT NOT NULL,
            model TEXT,
            input_length INTEGER,
            input_tokens INTEGER,
            output_tokens INTEGER,
            status INTEGER NOT NULL,
            code TEXT,
            outcome TEXT NOT NULL,
            cache_hit INTEGER NOT NULL,
            duration_ms REAL NOT NULL,
            created_at INTEGER NOT NULL,
            result TEXT
        ) STRICT;
        -- Pages and items are an identified caller's own: a guest's row needs neither index.
        -- Request ids the gateway makes grow with time, so their index is appended to.
        CREATE INDEX requests_by_user ON requests (user_id, seq) WHERE user_id IS NOT NULL;
        CREATE INDEX requests_by_request ON requests (request_id) WHERE user_id IS NOT NULL;
        CREATE INDEX requests_by_created_at ON requests (created_at);

        CREATE TABLE usage_daily (
            user_id TEXT NOT NULL,
            day INTEGER NOT NULL,
            requests INTEGER NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            PRIMARY KEY (user_id, day)
        ) STRICT, WITHOUT ROWID;
        -- For a day across users: the quotas at start, the report, retention.
        CREATE INDEX usage_daily_by_day ON usage_daily (day, user_id);

        CREATE TABLE tokens (
            id TEXT PRIMARY KEY,
            digest BLOB NOT NULL UNIQUE CHECK (length(digest) = 32),
            user_id TEXT NOT NULL,
            plan TEXT NOT NULL,
            label TEXT,
            created_at INTEGER NOT NULL,
            last_used_at INTEGER,
            revoked_at INTEGER
        ) STRICT;

        CREATE TABLE store_meta (
            key TEXT PRIMARY KEY,
            value INTEGER NOT NULL
        ) STRICT;
        INSERT INTO store_meta (key, value) VALUES ('token_generation', 0);

        CREATE TRIGGER tokens_inserted AFTER INSERT ON tokens BEGIN
            UPDATE store_meta SET value = value + 1 WHERE key = 'token_generation';
        END;
        CREATE TRIGGER tokens_changed AFTER UPDATE OF revoked_at, user_id, plan ON tokens BEGIN
            UPDATE store_meta SET value = value + 1 WHERE key = 'token_generation';
        END;
        CREATE TRIGGER tokens_deleted AFTER DELETE ON tokens BEGIN
            UPDATE store_meta SET value = value + 1 WHERE key = 'token_generation';
        END;
        """

    /// Jobs and their items (``JobStore``). `seq` orders jobs oldest first, whatever the
    /// clocks of the gateways that made them. Items go with their job: the writer has
    /// foreign keys on, so deleting a job deletes them.
    private static let version2 = """
        CREATE TABLE jobs (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            owner_id TEXT,
            caller_key TEXT NOT NULL,
            plan TEXT,
            request_id TEXT NOT NULL,
            task TEXT NOT NULL,
            tone TEXT,
            format TEXT NOT NULL,
            input_length INTEGER NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
            done INTEGER NOT NULL,
            total INTEGER NOT NULL,
            result TEXT,
            data TEXT,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            error_code TEXT,
            error_message TEXT,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            ended_at INTEGER
        ) STRICT;
        -- Claims and stalled jobs walk one status oldest first; the statistics count by status.
        CREATE INDEX jobs_by_status ON jobs (status, seq);
        -- The cap on jobs in flight counts a caller's.
        CREATE INDEX jobs_by_caller ON jobs (caller_key, status);
        CREATE INDEX jobs_by_ended_at ON jobs (ended_at) WHERE ended_at IS NOT NULL;

        CREATE TABLE job_items (
            job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
            level INTEGER NOT NULL,
            idx INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('map', 'reduce', 'final')),
            input TEXT NOT NULL,
            source_start INTEGER NOT NULL,
            source_end INTEGER NOT NULL,
            answer TEXT,
            data TEXT,
            input_tokens INTEGER,
            output_tokens INTEGER,
            lease_owner TEXT,
            lease_until INTEGER,
            attempts INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (job_id, level, idx)
        ) STRICT;
        -- What is left to do: claims, leases counted per job, stalled jobs, the queue's depth.
        CREATE INDEX job_items_unanswered ON job_items (job_id, level, idx) WHERE answer IS NULL;
        """

    /// The store's own secrets, one row each, made by the first process that opens the store
    /// for writing (``SQLiteStore/historyCursorKey``): the values are random, so they are
    /// inserted from Swift rather than by this script.
    private static let version3 = """
        CREATE TABLE store_secrets (
            name TEXT PRIMARY KEY,
            value BLOB NOT NULL
        ) STRICT;
        """

    /// App Attest (``DeviceRepository``): one-use challenges, devices and their sessions'
    /// token digests. Sessions go with their device: the writer has foreign keys on.
    /// `device_generation` moves when a device is revoked or deleted, so gateways forget the
    /// sessions they cached; not with `counter` or `last_seen_at`, which every session touches.
    private static let version4 = """
        CREATE TABLE attest_challenges (
            challenge TEXT PRIMARY KEY,
            expires_at INTEGER NOT NULL
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX attest_challenges_by_expiry ON attest_challenges (expires_at);

        CREATE TABLE devices (
            id TEXT PRIMARY KEY,
            key_id BLOB NOT NULL UNIQUE CHECK (length(key_id) = 32),
            public_key BLOB NOT NULL CHECK (length(public_key) = 65),
            counter INTEGER NOT NULL CHECK (counter >= 0),
            app_id TEXT NOT NULL,
            environment TEXT NOT NULL CHECK (environment IN ('production', 'development')),
            receipt BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            last_seen_at INTEGER NOT NULL,
            revoked_at INTEGER
        ) STRICT;

        CREATE TABLE device_sessions (
            digest BLOB PRIMARY KEY CHECK (length(digest) = 32),
            device_id TEXT NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX device_sessions_by_expiry ON device_sessions (expires_at);
        -- Deleting a device finds its sessions by it.
        CREATE INDEX device_sessions_by_device ON device_sessions (device_id);

        INSERT INTO store_meta (key, value) VALUES ('device_generation', 0);
        CREATE TRIGGER devices_revoked AFTER UPDATE OF revoked_at ON devices
            WHEN OLD.revoked_at IS NOT NEW.revoked_at BEGIN
            UPDATE store_meta SET value = value + 1 WHERE key = 'device_generation';
        END;
        CREATE TRIGGER devices_deleted AFTER DELETE ON devices BEGIN
            UPDATE store_meta SET value = value + 1 WHERE key = 'device_generation';
        END;
        """

    /// Idempotency-Key (``IdempotencyRepository``): one row per (scope, key), whose primary
    /// key is what makes two gateways agree on who runs a request. A running row has no
    /// expiry and no answer; a completed one has both (the checks hold it so, and the purge
    /// relies on it). A rowid table: bodies may be large. The index serves the purge of both
    /// kinds of dead rows: expired answers by (state, expires_at), ended leases by (state,
    /// expires_at IS NULL, lease_until).
    private static let version5 = """
        CREATE TABLE idempotency_keys (
            scope TEXT NOT NULL,
            idem_key TEXT NOT NULL,
            fingerprint BLOB NOT NULL CHECK (length(fingerprint) = 32),
            request_id TEXT NOT NULL,
            owner TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('running', 'completed')),
            lease_until INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            expires_at INTEGER,
            status INTEGER,
            content_type TEXT,
            upstream TEXT,
            body BLOB,
            text TEXT,
            streamed INTEGER CHECK (streamed IN (0, 1)),
            replays INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (scope, idem_key),
            CHECK ((state = 'running') = (expires_at IS NULL)),
            CHECK (
                state = 'running'
                OR (status IS NOT NULL AND content_type IS NOT NULL AND body IS NOT NULL AND streamed IS NOT NULL)
            )
        ) STRICT;
        CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (state, expires_at, lease_until);
        """

    /// The operator console (``AdminStore``): which upstream answered and how long it took,
    /// the failures' index (the console's latest failures, newest first), and the roll-ups,
    /// filled at once from the rows already there.
    private static let version6 =
        """
        ALTER TABLE requests ADD COLUMN upstream TEXT;
        ALTER TABLE requests ADD COLUMN upstream_ms REAL;
        CREATE INDEX requests_failures ON requests (seq) WHERE status >= 400;
        """ + (RollupTables.create(.sqlite) + RollupTables.backfill(.sqlite)).map { $0 + ";\n" }.joined()

    /// Android devices beside iPhones: the platform, a public key that may be an Android
    /// key's SubjectPublicKeyInfo, the package's signing digest, the client a device
    /// registered from (a SHA-256, for the daily registration limits, with the indexes that
    /// count them), and an iPhone's risk metric from Apple. SQLite cannot change a CHECK in
    /// place: the table is rebuilt, its sessions moved with it (dropping the sessions first,
    /// so no cascade deletes them).
    private static let version7 = """
        CREATE TABLE devices_v7 (
            id TEXT PRIMARY KEY,
            platform TEXT NOT NULL CHECK (platform IN ('ios', 'android')),
            key_id BLOB NOT NULL UNIQUE CHECK (length(key_id) = 32),
            public_key BLOB NOT NULL CHECK (length(public_key) BETWEEN 65 AND 2048),
            counter INTEGER NOT NULL CHECK (counter >= 0),
            app_id TEXT NOT NULL,
            environment TEXT NOT NULL,
            signing_digest BLOB,
            receipt BLOB NOT NULL,
            client BLOB CHECK (client IS NULL OR length(client) = 32),
            risk_metric INTEGER,
            created_at INTEGER NOT NULL,
            last_seen_at INTEGER NOT NULL,
            revoked_at INTEGER,
            CHECK (
                (platform = 'ios' AND environment IN ('production', 'development') AND length(public_key) = 65
                    AND signing_digest IS NULL)
                OR (platform = 'android' AND environment IN ('tee', 'strongbox')
                    AND signing_digest IS NOT NULL AND length(signing_digest) = 32)
            )
        ) STRICT;
        INSERT INTO devices_v7 (id, platform, key_id, public_key, counter, app_id, environment, signing_digest,
            receipt, client, created_at, last_seen_at, revoked_at)
            SELECT id, 'ios', key_id, public_key, counter, app_id, environment, NULL, receipt, NULL, created_at,
                last_seen_at, revoked_at
            FROM devices;
        CREATE TABLE device_sessions_v7 (
            digest BLOB PRIMARY KEY CHECK (length(digest) = 32),
            device_id TEXT NOT NULL REFERENCES devices_v7 (id) ON DELETE CASCADE,
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL
        ) STRICT, WITHOUT ROWID;
        INSERT INTO device_sessions_v7 (digest, device_id, created_at, expires_at)
            SELECT digest, device_id, created_at, expires_at FROM device_sessions;
        DROP TABLE device_sessions;
        DROP TABLE devices;
        ALTER TABLE devices_v7 RENAME TO devices;
        ALTER TABLE device_sessions_v7 RENAME TO device_sessions;
        CREATE INDEX device_sessions_by_expiry ON device_sessions (expires_at);
        CREATE INDEX device_sessions_by_device ON device_sessions (device_id);
        CREATE INDEX devices_by_creation ON devices (created_at);
        CREATE INDEX devices_by_client ON devices (client, created_at) WHERE client IS NOT NULL;
        CREATE TRIGGER devices_revoked AFTER UPDATE OF revoked_at ON devices
            WHEN OLD.revoked_at IS NOT NEW.revoked_at BEGIN
            UPDATE store_meta SET value = value + 1 WHERE key = 'device_generation';
        END;
        CREATE TRIGGER devices_deleted AFTER DELETE ON devices BEGIN
            UPDATE store_meta SET value = value + 1 WHERE key = 'device_generation';
        END;
        """

    /// What each request cost at `PRICES` (millionths of the currency's unit; null: unknown).
    private static let version8 = """
        ALTER TABLE requests ADD COLUMN cost_micros INTEGER;
        """

    /// What requests cost in the days, the slots and the jobs (``RollupTables/addCost(_:)``).
    private static let version9 = RollupTables.addCost(.sqlite).map { $0 + ";\n" }.joined()

    /// The W3C `traceparent` of the traced request that made a job (null: none, or made before
    /// this version), so that its chunks, run later by any instance, join that trace.
    private static let version10 = """
        ALTER TABLE jobs ADD COLUMN trace_parent TEXT;
        """
}
