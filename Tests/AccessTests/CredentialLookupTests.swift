import AccessTestSupport
import Crypto
import Store
import Synchronization
import Testing

@testable import Access

/// How the gateway's own credentials are looked up: a prefix alone is malformed, a store
/// token's miss never reads the store, and an unknown device session is read once per
/// ``DeviceSessions/unknownTimeToLive`` however often it is presented.
@Suite("Credential lookups: bare prefixes, store reads for unknown tokens")
struct CredentialLookupTests {
    /// Store tokens in memory, counting every read.
    final class CountingTokens: TokenRepository {
        private struct State {
            var tokens: [StoredToken] = []
            var reads = 0
            var generation: Int64 = 1
        }

        private let state = Mutex(State())
        var reads: Int { state.withLock { $0.reads } }

        func insertToken(_ token: StoredToken) async throws(StoreError) {
            state.withLock {
                $0.tokens.append(token)
                $0.generation += 1
            }
        }

        func tokens() async throws(StoreError) -> [StoredToken] {
            state.withLock {
                $0.reads += 1
                return $0.tokens
            }
        }

        func revokeToken(id: String, atMilliseconds: Int64) async throws(StoreError) -> Bool { false }

        func activeTokens() async throws(StoreError) -> [StoredToken] {
            state.withLock {
                $0.reads += 1
                return $0.tokens
            }
        }

        func tokenGeneration() async throws(StoreError) -> Int64 {
            state.withLock {
                $0.reads += 1
                return $0.generation
            }
        }
    }

    static let start: Int64 = 1_800_000_000_000
    static let window = Int64(DeviceSessions.unknownTimeToLive / .milliseconds(1))

    static func session(_ token: String, expiresAt: Int64 = start + 3_600_000) -> StoredDeviceSession {
        StoredDeviceSession(
            digest: SHA256.hash(Array(token.utf8)), deviceID: "dev_1", createdAtMilliseconds: start,
            expiresAtMilliseconds: expiresAt)
    }

    @Test("a gateway prefix alone is a malformed credential of the gateway's formats, never a placeholder")
    func barePrefixes() {
        for prefix in ["tgk_", "tgd_"] {
            let token = Array(prefix.utf8)
            #expect(GatewayCredential.isBarePrefix(token))
            #expect(GatewayCredential.isGatewayFormat(token))
            #expect(GatewayCredential.failureReason(token, jwtConfigured: false) == "malformed gateway credential")
        }
        for other in ["tgk_a", "tgd_a", "tgk", "tg", "TGK_", "sk-placeholder"] {
            #expect(!GatewayCredential.isBarePrefix(Array(other.utf8)), "\(other)")
        }
        #expect(GatewayCredential.isGatewayFormat(Array("tgk_a".utf8)))
        #expect(!GatewayCredential.isGatewayFormat(Array("sk-placeholder".utf8)))
    }

    @Test("an unknown device session presented again and again reads the store once per 30 s")
    func unknownSessionReadOnce() async throws {
        let store = CountingDevices()
        let sessions = DeviceSessions(repository: store, plan: "default")
        let digest = SHA256.hash(Array("tgd_made-up".utf8))
        for step in 0..<100 {
            #expect(try await sessions.caller(digest: digest, nowMilliseconds: Self.start + Int64(step * 100)) == nil)
        }
        #expect(store.reads == 1)
        #expect(sessions.unknownCount == 1)
        #expect(try await sessions.caller(digest: digest, nowMilliseconds: Self.start + Self.window - 1) == nil)
        #expect(store.reads == 1)
        // Past the window the store is asked again, once.
        #expect(try await sessions.caller(digest: digest, nowMilliseconds: Self.start + Self.window) == nil)
        #expect(try await sessions.caller(digest: digest, nowMilliseconds: Self.start + Self.window + 1) == nil)
        #expect(store.reads == 2)
    }

    @Test("a session the store gains after its digest was remembered as unknown is accepted once the window passes")
    func sessionAfterUnknown() async throws {
        let store = CountingDevices()
        let sessions = DeviceSessions(repository: store, plan: "default")
        let token = "tgd_late-session"
        let digest = SHA256.hash(Array(token.utf8))
        #expect(try await sessions.caller(digest: digest, nowMilliseconds: Self.start) == nil)
        store.add(Self.session(token))
        #expect(try await sessions.caller(digest: digest, nowMilliseconds: Self.start + Self.window - 1) == nil)
        let caller = try await sessions.caller(digest: digest, nowMilliseconds: Self.start + Self.window)
        #expect(caller?.userID == "device:dev_1")
        #expect(sessions.unknownCount == 0)
    }

    @Test("a session this instance opens is accepted at once, even when its digest was remembered as unknown")
    func openedAfterUnknown() async throws {
        let store = CountingDevices()
        let sessions = DeviceSessions(repository: store, plan: "default")
        let digest = SHA256.hash(Array("tgd_opened-here".utf8))
        #expect(try await sessions.caller(digest: digest, nowMilliseconds: Self.start) == nil)
        sessions.opened(
            digest: digest, deviceID: "dev_2", expiresAtMilliseconds: Self.start + 3_600_000,
            nowMilliseconds: Self.start + 1)
        #expect(try await sessions.caller(digest: digest, nowMilliseconds: Self.start + 2)?.userID == "device:dev_2")
        #expect(store.reads == 1)
    }

    @Test("a revocation is never delayed: a known session stops at the poll that sees it, then is unknown")
    func revocationNotDelayed() async throws {
        let store = CountingDevices()
        let sessions = DeviceSessions(repository: store, plan: "default")
        try await sessions.refresh()
        let token = "tgd_revoked-soon"
        let digest = SHA256.hash(Array(token.utf8))
        store.add(Self.session(token))
        #expect(try await sessions.caller(digest: digest, nowMilliseconds: Self.start) != nil)
        store.revoke(digest: digest)
        #expect(try await sessions.refresh())
        #expect(try await sessions.caller(digest: digest, nowMilliseconds: Self.start + 1) == nil)
        let reads = store.reads
        #expect(try await sessions.caller(digest: digest, nowMilliseconds: Self.start + 2) == nil)
        #expect(store.reads == reads)
    }

    @Test("the unknown digests kept are bounded: a flood of made-up sessions cannot grow them")
    func unknownBounded() async throws {
        let store = CountingDevices()
        let sessions = DeviceSessions(repository: store, plan: "default", unknownCapacity: 16)
        for index in 0..<1000 {
            let digest = SHA256.hash(Array("tgd_flood-\(index)".utf8))
            _ = try await sessions.caller(digest: digest, nowMilliseconds: Self.start + Int64(index))
            #expect(sessions.unknownCount <= 16)
        }
        #expect(store.reads == 1000)
    }

    @Test("a store token that no one made never reads the store: misses are answered from the loaded tokens")
    func storeTokenMissesReadNothing() async throws {
        let store = CountingTokens()
        let tokens = StoreTokens(repository: store)
        try await tokens.refresh()
        let loaded = store.reads
        for index in 0..<500 {
            #expect(tokens.caller(digest: SHA256.hash(Array("tgk_made-up-\(index)".utf8))) == nil)
        }
        #expect(store.reads == loaded)
        // A token made later counts from the next poll that sees the generation move.
        let digest = SHA256.hash(Array("tgk_made-later".utf8))
        try await store.insertToken(
            StoredToken(
                id: "t1", digest: digest, userID: "alice", plan: "default", label: nil,
                createdAtMilliseconds: Self.start))
        #expect(tokens.caller(digest: digest) == nil)
        #expect(try await tokens.refresh())
        #expect(tokens.caller(digest: digest)?.userID == "alice")
    }
}
