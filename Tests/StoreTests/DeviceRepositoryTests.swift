import EventLoop
import Postgres
import TestSupport
import Testing

@testable import Store

extension StoreBackends {
    @Suite("store: App Attest devices, challenges and sessions")
    struct DeviceRepositoryTests {
        static func device(
            _ id: String, keyByte: UInt8, at milliseconds: Int64 = 1_000, environment: String = "production"
        ) -> StoredDevice {
            StoredDevice(
                id: id, keyID: [UInt8](repeating: keyByte, count: 32),
                publicKey: [0x04] + [UInt8](repeating: keyByte, count: 64), counter: 0,
                appID: "TEAMID1234.com.example.app", environment: environment, receipt: [0x30, 0x80, keyByte],
                createdAtMilliseconds: milliseconds,
                lastSeenAtMilliseconds: milliseconds
            )
        }

        static func session(
            _ digestByte: UInt8, device: String, at milliseconds: Int64 = 2_000, expires: Int64 = 10_000
        ) -> StoredDeviceSession {
            StoredDeviceSession(
                digest: [UInt8](repeating: digestByte, count: 32), deviceID: device,
                createdAtMilliseconds: milliseconds, expiresAtMilliseconds: expires
            )
        }

        /// Adds `device`, which must be new.
        static func register(
            _ device: StoredDevice, in store: any StoreBackend, sourceLocation: SourceLocation = #_sourceLocation
        ) async throws {
            let inserted = try await store.insertDevice(device)
            #expect(inserted, sourceLocation: sourceLocation)
        }

        /// `work` at once on eight stores of `store`'s database (`store` first), each with
        /// connections of its own; what they all returned, in store order.
        static func onEightStores<T: Sendable>(
            _ store: any StoreBackend, _ fixture: StoreFixture,
            _ work: @escaping @Sendable (Int, any StoreBackend) async throws -> T
        ) async throws -> [T] {
            var stores: [any StoreBackend] = [store]
            var closers: [() async -> Void] = []
            func closeAll() async { for close in closers { await close() } }
            do {
                for _ in 1..<8 {
                    let (other, close) = try await fixture.openAnother()
                    stores.append(other)
                    closers.append(close)
                }
                let results = try await withThrowingTaskGroup(of: (Int, T).self) { tasks in
                    for (index, each) in stores.enumerated() { tasks.addTask { (index, try await work(index, each)) } }
                    return try await tasks.reduce(into: [(Int, T)]()) { $0.append($1) }
                }
                await closeAll()
                return results.sorted { $0.0 < $1.0 }.map(\.1)
            } catch {
                await closeAll()
                throw error
            }
        }

        @Test(
            "a challenge is good once, only before it expires; a challenge kept twice is a constraint error",
            arguments: Backend.allCases)
        func challengeOnce(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                try await store.insertChallenge("c1", expiresAtMilliseconds: 5_000)
                #expect(try await store.consumeChallenge("c1", nowMilliseconds: 4_999))
                #expect(try await store.consumeChallenge("c1", nowMilliseconds: 4_999) == false)
                #expect(try await store.consumeChallenge("never-given", nowMilliseconds: 1) == false)

                try await store.insertChallenge("c2", expiresAtMilliseconds: 5_000)
                #expect(try await store.consumeChallenge("c2", nowMilliseconds: 5_000) == false)
                #expect(try await store.consumeChallenge("c2", nowMilliseconds: 6_000) == false)
                // The refusals were the expiry's: the challenge was there all along.
                #expect(try await store.consumeChallenge("c2", nowMilliseconds: 4_000))

                try await store.insertChallenge("c3", expiresAtMilliseconds: 5_000)
                let taken = await storeError { () throws(StoreError) in
                    try await store.insertChallenge("c3", expiresAtMilliseconds: 9_000)
                }
                #expect(taken?.code == .constraint)
            }
        }

        @Test("of eight stores consuming one challenge at once, exactly one gets it", arguments: Backend.allCases)
        func concurrentConsume(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let challenges = (0..<5).map { "race-\($0)" }
                for challenge in challenges { try await store.insertChallenge(challenge, expiresAtMilliseconds: 9_000) }
                let wins = try await Self.onEightStores(store, fixture) { _, each in
                    var wins: [String] = []
                    for challenge in challenges {
                        if try await each.consumeChallenge(challenge, nowMilliseconds: 1_000) { wins.append(challenge) }
                    }
                    return wins
                }
                #expect(wins.flatMap { $0 }.sorted() == challenges)
            }
        }

        @Test(
            "a device reads back by key id; a second with its key id is refused and writes nothing",
            arguments: Backend.allCases)
        func insertDevice(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                let first = Self.device("dev_a", keyByte: 1)
                try await Self.register(first, in: store)
                #expect(try await store.device(keyID: first.keyID) == first)
                #expect(try await store.device(keyID: [UInt8](repeating: 9, count: 32)) == nil)

                var sameKey = Self.device("dev_b", keyByte: 1, at: 3_000, environment: "development")
                sameKey.appID = "OTHERTEAM1.com.example.other"
                #expect(try await store.insertDevice(sameKey) == false)
                #expect(try await store.devices() == [first])
                #expect(try await store.device(keyID: first.keyID) == first)
            }
        }

        @Test(
            "a taken device id, or a key id, public key or environment of the wrong shape, is a constraint error",
            arguments: Backend.allCases)
        func deviceConstraints(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                try await Self.register(Self.device("dev_a", keyByte: 1), in: store)
                var sameID = Self.device("dev_a", keyByte: 2)
                #expect(
                    await storeErrorCode { () throws(StoreError) in _ = try await store.insertDevice(sameID) }
                        == .constraint)
                sameID.id = "dev_b"
                sameID.keyID.removeLast()
                #expect(
                    await storeErrorCode { () throws(StoreError) in _ = try await store.insertDevice(sameID) }
                        == .constraint)
                var shortKey = Self.device("dev_c", keyByte: 3)
                shortKey.publicKey.removeFirst()
                #expect(
                    await storeErrorCode { () throws(StoreError) in _ = try await store.insertDevice(shortKey) }
                        == .constraint)
                let staging = Self.device("dev_d", keyByte: 4, environment: "staging")
                #expect(
                    await storeErrorCode { () throws(StoreError) in _ = try await store.insertDevice(staging) }
                        == .constraint)
                #expect(try await store.devices().map(\.id) == ["dev_a"])
            }
        }

        @Test("devices are listed oldest first, revoked ones too", arguments: Backend.allCases)
        func listDevices(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                let late = Self.device("dev_late", keyByte: 1, at: 3_000)
                let early = Self.device("dev_early", keyByte: 2, at: 1_000)
                let sameTimeB = Self.device("dev_b", keyByte: 3, at: 2_000)
                let sameTimeA = Self.device("dev_a", keyByte: 4, at: 2_000)
                for device in [late, early, sameTimeB, sameTimeA] { try await Self.register(device, in: store) }
                #expect(try await store.revokeDevice(id: "dev_early", atMilliseconds: 4_000))
                var revoked = early
                revoked.revokedAtMilliseconds = 4_000
                #expect(try await store.devices() == [revoked, sameTimeA, sameTimeB, late])
            }
        }

        @Test(
            "a session opens only with a counter above the stored one; a refusal writes nothing",
            arguments: Backend.allCases)
        func counter(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                let device = Self.device("dev_a", keyByte: 1)
                try await Self.register(device, in: store)
                #expect(
                    try await store.openSession(
                        Self.session(1, device: "dev_a"), deviceID: "dev_a", counter: 0, nowMilliseconds: 2_000)
                        == false)
                #expect(
                    try await store.session(digest: Self.session(1, device: "dev_a").digest, nowMilliseconds: 2_000)
                        == nil)
                #expect(try await store.device(keyID: device.keyID) == device)

                #expect(
                    try await store.openSession(
                        Self.session(2, device: "dev_a"), deviceID: "dev_a", counter: 5, nowMilliseconds: 3_000))
                #expect(
                    try await store.session(digest: Self.session(2, device: "dev_a").digest, nowMilliseconds: 3_000)
                        == Self.session(2, device: "dev_a"))
                var raised = device
                raised.counter = 5
                raised.lastSeenAtMilliseconds = 3_000
                #expect(try await store.device(keyID: device.keyID) == raised)

                for (digest, counter) in [(UInt8(3), Int64(5)), (4, 4)] {
                    #expect(
                        try await store.openSession(
                            Self.session(digest, device: "dev_a"), deviceID: "dev_a", counter: counter,
                            nowMilliseconds: 4_000) == false)
                    #expect(
                        try await store.session(
                            digest: Self.session(digest, device: "dev_a").digest, nowMilliseconds: 4_000) == nil)
                }
                #expect(try await store.device(keyID: device.keyID) == raised)

                #expect(
                    try await store.openSession(
                        Self.session(5, device: "dev_a"), deviceID: "dev_a", counter: 6, nowMilliseconds: 5_000))
                #expect(try await store.device(keyID: device.keyID)?.counter == 6)
                #expect(
                    try await store.openSession(
                        Self.session(6, device: "dev_none"), deviceID: "dev_none", counter: 9, nowMilliseconds: 5_000)
                        == false)
            }
        }

        @Test(
            "a session of another device, or a taken digest, is a constraint error and raises no counter",
            arguments: Backend.allCases)
        func sessionConstraints(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                let device = Self.device("dev_a", keyByte: 1)
                try await Self.register(device, in: store)
                try await Self.register(Self.device("dev_b", keyByte: 2), in: store)
                let other = await storeErrorCode { () throws(StoreError) in
                    _ = try await store.openSession(
                        Self.session(1, device: "dev_b"), deviceID: "dev_a", counter: 1, nowMilliseconds: 2_000)
                }
                #expect(other == .constraint)
                #expect(
                    try await store.openSession(
                        Self.session(1, device: "dev_a"), deviceID: "dev_a", counter: 1, nowMilliseconds: 2_000))
                let taken = await storeErrorCode { () throws(StoreError) in
                    _ = try await store.openSession(
                        Self.session(1, device: "dev_a"), deviceID: "dev_a", counter: 2, nowMilliseconds: 3_000)
                }
                #expect(taken == .constraint)
                #expect(try await store.device(keyID: device.keyID)?.counter == 1)
            }
        }

        @Test(
            "of eight stores opening sessions with one counter at once, exactly one does", arguments: Backend.allCases)
        func concurrentOpen(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let device = Self.device("dev_a", keyByte: 1)
                try await Self.register(device, in: store)
                let rounds: [Int64] = [1, 2, 3]
                let opened = try await Self.onEightStores(store, fixture) { index, each in
                    var opened: [Int64] = []
                    for counter in rounds {
                        let session = Self.session(UInt8(counter * 10) + UInt8(index), device: "dev_a")
                        if try await each.openSession(
                            session, deviceID: "dev_a", counter: counter, nowMilliseconds: 2_000)
                        {
                            opened.append(counter)
                        }
                    }
                    return opened
                }
                #expect(opened.flatMap { $0 }.sorted() == rounds)
                #expect(try await store.device(keyID: device.keyID)?.counter == 3)
                for counter in rounds {
                    var found = 0
                    for index in 0..<8 {
                        let digest = Self.session(UInt8(counter * 10) + UInt8(index), device: "dev_a").digest
                        if try await store.session(digest: digest, nowMilliseconds: 2_000) != nil { found += 1 }
                    }
                    #expect(found == 1, "counter \(counter)")
                }
            }
        }

        @Test(
            "a session is found until it expires and not after; an unknown digest finds nothing",
            arguments: Backend.allCases)
        func sessionExpiry(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                try await Self.register(Self.device("dev_a", keyByte: 1), in: store)
                let session = Self.session(1, device: "dev_a", at: 2_000, expires: 10_000)
                #expect(try await store.openSession(session, deviceID: "dev_a", counter: 1, nowMilliseconds: 2_000))
                #expect(try await store.session(digest: session.digest, nowMilliseconds: 9_999) == session)
                #expect(try await store.session(digest: session.digest, nowMilliseconds: 10_000) == nil)
                #expect(
                    try await store.session(digest: [UInt8](repeating: 7, count: 32), nowMilliseconds: 2_000) == nil)
            }
        }

        @Test(
            "revoking a device ends its sessions, refuses new ones and moves the generation, seen by another store",
            arguments: Backend.allCases)
        func revoke(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let (other, closeOther) = try await fixture.openAnother()
                let start = try await other.deviceGeneration()
                let device = Self.device("dev_a", keyByte: 1)
                try await Self.register(device, in: store)
                try await Self.register(Self.device("dev_b", keyByte: 2), in: store)
                let session = Self.session(1, device: "dev_a")
                #expect(try await store.openSession(session, deviceID: "dev_a", counter: 1, nowMilliseconds: 2_000))
                let kept = Self.session(2, device: "dev_b")
                #expect(try await store.openSession(kept, deviceID: "dev_b", counter: 1, nowMilliseconds: 2_000))
                // Neither a new device nor a session moves it.
                #expect(try await other.deviceGeneration() == start)

                #expect(try await other.revokeDevice(id: "dev_a", atMilliseconds: 3_000))
                let revoked = try await store.deviceGeneration()
                #expect(revoked != start)
                #expect(try await store.session(digest: session.digest, nowMilliseconds: 3_000) == nil)
                #expect(try await store.session(digest: kept.digest, nowMilliseconds: 3_000) == kept)
                #expect(try await store.device(keyID: device.keyID)?.revokedAtMilliseconds == 3_000)
                #expect(
                    try await store.openSession(
                        Self.session(3, device: "dev_a"), deviceID: "dev_a", counter: 2, nowMilliseconds: 3_000)
                        == false)
                #expect(try await store.device(keyID: device.keyID)?.counter == 1)

                #expect(try await store.revokeDevice(id: "dev_a", atMilliseconds: 4_000) == false)
                #expect(try await store.revokeDevice(id: "dev_none", atMilliseconds: 4_000) == false)
                #expect(try await other.deviceGeneration() == revoked)
                #expect(try await store.device(keyID: device.keyID)?.revokedAtMilliseconds == 3_000)
                await closeOther()
            }
        }

        @Test(
            "the purge deletes the challenges and sessions expired at the instant, and nothing newer",
            arguments: Backend.allCases)
        func purge(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ in
                let expiredChallenges = backend.deletionBatch + 7
                for index in 0..<expiredChallenges {
                    try await store.insertChallenge("old-\(index)", expiresAtMilliseconds: 4_000 + Int64(index % 1_000))
                }
                try await store.insertChallenge("edge", expiresAtMilliseconds: 5_000)
                try await store.insertChallenge("live", expiresAtMilliseconds: 5_001)
                try await Self.register(Self.device("dev_a", keyByte: 1), in: store)
                let old = Self.session(1, device: "dev_a", expires: 4_000)
                let edge = Self.session(2, device: "dev_a", expires: 5_000)
                let live = Self.session(3, device: "dev_a", expires: 5_001)
                for (counter, session) in [old, edge, live].enumerated() {
                    #expect(
                        try await store.openSession(
                            session, deviceID: "dev_a", counter: Int64(counter + 1), nowMilliseconds: 2_000))
                }

                let purged = try await store.purgeExpiredChallengesAndSessions(nowMilliseconds: 5_000)
                #expect(purged.challenges == expiredChallenges + 1)
                #expect(purged.sessions == 2)
                #expect(try await store.consumeChallenge("edge", nowMilliseconds: 1_000) == false)
                #expect(try await store.consumeChallenge("old-0", nowMilliseconds: 1_000) == false)
                #expect(try await store.consumeChallenge("live", nowMilliseconds: 1_000))
                #expect(try await store.session(digest: edge.digest, nowMilliseconds: 1_000) == nil)
                #expect(try await store.session(digest: live.digest, nowMilliseconds: 1_000) == live)

                let again = try await store.purgeExpiredChallengesAndSessions(nowMilliseconds: 5_000)
                #expect(again.challenges == 0 && again.sessions == 0)
                #expect(try await store.integrityCheck() == [])
            }
        }

        static func androidDevice(_ id: String, keyByte: UInt8, client: UInt8? = 7, at milliseconds: Int64 = 1_000)
            -> StoredDevice
        {
            StoredDevice(
                id: id, platform: .android, keyID: [UInt8](repeating: keyByte, count: 32),
                // A DER SubjectPublicKeyInfo is longer than a point: 91 bytes for P-256.
                publicKey: [0x30, 0x59] + [UInt8](repeating: keyByte, count: 89), counter: 0,
                appID: "com.example.app", environment: "tee", signingDigest: [UInt8](repeating: 0xD1, count: 32),
                receipt: [], client: client.map { [UInt8](repeating: $0, count: 32) },
                createdAtMilliseconds: milliseconds, lastSeenAtMilliseconds: milliseconds)
        }

        @Test(
            "an Android device reads back with its platform, key, digest and client; its shape is checked",
            arguments: Backend.allCases)
        func androidDevice(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ async throws in
                let android = Self.androidDevice("dev_android", keyByte: 2)
                #expect(try await store.registerDevice(android, limits: .none) == .registered)
                #expect(try await store.device(keyID: android.keyID) == android)
                let session = Self.session(0x21, device: android.id)
                #expect(
                    try await store.openSession(session, deviceID: android.id, counter: 1, nowMilliseconds: 2_000))
                #expect(try await store.session(digest: session.digest, nowMilliseconds: 3_000) == session)

                var noDigest = Self.androidDevice("dev_x", keyByte: 3)
                noDigest.signingDigest = nil
                var iosWithDigest = Self.device("dev_y", keyByte: 4)
                iosWithDigest.signingDigest = [UInt8](repeating: 1, count: 32)
                var androidEnvironment = Self.androidDevice("dev_z", keyByte: 5)
                androidEnvironment.environment = "production"
                var iosLongKey = Self.device("dev_w", keyByte: 6)
                iosLongKey.publicKey = android.publicKey
                for bad in [noDigest, iosWithDigest, androidEnvironment, iosLongKey] {
                    let error = await storeError { () throws(StoreError) in
                        _ = try await store.registerDevice(bad, limits: .none)
                    }
                    #expect(error?.code == .constraint, "\(bad)")
                }
                let stored = try await store.devices()
                #expect(stored.map(\.id) == [android.id] && stored.first?.counter == 1)
                #expect(stored.first?.lastSeenAtMilliseconds == 2_000)
            }
        }

        @Test(
            "registrations are limited per client and in all within the window; older ones do not count",
            arguments: Backend.allCases)
        func registrationLimits(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, _ async throws in
                let limits = DeviceRegistrationLimits(perClient: 2, total: 3, sinceMilliseconds: 10_000)
                // Before the window: counts for nothing.
                #expect(
                    try await store.registerDevice(Self.androidDevice("old", keyByte: 1, at: 9_999), limits: limits)
                        == .registered)
                #expect(
                    try await store.registerDevice(Self.androidDevice("a1", keyByte: 2, at: 10_000), limits: limits)
                        == .registered)
                #expect(
                    try await store.registerDevice(Self.androidDevice("a2", keyByte: 3, at: 10_001), limits: limits)
                        == .registered)
                #expect(
                    try await store.registerDevice(Self.androidDevice("a3", keyByte: 4, at: 10_002), limits: limits)
                        == .clientLimit)
                // The same key again is a duplicate before it is a limit.
                #expect(
                    try await store.registerDevice(Self.androidDevice("a4", keyByte: 2, at: 10_002), limits: limits)
                        == .duplicate)
                #expect(
                    try await store.registerDevice(
                        Self.androidDevice("b1", keyByte: 5, client: 8, at: 10_003), limits: limits) == .registered)
                #expect(
                    try await store.registerDevice(
                        Self.androidDevice("b2", keyByte: 6, client: 8, at: 10_004), limits: limits) == .totalLimit)
                // An iPhone counts in the same limits.
                var phone = Self.device("i1", keyByte: 7, at: 10_005)
                phone.client = [UInt8](repeating: 9, count: 32)
                #expect(try await store.registerDevice(phone, limits: limits) == .totalLimit)
                #expect(try await store.devices().map(\.id).sorted() == ["a1", "a2", "b1", "old"])
            }
        }

        @Test(
            "of registrations from one client on eight stores at once, no more than the limit are written",
            arguments: Backend.allCases)
        func concurrentRegistrations(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let limits = DeviceRegistrationLimits(perClient: 3, total: nil, sinceMilliseconds: 0)
                let outcomes = try await Self.onEightStores(store, fixture) { index, each in
                    var outcomes: [DeviceRegistration] = []
                    for round in 0..<2 {
                        let key = UInt8(1 + index * 2 + round)
                        outcomes.append(
                            try await each.registerDevice(
                                Self.androidDevice("c\(index)-\(round)", keyByte: key, at: 1_000), limits: limits))
                    }
                    return outcomes
                }.flatMap { $0 }
                #expect(outcomes.filter { $0 == .registered }.count == 3)
                #expect(outcomes.filter { $0 == .clientLimit }.count == 13)
                #expect(try await store.devices().count == 3)
            }
        }

        @Test("a device's and a session's descriptions show no key, receipt or digest")
        func descriptions() {
            let device = Self.device("dev_a", keyByte: 0xAB)
            #expect(
                device.description
                    == "StoredDevice(id: dev_a, platform: ios, appID: TEAMID1234.com.example.app, "
                    + "environment: production, counter: 0)"
            )
            let session = Self.session(0xCD, device: "dev_a")
            #expect(session.description == "StoredDeviceSession(deviceID: dev_a, expiresAtMilliseconds: 10000)")
        }

        @Test("a Postgres store of schema 3 is migrated to the latest, keeping its rows")
        func postgresMigratesFromSchema3() async throws {
            let lazy = try #require(LazyPostgresCluster.current)
            let (cluster, database) = try await lazy.createDatabase()
            let group = try EventLoopGroup(loopCount: 1, namePrefix: "pg-devices")
            var clients: [PostgresClient] = []
            do {
                let client = try await PostgresStoreTests.client(cluster, database, group: group)
                clients.append(client)
                let schema3 =
                    [
                        "CREATE TABLE store_meta (key text PRIMARY KEY, value bigint NOT NULL)",
                        "INSERT INTO store_meta (key, value) VALUES ('schema_version', 3)",
                    ] + PostgresSchema.migrations[0..<3].flatMap { $0 } + [
                        """
                        INSERT INTO tokens (id, digest, user_id, plan, created_at)
                        VALUES ('t1', decode(repeat('01', 32), 'hex'), 'alice', 'pro', 1000)
                        """
                    ]
                _ = try await client.transaction(schema3.map { PostgresQuery($0) })
                let store = try await PostgresStore.open(client: client)
                #expect(try await store.tokens().map(\.id) == ["t1"])
                try await Self.register(Self.device("dev_a", keyByte: 1), in: store)
                #expect(try await store.deviceGeneration() == 0)
                #expect(
                    try await client.query("SELECT value FROM store_meta WHERE key = 'schema_version'").rows.first?.int(
                        0) == PostgresStore.schemaVersion)
                #expect(try await store.integrityCheck() == [])
            } catch {
                await PostgresStoreTests.stop(clients, group)
                throw error
            }
            await PostgresStoreTests.stop(clients, group)
        }
    }
}

@Suite("Migrating a SQLite store to App Attest")
struct SQLiteDeviceMigrationTests {
    @Test("a store of schema 3 is migrated to the latest, keeping its rows, and takes devices")
    func migratesFromSchema3() async throws {
        try await withPoolAndDirectory { pool, directory in
            let path = directory.file("store.db")
            let rows = """
                INSERT INTO requests (request_id, user_id, route, status, outcome, cache_hit, duration_ms, created_at)
                VALUES ('r1', 'alice', '/api/process', 200, 'done', 0, 1.5, 1000);
                INSERT INTO tokens (id, digest, user_id, plan, created_at)
                VALUES ('t1', randomblob(32), 'alice', 'pro', 1000);
                INSERT INTO store_secrets (name, value) VALUES ('history_cursor', randomblob(32));
                """
            #expect(
                try sqlite3(path, StoreSchema.migrations[0..<3].joined() + rows + "PRAGMA user_version = 3;").status
                    == 0)
            let key = try sqlite3(path, "SELECT hex(value) FROM store_secrets").output

            let store = try await SQLiteStore.open(path: path, pool: pool)
            #expect(
                try await store.history(userID: "alice", limit: 10, before: nil).items.map(\.row.requestID) == ["r1"])
            #expect(try await store.tokens().map(\.id) == ["t1"])
            let hex = store.historyCursorKey.map { byte in
                (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }.joined()
            #expect(hex == key)
            #expect(try await store.deviceGeneration() == 0)
            try await StoreBackends.DeviceRepositoryTests.register(
                StoreBackends.DeviceRepositoryTests.device("dev_a", keyByte: 1), in: store)
            #expect(try await store.devices().map(\.id) == ["dev_a"])
            #expect(try await store.integrityCheck() == [])
            await store.close()
            #expect(try sqlite3(path, "PRAGMA user_version").output == String(SQLiteStore.schemaVersion))
        }
    }

    @Test("a store of schema 6 with an iPhone and its session keeps both through the Android migration")
    func migratesFromSchema6() async throws {
        try await withPoolAndDirectory { pool, directory in
            let path = directory.file("store.db")
            let rows = """
                INSERT INTO devices (id, key_id, public_key, counter, app_id, environment, receipt, created_at,
                    last_seen_at, revoked_at)
                VALUES ('dev_a', zeroblob(32), x'04\(String(repeating: "00", count: 64))', 3,
                    'TEAMID1234.com.example.app', 'production', x'3080', 1000, 2000, NULL);
                INSERT INTO device_sessions (digest, device_id, created_at, expires_at)
                VALUES (randomblob(32), 'dev_a', 2000, 99000);
                """
            #expect(
                try sqlite3(path, StoreSchema.migrations[0..<6].joined() + rows + "PRAGMA user_version = 6;").status
                    == 0)
            let store = try await SQLiteStore.open(path: path, pool: pool)
            let devices = try await store.devices()
            #expect(devices.map(\.id) == ["dev_a"])
            #expect(devices.first?.platform == .ios && devices.first?.counter == 3 && devices.first?.client == nil)
            #expect(try sqlite3(path, "SELECT device_id, expires_at FROM device_sessions").output == "dev_a|99000")
            #expect(try await store.deviceGeneration() == 0)
            // The sessions still follow their device.
            #expect(try await store.revokeDevice(id: "dev_a", atMilliseconds: 3000))
            #expect(try await store.deviceGeneration() == 1)
            #expect(try await store.integrityCheck() == [])
            await store.close()
            #expect(try sqlite3(path, "PRAGMA foreign_key_check").output == "")
        }
    }
}
