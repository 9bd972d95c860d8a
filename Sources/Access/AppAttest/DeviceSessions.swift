import Crypto
package import Store
import Synchronization

/// The device sessions (`tgd_…`) this instance has seen, by their token's SHA-256 digest, in
/// front of the store that holds them all.
///
/// A session opened on another instance is read from the store at its first use here, then
/// served from memory until it expires. When the store's device generation moves (a device
/// was revoked, by any process), every session is forgotten and read again: a revoked
/// device's sessions stop on every instance within one poll.
///
/// A digest the store has no session for is remembered as unknown for
/// ``unknownTimeToLive`` (at most ``unknownCapacity`` of them), so a client repeating a
/// made-up, expired or revoked session costs one store read per period, not one per request.
/// It holds only what is unknown, so a revocation never waits on it; and a real session is
/// hardly ever in it, since its token reaches the client only after the store keeps it.
package final class DeviceSessions: Sendable {
    private struct Entry {
        var caller: Caller
        var expiresAtMilliseconds: Int64
    }

    private struct State {
        var generation: Int64 = .min
        var entries: [[UInt8]: Entry] = [:]
        /// Digests the store had no session for, and until when that answer stands.
        var unknown: [[UInt8]: Int64] = [:]
    }

    private let state = Mutex(State())
    let repository: any DeviceRepository
    let plan: String
    /// The most sessions kept in memory; past it the expired go, and if none has, all do.
    let capacity: Int
    /// The most unknown digests remembered; past it the expired go, and if none has, all do.
    let unknownCapacity: Int
    /// How long a digest the store did not know is answered as unknown without asking again.
    let unknownTimeToLiveMilliseconds: Int64

    /// The prefix of a session token.
    package static let prefix = GatewayCredential.deviceSessionPrefix
    /// How long an unknown digest is remembered by default.
    package static let unknownTimeToLive: Duration = .seconds(30)

    package init(
        repository: any DeviceRepository, plan: String, capacity: Int = 200_000, unknownCapacity: Int = 4096,
        unknownTimeToLive: Duration = DeviceSessions.unknownTimeToLive
    ) {
        self.repository = repository
        self.plan = plan
        self.capacity = capacity
        self.unknownCapacity = max(1, unknownCapacity)
        self.unknownTimeToLiveMilliseconds =
            unknownTimeToLive.components.seconds * 1000
            + unknownTimeToLive.components.attoseconds / 1_000_000_000_000_000
    }

    /// The caller `device:<id>` for a device's sessions.
    package static func userID(deviceID: String) -> String { "device:" + deviceID }

    /// A new session token: the prefix and 32 random bytes in base64url.
    package static func makeToken() -> String { prefix + Base64URL.encode(SecureRandom.bytes(32)) }

    /// The caller whose unexpired session has `digest`, or nil; reads the store on a miss,
    /// unless the store said lately that it has no such session.
    package func caller(digest: [UInt8], nowMilliseconds: Int64) async throws(StoreError) -> Caller? {
        enum Known {
            case session(Entry)
            case unknown
            case ask(generation: Int64)
        }
        let known = state.withLock { state -> Known in
            if let entry = state.entries[digest] { return .session(entry) }
            if let until = state.unknown[digest] {
                if until > nowMilliseconds { return .unknown }
                state.unknown.removeValue(forKey: digest)
            }
            return .ask(generation: state.generation)
        }
        let generation: Int64
        switch known {
        case .session(let entry):
            if entry.expiresAtMilliseconds > nowMilliseconds { return entry.caller }
            state.withLock { _ = $0.entries.removeValue(forKey: digest) }
            return nil
        case .unknown:
            return nil
        case .ask(let current):
            generation = current
        }
        guard let session = try await repository.session(digest: digest, nowMilliseconds: nowMilliseconds) else {
            rememberUnknown(digest: digest, now: nowMilliseconds)
            return nil
        }
        let caller = Caller(userID: Self.userID(deviceID: session.deviceID), plan: plan)
        remember(
            digest: digest, caller: caller, expiresAtMilliseconds: session.expiresAtMilliseconds,
            generation: generation, now: nowMilliseconds)
        return caller
    }

    /// Keeps a session this instance just opened.
    package func opened(digest: [UInt8], deviceID: String, expiresAtMilliseconds: Int64, nowMilliseconds: Int64) {
        let generation = state.withLock { $0.generation }
        let caller = Caller(userID: Self.userID(deviceID: deviceID), plan: plan)
        remember(
            digest: digest, caller: caller, expiresAtMilliseconds: expiresAtMilliseconds, generation: generation,
            now: nowMilliseconds)
    }

    /// How many sessions are in memory now.
    package var count: Int { state.withLock { $0.entries.count } }

    /// How many digests are remembered as unknown now.
    package var unknownCount: Int { state.withLock { $0.unknown.count } }

    /// Forgets every session when the store's device generation moved since the last poll;
    /// returns whether it did.
    @discardableResult
    package func refresh() async throws(StoreError) -> Bool {
        let generation = try await repository.deviceGeneration()
        return state.withLock { state in
            guard generation != state.generation else { return false }
            state = State(generation: generation)
            return true
        }
    }

    private func remember(digest: [UInt8], caller: Caller, expiresAtMilliseconds: Int64, generation: Int64, now: Int64)
    {
        state.withLock { state in
            // Read before a revocation that this poll has already seen: not kept, read again next time.
            guard state.generation == generation else { return }
            if state.entries.count >= capacity {
                state.entries = state.entries.filter { $0.value.expiresAtMilliseconds > now }
                if state.entries.count >= capacity { state.entries.removeAll(keepingCapacity: true) }
            }
            state.entries[digest] = Entry(caller: caller, expiresAtMilliseconds: expiresAtMilliseconds)
            state.unknown.removeValue(forKey: digest)
        }
    }

    private func rememberUnknown(digest: [UInt8], now: Int64) {
        state.withLock { state in
            if state.unknown.count >= unknownCapacity {
                state.unknown = state.unknown.filter { $0.value > now }
                if state.unknown.count >= unknownCapacity { state.unknown.removeAll(keepingCapacity: true) }
            }
            state.unknown[digest] = now + unknownTimeToLiveMilliseconds
        }
    }
}
