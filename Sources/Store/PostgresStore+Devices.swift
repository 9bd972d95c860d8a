import Postgres

extension PostgresStore {
    package func insertChallenge(_ challenge: String, expiresAtMilliseconds: Int64) async throws(StoreError) {
        try await query(
            "INSERT INTO attest_challenges (challenge, expires_at) VALUES ($1, $2)",
            [.text(challenge), .int(Int(expiresAtMilliseconds))]
        )
    }

    /// A second delete of the row waits for the first's commit, then finds it gone.
    package func consumeChallenge(_ challenge: String, nowMilliseconds: Int64) async throws(StoreError) -> Bool {
        try await query(
            "DELETE FROM attest_challenges WHERE challenge = $1 AND expires_at > $2",
            [.text(challenge), .int(Int(nowMilliseconds))]
        ).affectedRows == 1
    }

    package func insertDevice(_ device: StoredDevice) async throws(StoreError) -> Bool {
        try await registerDevice(device, limits: .none) == .registered
    }

    /// Registrations take turns on one advisory lock (they are rare), so the counts and the
    /// insert of one see every registration committed before it, on any gateway.
    package func registerDevice(_ device: StoredDevice, limits: DeviceRegistrationLimits) async throws(StoreError)
        -> DeviceRegistration
    {
        let results = try await transaction([
            PostgresQuery("SELECT pg_advisory_xact_lock(\(Self.deviceRegistrationLock))", []),
            PostgresQuery(
                """
                WITH existing AS (SELECT count(*) AS n FROM devices WHERE key_id = $2),
                by_client AS (
                    SELECT count(*) AS n FROM devices WHERE client = $12::bytea AND created_at >= $15
                ),
                by_all AS (SELECT count(*) AS n FROM devices WHERE created_at >= $15),
                inserted AS (
                    INSERT INTO devices (id, platform, key_id, public_key, counter, app_id, environment,
                        signing_digest, receipt, created_at, last_seen_at, client, revoked_at, risk_metric)
                    SELECT $1, $14, $2, $3, $4, $5, $6, $13::bytea, $7, $8, $9, $12::bytea, $10::bigint, $17::bigint
                    WHERE (SELECT n FROM existing) = 0
                        AND ($16::bigint IS NULL OR $12::bytea IS NULL OR (SELECT n FROM by_client) < $16::bigint)
                        AND ($11::bigint IS NULL OR (SELECT n FROM by_all) < $11::bigint)
                    ON CONFLICT (key_id) DO NOTHING
                    RETURNING 1
                )
                SELECT (SELECT n FROM existing), (SELECT n FROM by_client), (SELECT n FROM by_all),
                    (SELECT count(*) FROM inserted)
                """,
                [
                    .text(device.id), .bytes(device.keyID), .bytes(device.publicKey), .int(Int(device.counter)),
                    .text(device.appID), .text(device.environment), .bytes(device.receipt),
                    .int(Int(device.createdAtMilliseconds)), .int(Int(device.lastSeenAtMilliseconds)),
                    device.revokedAtMilliseconds.map { .int(Int($0)) } ?? .null, limits.total.map { .int($0) } ?? .null,
                    device.client.map { .bytes($0) } ?? .null, device.signingDigest.map { .bytes($0) } ?? .null,
                    .text(device.platform.rawValue), .int(Int(limits.sinceMilliseconds)),
                    limits.perClient.map { .int($0) } ?? .null, device.riskMetric.map { .int(Int($0)) } ?? .null,
                ]),
        ])
        guard let row = results.last?.rows.first else { return .duplicate }
        if row.int(3) == 1 { return .registered }
        if (row.int(0) ?? 0) > 0 { return .duplicate }
        if let perClient = limits.perClient, device.client != nil, (row.int(1) ?? 0) >= perClient {
            return .clientLimit
        }
        if let total = limits.total, (row.int(2) ?? 0) >= total { return .totalLimit }
        // The key id was taken between the count and the insert.
        return .duplicate
    }

    /// The advisory lock device registrations take turns on ("TGdevice").
    static let deviceRegistrationLock = 0x5447_6465_7669_6365

    package func recordRisk(deviceID: String, receipt: [UInt8], riskMetric: Int64?) async throws(StoreError) -> Bool {
        try await query(
            "UPDATE devices SET receipt = $1, risk_metric = $2 WHERE id = $3",
            [.bytes(receipt), riskMetric.map { .int(Int($0)) } ?? .null, .text(deviceID)]
        ).affectedRows == 1
    }

    package func device(keyID: [UInt8]) async throws(StoreError) -> StoredDevice? {
        try await query("SELECT \(Self.deviceColumns) FROM devices WHERE key_id = $1", [.bytes(keyID)]).rows.first.map(
            Self.device(from:))
    }

    /// Ids in byte order (`COLLATE "C"`), as SQLite orders them.
    package func devices() async throws(StoreError) -> [StoredDevice] {
        try await query("SELECT \(Self.deviceColumns) FROM devices ORDER BY created_at, id COLLATE \"C\"").rows.map(
            Self.device(from:))
    }

    /// The generation moves by trigger, in the same transaction.
    package func revokeDevice(id: String, atMilliseconds: Int64) async throws(StoreError) -> Bool {
        try await query(
            "UPDATE devices SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
            [.int(Int(atMilliseconds)), .text(id)]
        ).affectedRows > 0
    }

    /// One statement: the insert takes its row from the update, so it happens only when the
    /// update did. Of two at once with one counter, the second waits on the row's lock, then
    /// reads the raised counter again and updates nothing.
    package func openSession(
        _ session: StoredDeviceSession, deviceID: String, counter: Int64, nowMilliseconds: Int64
    ) async throws(StoreError) -> Bool {
        guard session.deviceID == deviceID else { throw .sessionOfAnotherDevice(store: name) }
        return try await query(
            """
            WITH raised AS (
                UPDATE devices SET counter = $1, last_seen_at = $2
                WHERE id = $3 AND counter < $1 AND revoked_at IS NULL RETURNING id
            )
            INSERT INTO device_sessions (digest, device_id, created_at, expires_at) SELECT $4, id, $5, $6 FROM raised
            """,
            [
                .int(Int(counter)), .int(Int(nowMilliseconds)), .text(deviceID), .bytes(session.digest),
                .int(Int(session.createdAtMilliseconds)), .int(Int(session.expiresAtMilliseconds)),
            ]
        ).affectedRows == 1
    }

    package func session(digest: [UInt8], nowMilliseconds: Int64) async throws(StoreError) -> StoredDeviceSession? {
        try await query(
            """
            SELECT s.digest, s.device_id, s.created_at, s.expires_at
            FROM device_sessions AS s JOIN devices AS d ON d.id = s.device_id
            WHERE s.digest = $1 AND s.expires_at > $2 AND d.revoked_at IS NULL
            """,
            [.bytes(digest), .int(Int(nowMilliseconds))]
        ).rows.first.map {
            StoredDeviceSession(
                digest: $0[0] ?? [], deviceID: $0.string(1) ?? "", createdAtMilliseconds: Int64($0.int(2) ?? 0),
                expiresAtMilliseconds: Int64($0.int(3) ?? 0)
            )
        }
    }

    package func deviceGeneration() async throws(StoreError) -> Int64 {
        Int64(try await query("SELECT value FROM store_meta WHERE key = 'device_generation'").rows.first?.int(0) ?? 0)
    }

    package func purgeExpiredChallengesAndSessions(nowMilliseconds: Int64) async throws(StoreError) -> (
        challenges: Int, sessions: Int
    ) {
        let challenges = try await deleteInBatches(
            """
            DELETE FROM attest_challenges WHERE challenge IN
                (SELECT challenge FROM attest_challenges WHERE expires_at <= $1 LIMIT \(Self.deletionBatch))
            """,
            [.int(Int(nowMilliseconds))]
        )
        let sessions = try await deleteInBatches(
            """
            DELETE FROM device_sessions WHERE digest IN
                (SELECT digest FROM device_sessions WHERE expires_at <= $1 LIMIT \(Self.deletionBatch))
            """,
            [.int(Int(nowMilliseconds))]
        )
        return (challenges, sessions)
    }

    private static let deviceColumns = """
        id, key_id, public_key, counter, app_id, environment, receipt, created_at, last_seen_at, revoked_at, platform,
        signing_digest, client, risk_metric
        """

    private static func device(from row: PostgresRow) -> StoredDevice {
        StoredDevice(
            id: row.string(0) ?? "", platform: row.string(10).flatMap(DevicePlatform.init(rawValue:)) ?? .ios,
            keyID: row[1] ?? [], publicKey: row[2] ?? [], counter: Int64(row.int(3) ?? 0), appID: row.string(4) ?? "",
            environment: row.string(5) ?? "", signingDigest: row[11], receipt: row[6] ?? [], client: row[12],
            riskMetric: row.int(13).map(Int64.init),
            createdAtMilliseconds: Int64(row.int(7) ?? 0), lastSeenAtMilliseconds: Int64(row.int(8) ?? 0),
            revokedAtMilliseconds: row.int(9).map(Int64.init)
        )
    }
}
