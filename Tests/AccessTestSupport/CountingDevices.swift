public import Store
import Synchronization

/// Device sessions in memory, counting the session reads: a store for the device-session
/// lookups, and a repository that is never read where a test needs one.
public final class CountingDevices: DeviceRepository {
    private struct State {
        var sessions: [[UInt8]: StoredDeviceSession] = [:]
        var reads = 0
        var generation: Int64 = 1
    }

    private let state = Mutex(State())

    public init() {}

    public var reads: Int { state.withLock { $0.reads } }

    public func add(_ session: StoredDeviceSession) { state.withLock { $0.sessions[session.digest] = session } }

    public func revoke(digest: [UInt8]) {
        state.withLock {
            $0.sessions[digest] = nil
            $0.generation += 1
        }
    }

    public func session(digest: [UInt8], nowMilliseconds: Int64) async throws(StoreError) -> StoredDeviceSession? {
        state.withLock { state in
            state.reads += 1
            return state.sessions[digest].flatMap { $0.expiresAtMilliseconds > nowMilliseconds ? $0 : nil }
        }
    }

    public func deviceGeneration() async throws(StoreError) -> Int64 { state.withLock { $0.generation } }

    // Not used by the lookups.
    public func insertChallenge(_ challenge: String, expiresAtMilliseconds: Int64) async throws(StoreError) {}
    public func consumeChallenge(_ challenge: String, nowMilliseconds: Int64) async throws(StoreError) -> Bool { false }
    public func insertDevice(_ device: StoredDevice) async throws(StoreError) -> Bool { false }
    public func registerDevice(_ device: StoredDevice, limits: DeviceRegistrationLimits) async throws(StoreError)
        -> DeviceRegistration
    { .duplicate }
    public func device(keyID: [UInt8]) async throws(StoreError) -> StoredDevice? { nil }
    public func recordRisk(deviceID: String, receipt: [UInt8], riskMetric: Int64?) async throws(StoreError) -> Bool {
        false
    }
    public func devices() async throws(StoreError) -> [StoredDevice] { [] }
    public func revokeDevice(id: String, atMilliseconds: Int64) async throws(StoreError) -> Bool { false }
    public func openSession(_ session: StoredDeviceSession, deviceID: String, counter: Int64, nowMilliseconds: Int64)
        async throws(StoreError) -> Bool
    { false }
    public func purgeExpiredChallengesAndSessions(nowMilliseconds: Int64) async throws(StoreError) -> (
        challenges: Int, sessions: Int
    ) { (0, 0) }
}
