import Access
import Crypto
import Store
import Telemetry

/// What the iPhone and the Android flows share once their own checks have passed: taking a
/// challenge, registering a device within the daily limits, and opening a session.
struct DeviceFlow: Sendable {
    let settings: AppAttestSettings
    let repository: any DeviceRepository
    let challenges: any AttestChallenges
    let sessions: DeviceSessions
    let faults: StoreFaults
    let clock: @Sendable () -> Instant

    var nowMilliseconds: Int64 { Int64(clock().secondsSinceEpoch * 1000) }

    /// Takes `challenge` once; refused with `reason` when it was never issued, was used, or expired.
    func consume<Reason>(_ challenge: String, refusing reason: Reason) async throws(AttestStep<Reason>) {
        // Issued challenges are 43 base64url characters; anything long or unprintable is not
        // worth a lookup.
        guard AttestChallengeFormat.isPlausible(challenge) else { throw .refused(reason) }
        let fresh: Bool
        do {
            fresh = try await challenges.consume(challenge, nowMilliseconds: nowMilliseconds)
        } catch {
            throw unavailable(error)
        }
        guard fresh else { throw .refused(reason) }
    }

    /// Registers `device` within the daily registration limits, counting the outcome in `counters`.
    func register(_ device: StoredDevice, counting counters: [String: Counter]) async throws(GatewayError) {
        let outcome: DeviceRegistration
        do {
            outcome = try await repository.registerDevice(
                device, limits: settings.registrationLimits(at: device.createdAtMilliseconds))
        } catch {
            throw faults.unavailable(error, operation: .devices)
        }
        switch outcome {
        case .registered:
            counters["ok"]?.increment()
        case .duplicate:
            counters["duplicate"]?.increment()
            throw .deviceAlreadyRegistered
        case .clientLimit:
            counters["address_limit"]?.increment()
            throw .deviceRegistrationLimit(retryAfterSeconds: 86_400)
        case .totalLimit:
            counters["gateway_limit"]?.increment()
            throw .deviceRegistrationLimit(retryAfterSeconds: 3600)
        }
    }

    /// Opens a session for `device`, raising its counter to `counter` in the same transaction;
    /// refused with `reason` when another request raised it first or the device was revoked meanwhile.
    func openSession<Reason>(for device: StoredDevice, counter: Int64, refusing reason: Reason) async throws(AttestStep<
        Reason
    >) -> AppAttestService.OpenedSession {
        let now = nowMilliseconds
        let token = DeviceSessions.makeToken()
        let digest = SHA256.hash(Array(token.utf8))
        let expires = now + Int64(settings.sessionLifetime / .milliseconds(1))
        let session = StoredDeviceSession(
            digest: digest, deviceID: device.id, createdAtMilliseconds: now, expiresAtMilliseconds: expires)
        let opened: Bool
        do {
            opened = try await repository.openSession(
                session, deviceID: device.id, counter: counter, nowMilliseconds: now)
        } catch {
            throw unavailable(error)
        }
        guard opened else { throw .refused(reason) }
        sessions.opened(digest: digest, deviceID: device.id, expiresAtMilliseconds: expires, nowMilliseconds: now)
        return AppAttestService.OpenedSession(token: token, expiresAtSeconds: expires / 1000, deviceID: device.id)
    }

    /// The store's (or Redis's) absence, answered as the store's and seen in its metrics.
    func unavailable<Reason>(_ error: any Error) -> AttestStep<Reason> {
        if let error = error as? StoreError { return .failed(faults.unavailable(error, operation: .devices)) }
        return .failed(.storeUnavailable)
    }
}
