package import Store
import Synchronization

/// Device sessions in memory, counting the session reads: a store for the device-session
/// lookups, and a repository that is never read where a test needs one.
package final class CountingDevices: DeviceRepository {
    private struct State {
        var sessions: [[UInt8]: StoredDeviceSession] = [:]
        var reads = 0
        var generation: Int64 = 1
    }

    private let state = Mutex(State())

    package init() {}

    package var reads: Int { state.withLock { $0.reads } }

    package func add(_ session: StoredDeviceSession) { state.withLock { $0.sessions[session.digest] = session } }

    package func revoke(digest: [UInt8]) {
        state.withLock {
            $0.sessions[digest] = nil
            $0.generation += 1
        }
    }

    package func session(digest: [UInt8], nowMilliseconds: Int64) async throws(StoreError) -> StoredDeviceSession? {
        state.withLock { state in
            state.reads += 1
            return state.sessions[digest].flatMap { $0.expiresAtMilliseconds > nowMilliseconds ? $0 : nil }
        }
    }

    package func deviceGeneration() async throws(StoreError) -> Int64 { state.withLock { $0.generation } }

    // Not used by the lookups.
    package func insertChallenge(_ challenge: String, expiresAtMilliseconds: Int64) async throws(StoreError) {}
    package func consumeChallenge(_ challenge: String, nowMilliseconds: Int64) async throws(StoreError) -> Bool {
        false
    }
    package func insertDevice(_ device: StoredDevice) async throws(StoreError) -> Bool { false }
    package func registerDevice(_ device: StoredDevice, limits: DeviceRegistrationLimits) async throws(StoreError)
        -> DeviceRegistration
    { .duplicate }
    package func device(keyID: [UInt8]) async throws(StoreError) -> StoredDevice? { nil }
    package func recordRisk(deviceID: String, receipt: [UInt8], riskMetric: Int64?) async throws(StoreError) -> Bool {
        false
    }
    package func devices() async throws(StoreError) -> [StoredDevice] { [] }
    package func revokeDevice(id: String, atMilliseconds: Int64) async throws(StoreError) -> Bool { false }
    package func openSession(_ session: StoredDeviceSession, deviceID: String, counter: Int64, nowMilliseconds: Int64)
        async throws(StoreError) -> Bool
    { false }
    package func purgeExpiredChallengesAndSessions(nowMilliseconds: Int64) async throws(StoreError) -> (
        challenges: Int, sessions: Int
    ) { (0, 0) }
}
