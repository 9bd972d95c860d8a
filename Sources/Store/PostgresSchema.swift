import Postgres

/// The store's tables on Postgres, versioned in `store_meta` (`schema_version`) and migrated
/// forward only. Every step runs in one transaction that first takes a transaction-scoped
/// advisory lock, so gateways starting at once against one database take turns: the first
/// migrates, the others find the version moved and have nothing to do.
enum PostgresSchema {
    /// Migration `n` (counting from 1) takes a store from version `n - 1` to `n`, one statement
    /// an element (the extended protocol takes one statement a query). Append only.
    static let migrations: [[String]] = [
        version1, version2, version3, version4, version5, version6, version7, version8, version9,
        version10,
    ]

    /// The version this binary writes.
    static var latestVersion: Int { migrations.count }

    /// The advisory lock every migration step holds (a constant of ours: "TGstore1").
    static let lockKey = 0x5447_7374_6F72_6531

    /// Brings the database to ``latestVersion``; throws ``StoreError/Code/newerSchema`` for a
    /// database a newer binary wrote. `timeout` bounds each step, waiting for the first
    /// connection included.
    /// `target` is for tests that make a database of an older version.
    static func migrate(_ client: PostgresClient, store: String, timeout: Duration, to target: Int = latestVersion)
        async throws(StoreError)
    {
        while true {
            let version: Int
            do {
                version =
                    try await run(client, timeout: timeout, preamble + [readVersion]).last?.rows.first?.int(0) ?? 0
            } catch {
                throw StoreError(postgres: error, store: store)
            }
            try refuseNewer(version, store: store)
            guard version < min(target, latestVersion) else { return }
            // The guard fails the step with 40001 when another gateway migrated between the
            // read and this step; the loop then reads the version again.
            let guardStatement = """
                DO $$ BEGIN
                    IF (SELECT value FROM store_meta WHERE key = 'schema_version') <> \(version) THEN
                        RAISE EXCEPTION 'the schema moved' USING ERRCODE = '40001';
                    END IF;
                END $$
                """
            let step =
                preamble + [guardStatement] + migrations[version]
                + ["UPDATE store_meta SET value = \(version + 1) WHERE key = 'schema_version'"]
            do {
                _ = try await run(client, timeout: timeout, step)
            } catch  where error.condition == .serializationFailure {
                continue
            } catch {
                throw StoreError(postgres: error, store: store)
            }
        }
    }

    /// Checks, without writing, that the database is at ``latestVersion`` (tools that only read).
    static func check(_ client: PostgresClient, store: String, timeout: Duration) async throws(StoreError) {
        let version: Int
        do {
            version = try await client.query(readVersion, timeout: timeout).rows.first?.int(0) ?? 0
        } catch  where error.condition == .undefinedTable {
            version = 0
        } catch {
            throw StoreError(postgres: error, store: store)
        }
        try refuseNewer(version, store: store)
        guard version == latestVersion else {
            throw StoreError(
                .readOnly,
                message: "\(store) has schema \(version), this binary needs \(latestVersion): "
                    + "start the gateway on it once to migrate it"
            )
        }
    }

    /// What every step starts with: the lock, then the version row, made when missing.
    private static let preamble = [
        "SELECT pg_advisory_xact_lock(\(lockKey))",
        "CREATE TABLE IF NOT EXISTS store_meta (key text PRIMARY KEY, value bigint NOT NULL)",
        "INSERT INTO store_meta (key, value) VALUES ('schema_version', 0) ON CONFLICT (key) DO NOTHING",
    ]

    private static let readVersion = "SELECT value FROM store_meta WHERE key = 'schema_version'"

    private static func run(_ client: PostgresClient, timeout: Duration, _ statements: [String])
        async throws(PostgresError) -> [PostgresResult]
    {
        try await client.transaction(statements.map { PostgresQuery($0) }, timeout: timeout)
    }

    private static func refuseNewer(_ version: Int, store: String) throws(StoreError) {
        guard version > latestVersion else { return }
        throw StoreError(
            .newerSchema(found: version, supported: latestVersion),
            message: "\(store) was written by a newer TextGateway "
                + "(schema \(version), this binary knows \(latestVersion)): upgrade the binary or restore a dump"
        )
    }

    /// The first schema: SQLite's, in Postgres's types. `seq` is an identity column, so
    /// history pages and cursors are made of it as on SQLite. `ledger_batches` keeps the id of
    /// every committed ledger batch for a while, so a batch sent again after its commit's
    /// answer was lost is recognized rather than stored twice (``PostgresStore``).
    private static let version1 = [
        """
        CREATE TABLE requests (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            request_id text NOT NULL,
            user_id text,
            task text,
            tone text,
            route text NOT NULL,
            model text,
            input_length bigint,
            input_tokens bigint,
            output_tokens bigint,
            status bigint NOT NULL,
            code text,
            outcome text NOT NULL,
            cache_hit boolean NOT NULL,
            duration_ms double precision NOT NULL,
            created_at bigint NOT NULL,
            result text
        )
        """,
        // Pages and items are an identified caller's own: a guest's row needs neither index.
        "CREATE INDEX requests_by_user ON requests (user_id, seq) WHERE user_id IS NOT NULL",
        "CREATE INDEX requests_by_request ON requests (request_id) WHERE user_id IS NOT NULL",
        "CREATE INDEX requests_by_created_at ON requests (created_at)",
        """
        CREATE TABLE usage_daily (
            user_id text NOT NULL,
            day bigint NOT NULL,
            requests bigint NOT NULL,
            input_tokens bigint NOT NULL,
            output_tokens bigint NOT NULL,
            PRIMARY KEY (user_id, day)
        )
        """,
        // For a day across users: the quotas at start, the report, retention.
        "CREATE INDEX usage_daily_by_day ON usage_daily (day, user_id)",
        """
        CREATE TABLE tokens (
            id text PRIMARY KEY,
            digest bytea NOT NULL UNIQUE CHECK (length(digest) = 32),
            user_id text NOT NULL,
            plan text NOT NULL,
            label text,
            created_at bigint NOT NULL,
            last_used_at bigint,
            revoked_at bigint
        )
        """,
        "INSERT INTO store_meta (key, value) VALUES ('token_generation', 0)",
        // The generation moves with every change to a token that matters to a gateway (added,
        // revoked, given to another user or plan, deleted), not with `last_used_at`.
        """
        CREATE FUNCTION tokens_generation_moves() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE store_meta SET value = value + 1 WHERE key = 'token_generation';
            RETURN NULL;
        END $$
        """,
        """
        CREATE TRIGGER tokens_added_or_deleted AFTER INSERT OR DELETE ON tokens
            FOR EACH ROW EXECUTE FUNCTION tokens_generation_moves()
        """,
        """
        CREATE TRIGGER tokens_changed AFTER UPDATE OF revoked_at, user_id, plan ON tokens FOR EACH ROW
            WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR OLD.user_id IS DISTINCT FROM NEW.user_id
                  OR OLD.plan IS DISTINCT FROM NEW.plan)
            EXECUTE FUNCTION tokens_generation_moves()
        """,
        "CREATE TABLE ledger_batches (id uuid PRIMARY KEY, committed_at timestamptz NOT NULL DEFAULT now())",
    ]

    /// Jobs and their items (``JobStore``), as on SQLite. `claim_id` marks the jobs one claim
    /// has locked, for the claim's second statement to find (`PostgresStore+Jobs.swift`); it is
    /// null between claims.
    private static let version2 = [
        """
        CREATE TABLE jobs (
            seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            id text PRIMARY KEY,
            owner_id text,
            caller_key text NOT NULL,
            plan text,
            request_id text NOT NULL,
            task text NOT NULL,
            tone text,
            format text NOT NULL,
            input_length bigint NOT NULL,
            status text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
            done bigint NOT NULL,
            total bigint NOT NULL,
            result text,
            data text,
            input_tokens bigint NOT NULL,
            output_tokens bigint NOT NULL,
            error_code text,
            error_message text,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            ended_at bigint,
            claim_id text
        )
        """,
        // Claims and stalled jobs walk one status oldest first; the statistics count by status.
        "CREATE INDEX jobs_by_status ON jobs (status, seq)",
        // The cap on jobs in flight counts a caller's.
        "CREATE INDEX jobs_by_caller ON jobs (caller_key, status)",
        "CREATE INDEX jobs_by_ended_at ON jobs (ended_at) WHERE ended_at IS NOT NULL",
        """
        CREATE TABLE job_items (
            job_id text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
            level bigint NOT NULL,
            idx bigint NOT NULL,
            kind text NOT NULL CHECK (kind IN ('map', 'reduce', 'final')),
            input text NOT NULL,
            source_start bigint NOT NULL,
            source_end bigint NOT NULL,
            answer text,
            data text,
            input_tokens bigint,
            output_tokens bigint,
            lease_owner text,
            lease_until bigint,
            attempts bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (job_id, level, idx)
        )
        """,
        // What is left to do: claims, leases counted per job, stalled jobs, the queue's depth.
        "CREATE INDEX job_items_unanswered ON job_items (job_id, level, idx) WHERE answer IS NULL",
    ]

    /// The store's own secrets, as on SQLite: made by the first gateway that opens the
    /// database (``PostgresStore/historyCursorKey``), the same for every gateway on it.
    private static let version3 = [
        "CREATE TABLE store_secrets (name text PRIMARY KEY, value bytea NOT NULL)"
    ]

    /// App Attest (``DeviceRepository``), as on SQLite: one-use challenges, devices and their
    /// sessions' token digests. `device_generation` moves when a device is revoked or deleted,
    /// not with `counter` or `last_seen_at`, which every session touches.
    private static let version4 = [
        "CREATE TABLE attest_challenges (challenge text PRIMARY KEY, expires_at bigint NOT NULL)",
        "CREATE INDEX attest_challenges_by_expiry ON attest_challenges (expires_at)",
        """
        CREATE TABLE devices (
            id text PRIMARY KEY,
            key_id bytea NOT NULL UNIQUE CHECK (length(key_id) = 32),
            public_key bytea NOT NULL CHECK (length(public_key) = 65),
            counter bigint NOT NULL CHECK (counter >= 0),
            app_id text NOT NULL,
            environment text NOT NULL CHECK (environment IN ('production', 'development')),
            receipt bytea NOT NULL,
            created_at bigint NOT NULL,
            last_seen_at bigint NOT NULL,
            revoked_at bigint
        )
        """,
        """
        CREATE TABLE device_sessions (
            digest bytea PRIMARY KEY CHECK (length(digest) = 32),
            device_id text NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
            created_at bigint NOT NULL,
            expires_at bigint NOT NULL
        )
        """,
        "CREATE INDEX device_sessions_by_expiry ON device_sessions (expires_at)",
        // Deleting a device finds its sessions by it.
        "CREATE INDEX device_sessions_by_device ON device_sessions (device_id)",
        "INSERT INTO store_meta (key, value) VALUES ('device_generation', 0)",
        """
        CREATE FUNCTION devices_generation_moves() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE store_meta SET value = value + 1 WHERE key = 'device_generation';
            RETURN NULL;
        END $$
        """,
        """
        CREATE TRIGGER devices_revoked AFTER UPDATE OF revoked_at ON devices FOR EACH ROW
            WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at)
            EXECUTE FUNCTION devices_generation_moves()
        """,
        """
        CREATE TRIGGER devices_deleted AFTER DELETE ON devices FOR EACH ROW
            EXECUTE FUNCTION devices_generation_moves()
        """,
    ]

    /// Idempotency-Key (``IdempotencyRepository``), as on SQLite: the primary key on (scope,
    /// key) is what makes gateways agree on who runs a request; a running row has no expiry
    /// and no answer, a completed one has both; the index serves the purge.
    private static let version5 = [
        """
        CREATE TABLE idempotency_keys (
            scope text NOT NULL,
            idem_key text NOT NULL,
            fingerprint bytea NOT NULL CHECK (length(fingerprint) = 32),
            request_id text NOT NULL,
            owner text NOT NULL,
            state text NOT NULL CHECK (state IN ('running', 'completed')),
            lease_until bigint NOT NULL,
            created_at bigint NOT NULL,
            expires_at bigint,
            status bigint,
            content_type text,
            upstream text,
            body bytea,
            text text,
            streamed boolean,
            replays bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (scope, idem_key),
            CHECK ((state = 'running') = (expires_at IS NULL)),
            CHECK (
                state = 'running'
                OR (status IS NOT NULL AND content_type IS NOT NULL AND body IS NOT NULL AND streamed IS NOT NULL)
            )
        )
        """,
        "CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (state, expires_at, lease_until)",
    ]

    /// The operator console (``AdminStore``), as on SQLite: the upstream and its time, the
    /// failures' index, the roll-ups filled from the rows already there.
    private static let version6 =
        [
            "ALTER TABLE requests ADD COLUMN upstream text, ADD COLUMN upstream_ms double precision",
            "CREATE INDEX requests_failures ON requests (seq) WHERE status >= 400",
        ] + RollupTables.create(.postgres) + RollupTables.backfill(.postgres)

    /// Android devices beside iPhones, as on SQLite: the platform, a public key that may be an
    /// Android key's SubjectPublicKeyInfo, the package's signing digest, the client a device
    /// registered from, with the indexes that count registrations, and an iPhone's risk metric.
    private static let version7 = [
        """
        ALTER TABLE devices DROP CONSTRAINT devices_public_key_check, DROP CONSTRAINT devices_environment_check,
            ADD COLUMN platform text NOT NULL DEFAULT 'ios' CHECK (platform IN ('ios', 'android')),
            ADD COLUMN signing_digest bytea,
            ADD COLUMN client bytea CHECK (client IS NULL OR length(client) = 32),
            ADD COLUMN risk_metric bigint,
            ADD CONSTRAINT devices_public_key_check CHECK (length(public_key) BETWEEN 65 AND 2048),
            ADD CONSTRAINT devices_shape CHECK (
                (platform = 'ios' AND environment IN ('production', 'development') AND length(public_key) = 65
                    AND signing_digest IS NULL)
                OR (platform = 'android' AND environment IN ('tee', 'strongbox')
                    AND signing_digest IS NOT NULL AND length(signing_digest) = 32)
            )
        """,
        "ALTER TABLE devices ALTER COLUMN platform DROP DEFAULT",
        "CREATE INDEX devices_by_creation ON devices (created_at)",
        "CREATE INDEX devices_by_client ON devices (client, created_at) WHERE client IS NOT NULL",
    ]

    /// What each request cost at `PRICES`, as on SQLite.
    private static let version8 = ["ALTER TABLE requests ADD COLUMN cost_micros bigint"]

    /// What requests cost in the days, the slots and the jobs, as on SQLite.
    private static let version9 = RollupTables.addCost(.postgres)

    /// The W3C `traceparent` of the traced request that made a job, as on SQLite.
    private static let version10 = ["ALTER TABLE jobs ADD COLUMN trace_parent text"]
}
