import Access
import Crypto
import Store
import Telemetry

/// The App Attest flow (docs/app-attest.md): challenges, device registration and device
/// sessions, over the store's devices and a shared challenge table.
final class AppAttestService: Sendable {
    /// A device session just opened.
    struct OpenedSession: Sendable {
        var token: String
        var expiresAtSeconds: Int64
        var deviceID: String
    }

    let settings: AppAttestSettings
    let verifier: AppAttestVerifier
    let repository: any DeviceRepository
    /// Asks Apple for each new device's risk metric, when configured.
    let risk: AppAttestRiskChecker?
    let flow: DeviceFlow
    private let attestations: [String: Counter]
    private let assertions: [String: Counter]

    init(
        settings: AppAttestSettings, verifier: AppAttestVerifier, repository: any DeviceRepository,
        challenges: any AttestChallenges,
        sessions: DeviceSessions, faults: StoreFaults, registry: MetricsRegistry,
        clock: @escaping @Sendable () -> Instant, risk: AppAttestRiskChecker? = nil
    ) {
        self.risk = risk
        self.settings = settings
        self.verifier = verifier
        self.repository = repository
        flow = DeviceFlow(
            settings: settings, repository: repository, challenges: challenges, sessions: sessions, faults: faults,
            clock: clock)
        let results =
            ["ok", "duplicate", "address_limit", "gateway_limit"] + AppAttestFailure.Reason.allCases.map(\.rawValue)
        let attestationFamily = registry.counter(
            "textgateway_app_attest_attestations_total",
            help: "Device registrations (App Attest attestations), by result.", labels: ["result"]
        )
        let assertionFamily = registry.counter(
            "textgateway_app_attest_assertions_total",
            help: "Device sessions asked for (App Attest assertions), by result.", labels: ["result"]
        )
        attestations = Dictionary(uniqueKeysWithValues: results.map { ($0, attestationFamily.labels($0)) })
        assertions = Dictionary(uniqueKeysWithValues: results.map { ($0, assertionFamily.labels($0)) })
        registry.gaugeFunction(
            "textgateway_app_attest_sessions_cached", help: "Device sessions this instance holds in memory."
        ) {
            Double(sessions.count)
        }
    }

    /// A new one-use challenge: 32 random bytes in base64url, and when it expires (Unix seconds).
    func challenge() async throws(GatewayError) -> (challenge: String, expiresAtSeconds: Int64) {
        let challenge = Base64URL.encode(SecureRandom.bytes(32))
        let now = flow.nowMilliseconds
        let lifetime = Int64(AppAttestSettings.challengeLifetime / .milliseconds(1))
        do {
            try await flow.challenges.issue(challenge, nowMilliseconds: now, lifetimeMilliseconds: lifetime)
        } catch {
            if let error = error as? StoreError { throw flow.faults.unavailable(error, operation: .devices) }
            throw .storeUnavailable
        }
        return (challenge, (now + lifetime) / 1000)
    }

    /// Verifies a key's attestation over `challenge` and registers its device; returns the
    /// device id. `client` is the caller's address key, for the daily registration limits.
    func register(keyID: [UInt8], attestation: [UInt8], challenge: String, client: String)
        async throws(GatewayError) -> String
    {
        do throws(Step) {
            try await flow.consume(challenge, refusing: AppAttestFailure.Reason.challenge)
            let now = flow.clock()
            let verified = try Step.refusing { () throws(AppAttestFailure) in
                try verifier.verifyAttestation(
                    keyID: keyID, attestation: attestation, clientData: Array(challenge.utf8),
                    at: Int64(now.secondsSinceEpoch))
            }
            let milliseconds = Int64(now.secondsSinceEpoch * 1000)
            let device = StoredDevice(
                id: "dev_" + Base64URL.encode(SecureRandom.bytes(12)), keyID: keyID, publicKey: verified.publicKey,
                counter: 0,
                appID: verified.appID, environment: verified.environment.rawValue, receipt: verified.receipt,
                client: SHA256.hash(Array(client.utf8)),
                createdAtMilliseconds: milliseconds, lastSeenAtMilliseconds: milliseconds
            )
            do {
                try await flow.register(device, counting: attestations)
            } catch {
                throw .failed(error)
            }
            risk?.enqueue(device)
            return device.id
        } catch {
            throw error.answer(counting: attestations)
        }
    }

    /// Verifies a registered key's assertion over `challenge`, moves its counter and opens a session.
    func openSession(keyID: [UInt8], assertion: [UInt8], challenge: String)
        async throws(GatewayError) -> OpenedSession
    {
        do throws(Step) {
            try await flow.consume(challenge, refusing: AppAttestFailure.Reason.challenge)
            let stored: StoredDevice?
            do {
                stored = try await repository.device(keyID: keyID)
            } catch {
                throw flow.unavailable(error)
            }
            guard let device = stored, device.platform == .ios, device.revokedAtMilliseconds == nil else {
                throw Step.refused(.unknownDevice)
            }
            // The configuration may have changed since the registration: an App ID or an
            // environment taken off the list stops its devices' sessions.
            guard settings.appIDs.contains(device.appID) else { throw Step.refused(.appID) }
            guard let environment = AppAttestEnvironment(rawValue: device.environment),
                settings.environment.allows(environment)
            else { throw Step.refused(.environment) }
            let counter = try Step.refusing { () throws(AppAttestFailure) in
                try verifier.verifyAssertion(
                    assertion, clientData: Array(challenge.utf8), publicKey: device.publicKey, appID: device.appID,
                    counter: device.counter
                )
            }
            // Refused when another assertion with this counter won, or the device was revoked meanwhile.
            let opened = try await flow.openSession(
                for: device, counter: counter, refusing: AppAttestFailure.Reason.counter)
            assertions["ok"]?.increment()
            return opened
        } catch {
            throw error.answer(counting: assertions)
        }
    }

    private typealias Step = AttestStep<AppAttestFailure.Reason>
}

extension AttestStep where Reason == AppAttestFailure.Reason {
    static func refusing<T>(_ body: () throws(AppAttestFailure) -> T) throws(AttestStep) -> T {
        do {
            return try body()
        } catch {
            throw .refused(error.reason)
        }
    }
}
