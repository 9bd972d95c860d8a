extension SQLiteStore {
    package func insertChallenge(_ challenge: String, expiresAtMilliseconds: Int64) async throws(StoreError) {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> Void in
                try connection.execute(
                    "INSERT INTO attest_challenges (challenge, expires_at) VALUES (?, ?)",
                    [.text(challenge), .integer(expiresAtMilliseconds)]
                )
            }
        }
    }

    /// On the one writer, and across processes under the file's write lock: of two deletes of
    /// one row, the second finds nothing.
    package func consumeChallenge(_ challenge: String, nowMilliseconds: Int64) async throws(StoreError) -> Bool {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> Bool in
                try connection.execute(
                    "DELETE FROM attest_challenges WHERE challenge = ? AND expires_at > ?",
                    [.text(challenge), .integer(nowMilliseconds)]
                ) == 1
            }
        }
    }

    package func insertDevice(_ device: StoredDevice) async throws(StoreError) -> Bool {
        try await registerDevice(device, limits: .none) == .registered
    }

    /// On the one writer, so the counts and the insert see every registration before them.
    package func registerDevice(_ device: StoredDevice, limits: DeviceRegistrationLimits) async throws(StoreError)
        -> DeviceRegistration
    {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> DeviceRegistration in
                let exists =
                    try connection.queryFirst(
                        "SELECT 1 FROM devices WHERE key_id = ?", [.blob(device.keyID)]
                    ) { _ in true } ?? false
                if exists { return .duplicate }
                if let perClient = limits.perClient, let client = device.client {
                    let count =
                        try connection.queryFirst(
                            "SELECT count(*) FROM devices WHERE client = ? AND created_at >= ?",
                            [.blob(client), .integer(limits.sinceMilliseconds)]
                        ) { $0.int64(0) } ?? 0
                    if count >= Int64(perClient) { return .clientLimit }
                }
                if let total = limits.total {
                    let count =
                        try connection.queryFirst(
                            "SELECT count(*) FROM devices WHERE created_at >= ?", [.integer(limits.sinceMilliseconds)]
                        ) { $0.int64(0) } ?? 0
                    if count >= Int64(total) { return .totalLimit }
                }
                let inserted = try connection.execute(
                    """
                    INSERT INTO devices (id, platform, key_id, public_key, counter, app_id, environment,
                        signing_digest, receipt, client, risk_metric, created_at, last_seen_at, revoked_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key_id) DO NOTHING
                    """,
                    [
                        .text(device.id), .text(device.platform.rawValue), .blob(device.keyID),
                        .blob(device.publicKey), .integer(device.counter), .text(device.appID),
                        .text(device.environment), device.signingDigest.map { .blob($0) } ?? .null,
                        .blob(device.receipt), device.client.map { .blob($0) } ?? .null,
                        .integer(device.riskMetric), .integer(device.createdAtMilliseconds),
                        .integer(device.lastSeenAtMilliseconds),
                        .integer(device.revokedAtMilliseconds),
                    ]
                )
                return inserted == 1 ? .registered : .duplicate
            }
        }
    }

    package func recordRisk(deviceID: String, receipt: [UInt8], riskMetric: Int64?) async throws(StoreError) -> Bool {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> Bool in
                try connection.execute(
                    "UPDATE devices SET receipt = ?, risk_metric = ? WHERE id = ?",
                    [.blob(receipt), .integer(riskMetric), .text(deviceID)]
                ) == 1
            }
        }
    }

    package func device(keyID: [UInt8]) async throws(StoreError) -> StoredDevice? {
        try await read { connection throws(StoreError) in
            try connection.queryFirst("SELECT \(Self.deviceColumns) FROM devices WHERE key_id = ?", [.blob(keyID)]) {
                Self.device(from: $0)
            }
        }
    }

    package func devices() async throws(StoreError) -> [StoredDevice] {
        try await read { connection throws(StoreError) in
            var devices: [StoredDevice] = []
            try connection.query("SELECT \(Self.deviceColumns) FROM devices ORDER BY created_at, id") {
                devices.append(Self.device(from: $0))
            }
            return devices
        }
    }

    /// The generation moves by trigger, in the same statement.
    package func revokeDevice(id: String, atMilliseconds: Int64) async throws(StoreError) -> Bool {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                try connection.execute(
                    "UPDATE devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                    [.integer(atMilliseconds), .text(id)]
                ) > 0
            }
        }
    }

    package func openSession(
        _ session: StoredDeviceSession, deviceID: String, counter: Int64, nowMilliseconds: Int64
    ) async throws(StoreError) -> Bool {
        guard session.deviceID == deviceID else { throw .sessionOfAnotherDevice(store: path) }
        return try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> Bool in
                let raised = try connection.execute(
                    """
                    UPDATE devices SET counter = ?, last_seen_at = ?
                    WHERE id = ? AND counter < ? AND revoked_at IS NULL
                    """,
                    [.integer(counter), .integer(nowMilliseconds), .text(deviceID), .integer(counter)]
                )
                guard raised == 1 else { return false }
                try connection.execute(
                    "INSERT INTO device_sessions (digest, device_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                    [
                        .blob(session.digest), .text(deviceID), .integer(session.createdAtMilliseconds),
                        .integer(session.expiresAtMilliseconds),
                    ]
                )
                return true
            }
        }
    }

    package func session(digest: [UInt8], nowMilliseconds: Int64) async throws(StoreError) -> StoredDeviceSession? {
        try await read { connection throws(StoreError) in
            try connection.queryFirst(
                """
                SELECT s.digest, s.device_id, s.created_at, s.expires_at
                FROM device_sessions AS s JOIN devices AS d ON d.id = s.device_id
                WHERE s.digest = ? AND s.expires_at > ? AND d.revoked_at IS NULL
                """,
                [.blob(digest), .integer(nowMilliseconds)]
            ) {
                StoredDeviceSession(
                    digest: $0.blob(0), deviceID: $0.text(1), createdAtMilliseconds: $0.int64(2),
                    expiresAtMilliseconds: $0.int64(3))
            }
        }
    }

    package func deviceGeneration() async throws(StoreError) -> Int64 {
        try await read { connection throws(StoreError) in
            try connection.queryFirst("SELECT value FROM store_meta WHERE key = 'device_generation'") { $0.int64(0) }
                ?? 0
        }
    }

    package func purgeExpiredChallengesAndSessions(nowMilliseconds: Int64) async throws(StoreError) -> (
        challenges: Int, sessions: Int
    ) {
        let counts = try await onPool { () throws(StoreError) -> [Int] in
            let challenges = try self.deleteInBatches(
                """
                DELETE FROM attest_challenges WHERE challenge IN
                    (SELECT challenge FROM attest_challenges WHERE expires_at <= ? LIMIT \(Self.deletionBatch))
                """,
                [.integer(nowMilliseconds)]
            )
            let sessions = try self.deleteInBatches(
                """
                DELETE FROM device_sessions WHERE digest IN
                    (SELECT digest FROM device_sessions WHERE expires_at <= ? LIMIT \(Self.deletionBatch))
                """,
                [.integer(nowMilliseconds)]
            )
            return [challenges, sessions]
        }
        return (counts[0], counts[1])
    }

    private static let deviceColumns = """
        id, key_id, public_key, counter, app_id, environment, receipt, created_at, last_seen_at, revoked_at, platform,
        signing_digest, client, risk_metric
        """

    private static func device(from row: borrowing SQLiteRow) -> StoredDevice {
        StoredDevice(
            id: row.text(0), platform: DevicePlatform(rawValue: row.text(10)) ?? .ios, keyID: row.blob(1),
            publicKey: row.blob(2), counter: row.int64(3), appID: row.text(4), environment: row.text(5),
            signingDigest: row.optionalBlob(11), receipt: row.blob(6), client: row.optionalBlob(12),
            riskMetric: row.optionalInt64(13),
            createdAtMilliseconds: row.int64(7), lastSeenAtMilliseconds: row.int64(8),
            revokedAtMilliseconds: row.optionalInt64(9)
        )
    }
}
