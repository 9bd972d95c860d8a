import Access
import Crypto
import Store
import Telemetry

/// The Android flow (docs/android.md): a registration by Key Attestation over a challenge of
/// `/api/attest/challenge`, then sessions opened by signing a fresh challenge with the
/// attested key. Devices, challenges and sessions are App Attest's: one table, one plan.
final class AndroidAttestService: Sendable {
    let settings: AppAttestSettings
    let verifier: AndroidAttestationVerifier
    let revocations: AndroidRevocationSource
    let repository: any DeviceRepository
    let flow: DeviceFlow
    private let registrations: [String: Counter]
    private let sessionCounters: [String: Counter]

    init(
        settings: AppAttestSettings, verifier: AndroidAttestationVerifier, revocations: AndroidRevocationSource,
        repository: any DeviceRepository, challenges: any AttestChallenges, sessions: DeviceSessions,
        faults: StoreFaults, registry: MetricsRegistry, clock: @escaping @Sendable () -> Instant
    ) {
        self.settings = settings
        self.verifier = verifier
        self.revocations = revocations
        self.repository = repository
        flow = DeviceFlow(
            settings: settings, repository: repository, challenges: challenges, sessions: sessions, faults: faults,
            clock: clock)
        let results =
            ["ok", "duplicate", "address_limit", "gateway_limit"]
            + AndroidAttestationFailure.Reason.allCases.map(\.rawValue)
        let registrationFamily = registry.counter(
            "textgateway_android_attestations_total",
            help: "Android device registrations (Key Attestation chains), by result.", labels: ["result"])
        let sessionFamily = registry.counter(
            "textgateway_android_sessions_total", help: "Android device sessions asked for, by result.",
            labels: ["result"])
        registrations = Dictionary(uniqueKeysWithValues: results.map { ($0, registrationFamily.labels($0)) })
        sessionCounters = Dictionary(uniqueKeysWithValues: results.map { ($0, sessionFamily.labels($0)) })
    }

    /// Verifies `chain` over `challenge` and registers its key's device; returns the device id.
    /// `client` is the caller's address key, for the daily registration limits.
    func register(chain: [[UInt8]], challenge: String, client: String)
        async throws(GatewayError) -> (id: String, keyID: [UInt8])
    {
        do throws(AttestStep<AndroidAttestationFailure.Reason>) {
            try await flow.consume(challenge, refusing: AndroidAttestationFailure.Reason.challenge)
            // The app passed the decoded bytes to setAttestationChallenge.
            guard let challengeBytes = Base64URL.decode(challenge.utf8) else { throw .refused(.challenge) }
            let now = flow.clock()
            let verified: VerifiedAndroidKey
            do {
                verified = try verifier.verify(
                    chain: chain, challenge: challengeBytes, at: Int64(now.secondsSinceEpoch),
                    revocations: revocations.list)
            } catch {
                throw .refused(error.reason)
            }
            let milliseconds = Int64(now.secondsSinceEpoch * 1000)
            let device = StoredDevice(
                id: "dev_" + Base64URL.encode(SecureRandom.bytes(12)), platform: .android, keyID: verified.keyID,
                publicKey: verified.subjectPublicKeyInfo, counter: 0, appID: verified.package,
                environment: verified.securityLevel == .strongBox ? "strongbox" : "tee",
                signingDigest: verified.signingDigest, receipt: [], client: SHA256.hash(Array(client.utf8)),
                createdAtMilliseconds: milliseconds, lastSeenAtMilliseconds: milliseconds)
            do {
                try await flow.register(device, counting: registrations)
            } catch {
                throw .failed(error)
            }
            return (device.id, device.keyID)
        } catch {
            throw error.answer(counting: registrations)
        }
    }

    /// Verifies the device's signature over `challenge` and opens a session.
    func openSession(keyID: [UInt8], signature: [UInt8], challenge: String)
        async throws(GatewayError) -> AppAttestService.OpenedSession
    {
        do throws(AttestStep<AndroidAttestationFailure.Reason>) {
            try await flow.consume(challenge, refusing: AndroidAttestationFailure.Reason.challenge)
            let stored: StoredDevice?
            do {
                stored = try await repository.device(keyID: keyID)
            } catch {
                throw flow.unavailable(error)
            }
            guard let device = stored, device.platform == .android, device.revokedAtMilliseconds == nil else {
                throw .refused(.unknownDevice)
            }
            // The configuration may have changed since the registration: a package or digest
            // taken off the list stops its devices' sessions.
            guard let digest = device.signingDigest, verifier.policy.apps[device.appID]?.contains(digest) == true else {
                throw .refused(.app)
            }
            if verifier.policy.requireStrongBox, device.environment != "strongbox" { throw .refused(.securityLevel) }
            guard
                AndroidAttestationVerifier.isValidSession(
                    signature: signature, challenge: challenge, subjectPublicKeyInfo: device.publicKey)
            else { throw .refused(.signature) }
            // No counter on Android: the one-use challenge is the replay guard; the counter
            // counts sessions. Refused when the device was revoked meanwhile.
            let opened = try await flow.openSession(
                for: device, counter: device.counter + 1, refusing: AndroidAttestationFailure.Reason.unknownDevice)
            sessionCounters["ok"]?.increment()
            return opened
        } catch {
            throw error.answer(counting: sessionCounters)
        }
    }
}

/// What an issued challenge looks like: anything long or unprintable is not worth a lookup.
enum AttestChallengeFormat {
    static func isPlausible(_ challenge: String) -> Bool {
        (1...128).contains(challenge.utf8.count) && challenge.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}

/// How a step of a device flow ended early: refused (`401`, with its reason in the log and the
/// metrics) or failed otherwise (the store away, a key registered already, a limit).
enum AttestStep<Reason: RawRepresentable<String> & Sendable>: Error {
    case refused(Reason)
    case failed(GatewayError)

    func answer(counting counters: [String: Counter]) -> GatewayError {
        switch self {
        case .refused(let reason):
            counters[reason.rawValue]?.increment()
            return .deviceUnauthorized(reason: reason.rawValue)
        case .failed(let error):
            return error
        }
    }
}

extension AppAttestSettings {
    /// The registration limits over the 24 hours before `nowMilliseconds`.
    func registrationLimits(at nowMilliseconds: Int64) -> DeviceRegistrationLimits {
        DeviceRegistrationLimits(
            perClient: registrationsPerAddressPerDay, total: registrationsPerDay,
            sinceMilliseconds: nowMilliseconds - 86_400_000)
    }
}
