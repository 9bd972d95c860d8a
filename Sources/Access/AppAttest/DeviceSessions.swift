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
package final class DeviceSessions: Sendable {
    private struct Entry {
        var caller: Caller
        var expiresAtMilliseconds: Int64
    }

    private struct State {
        var generation: Int64 = .min
        var entries: [[UInt8]: Entry] = [:]
    }

    private let state = Mutex(State())
    let repository: any DeviceRepository
    let plan: String
    /// The most sessions kept in memory; past it the expired go, and if none has, all do.
    let capacity: Int

    /// The prefix of a session token.
    package static let prefix = GatewayCredential.deviceSessionPrefix

    package init(repository: any DeviceRepository, plan: String, capacity: Int = 200_000) {
        self.repository = repository
        self.plan = plan
        self.capacity = capacity
    }

    /// The caller `device:<id>` for a device's sessions.
    package static func userID(deviceID: String) -> String { "device:" + deviceID }

    /// A new session token: the prefix and 32 random bytes in base64url.
    package static func makeToken() -> String { prefix + Base64URL.encode(SecureRandom.bytes(32)) }

    /// The caller whose unexpired session has `digest`, or nil; reads the store on a miss.
    package func caller(digest: [UInt8], nowMilliseconds: Int64) async throws(StoreError) -> Caller? {
        if let entry = state.withLock({ $0.entries[digest] }) {
            if entry.expiresAtMilliseconds > nowMilliseconds { return entry.caller }
            state.withLock { _ = $0.entries.removeValue(forKey: digest) }
            return nil
        }
        let generation = state.withLock { $0.generation }
        guard let session = try await repository.session(digest: digest, nowMilliseconds: nowMilliseconds) else {
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
        }
    }
}
