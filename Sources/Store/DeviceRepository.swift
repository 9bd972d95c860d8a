/// Attested devices (iPhones by App Attest, Android phones by Key Attestation), their one-use
/// challenges and their session tokens' digests.
///
/// A device registers once with an attestation (``insertDevice(_:)``, or
/// ``registerDevice(_:limits:)`` within the registration limits), then trades assertions or
/// signed challenges for short-lived sessions (``openSession(_:deviceID:counter:nowMilliseconds:)``). Every
/// time is milliseconds since the Unix epoch, passed in by the caller (tests drive it); the
/// store keeps only each session token's SHA-256 digest, never the token.
package protocol DeviceRepository: Sendable {
    /// Keeps a one-use challenge until `expiresAtMilliseconds`. Throws
    /// ``StoreError/Code/constraint`` when the same challenge is kept already.
    func insertChallenge(_ challenge: String, expiresAtMilliseconds: Int64) async throws(StoreError)

    /// Removes the challenge and returns true when it was there and not expired at
    /// `nowMilliseconds` (one use: of two calls at once with one challenge, exactly one gets
    /// true). An expired challenge is left for the purge.
    func consumeChallenge(_ challenge: String, nowMilliseconds: Int64) async throws(StoreError) -> Bool

    /// Adds a device; false (nothing written) when its key id is registered already. Throws
    /// ``StoreError/Code/constraint`` for a taken id or a key id, public key or environment
    /// of the wrong shape.
    func insertDevice(_ device: StoredDevice) async throws(StoreError) -> Bool

    /// Adds a device as ``insertDevice(_:)`` does, in one transaction with the count of the
    /// devices registered since `limits.sinceMilliseconds`: refused (nothing written) when
    /// `limits.perClient` of them came from `device.client` or `limits.total` from anyone. Of
    /// registrations at once, no more than the limits allow are written, on any number of
    /// gateways sharing the store.
    func registerDevice(_ device: StoredDevice, limits: DeviceRegistrationLimits) async throws(StoreError)
        -> DeviceRegistration

    /// Keeps the receipt Apple returned for an iPhone and the risk metric it holds (nil: the
    /// receipt holds none); false when no device has that id.
    func recordRisk(deviceID: String, receipt: [UInt8], riskMetric: Int64?) async throws(StoreError) -> Bool

    /// The device with this key id (revoked ones too), or nil.
    func device(keyID: [UInt8]) async throws(StoreError) -> StoredDevice?

    /// Every device, revoked ones too, oldest first.
    func devices() async throws(StoreError) -> [StoredDevice]

    /// Marks the device revoked at `atMilliseconds` and moves the device generation; false
    /// when no unrevoked device has that id.
    func revokeDevice(id: String, atMilliseconds: Int64) async throws(StoreError) -> Bool

    /// In one transaction: raises the device's counter to `counter` only when it is strictly
    /// greater than the stored one and the device is not revoked, sets its last-seen time to
    /// `nowMilliseconds`, and stores `session`. False (nothing written) otherwise: of two
    /// calls at once with the same counter, exactly one gets true, so an assertion replayed
    /// opens no second session. Throws ``StoreError/Code/constraint`` when
    /// `session.deviceID` is not `deviceID` or its digest is taken.
    func openSession(_ session: StoredDeviceSession, deviceID: String, counter: Int64, nowMilliseconds: Int64)
        async throws(StoreError) -> Bool

    /// The session with this token digest when it is unexpired at `nowMilliseconds` and its
    /// device is not revoked, or nil.
    func session(digest: [UInt8], nowMilliseconds: Int64) async throws(StoreError) -> StoredDeviceSession?

    /// A number that moves whenever a device is revoked or deleted (by any process on the
    /// store): a gateway polls it and forgets the sessions it cached when it moved.
    func deviceGeneration() async throws(StoreError) -> Int64

    /// Deletes the challenges and sessions expired at `nowMilliseconds`, in bounded batches;
    /// returns how many of each. The gateway's retention runs it with the history purge.
    func purgeExpiredChallengesAndSessions(nowMilliseconds: Int64) async throws(StoreError) -> (
        challenges: Int, sessions: Int
    )
}

/// The registration limits ``DeviceRepository/registerDevice(_:limits:)`` holds.
package struct DeviceRegistrationLimits: Sendable, Equatable {
    /// The most devices one client (``StoredDevice/client``) may register in the window; nil: no limit.
    package var perClient: Int?
    /// The most devices the gateway may register in the window; nil: no limit.
    package var total: Int?
    /// The window's start: devices created at or after it count.
    package var sinceMilliseconds: Int64

    package init(perClient: Int?, total: Int?, sinceMilliseconds: Int64) {
        self.perClient = perClient
        self.total = total
        self.sinceMilliseconds = sinceMilliseconds
    }

    /// No limit.
    package static let none = DeviceRegistrationLimits(perClient: nil, total: nil, sinceMilliseconds: 0)
}

/// How ``DeviceRepository/registerDevice(_:limits:)`` ended.
package enum DeviceRegistration: Sendable, Equatable {
    case registered
    /// The key id is registered already.
    case duplicate
    /// The client registered as many devices as the window allows.
    case clientLimit
    /// The gateway registered as many devices as the window allows.
    case totalLimit
}

/// Which kind of phone a device is.
package enum DevicePlatform: String, Sendable, CaseIterable {
    /// An iPhone or iPad, by App Attest.
    case ios
    /// An Android phone, by Key Attestation.
    case android
}

/// A device as the store keeps it.
package struct StoredDevice: Sendable, Equatable, CustomStringConvertible {
    /// A short public id (`dev_` and random characters), made by the caller.
    package var id: String
    package var platform: DevicePlatform
    /// The 32-byte key id: the SHA-256 digest of the device's public key (iOS: of its point;
    /// Android: of its SubjectPublicKeyInfo).
    package var keyID: [UInt8]
    /// The device's public key. iOS: a 65-byte uncompressed P-256 point. Android: the DER
    /// SubjectPublicKeyInfo of the attested key (P-256 or RSA).
    package var publicKey: [UInt8]
    /// iOS: the sign counter of the device's last accepted assertion (0 after the
    /// attestation). Android: the sessions opened.
    package var counter: Int64
    /// The app it attested for: iOS `TEAMID.bundle.id`, Android the package name.
    package var appID: String
    /// iOS: `production` or `development` (the attestation's AAGUID). Android: `tee` or
    /// `strongbox`, where the key lives.
    package var environment: String
    /// Android: the SHA-256 of the app's signing certificate that the configuration listed.
    package var signingDigest: [UInt8]?
    /// iOS: Apple's receipt from the attestation, kept to ask for the device's fraud metric
    /// later. Android: empty.
    package var receipt: [UInt8]
    /// The SHA-256 of the client address key (an IPv6 /64 or an IPv4 address) it registered
    /// from, for the registration limits; never the address.
    package var client: [UInt8]?
    /// iOS: how many keys Apple says this app attested on the device in 30 days, once asked.
    package var riskMetric: Int64?
    package var createdAtMilliseconds: Int64
    package var lastSeenAtMilliseconds: Int64
    package var revokedAtMilliseconds: Int64?

    package init(
        id: String, platform: DevicePlatform = .ios, keyID: [UInt8], publicKey: [UInt8], counter: Int64,
        appID: String, environment: String, signingDigest: [UInt8]? = nil, receipt: [UInt8], client: [UInt8]? = nil,
        riskMetric: Int64? = nil, createdAtMilliseconds: Int64, lastSeenAtMilliseconds: Int64,
        revokedAtMilliseconds: Int64? = nil
    ) {
        self.id = id
        self.platform = platform
        self.keyID = keyID
        self.publicKey = publicKey
        self.counter = counter
        self.appID = appID
        self.environment = environment
        self.signingDigest = signingDigest
        self.receipt = receipt
        self.client = client
        self.riskMetric = riskMetric
        self.createdAtMilliseconds = createdAtMilliseconds
        self.lastSeenAtMilliseconds = lastSeenAtMilliseconds
        self.revokedAtMilliseconds = revokedAtMilliseconds
    }

    /// Never the key material, the receipt or the client.
    package var description: String {
        "StoredDevice(id: \(id), platform: \(platform.rawValue), appID: \(appID), environment: \(environment), "
            + "counter: \(counter)" + (revokedAtMilliseconds == nil ? ")" : ", revoked)")
    }
}

/// A device's session as the store keeps it: the SHA-256 digest of its `tgd_` token, never
/// the token.
package struct StoredDeviceSession: Sendable, Equatable, CustomStringConvertible {
    /// The 32-byte SHA-256 digest of the token.
    package var digest: [UInt8]
    package var deviceID: String
    package var createdAtMilliseconds: Int64
    package var expiresAtMilliseconds: Int64

    package init(digest: [UInt8], deviceID: String, createdAtMilliseconds: Int64, expiresAtMilliseconds: Int64) {
        self.digest = digest
        self.deviceID = deviceID
        self.createdAtMilliseconds = createdAtMilliseconds
        self.expiresAtMilliseconds = expiresAtMilliseconds
    }

    /// Never the digest.
    package var description: String {
        "StoredDeviceSession(deviceID: \(deviceID), expiresAtMilliseconds: \(expiresAtMilliseconds))"
    }
}

extension StoreError {
    /// ``DeviceRepository/openSession(_:deviceID:counter:nowMilliseconds:)`` given a session
    /// of another device than the one whose counter it raises.
    static func sessionOfAnotherDevice(store: String) -> StoreError {
        StoreError(.constraint, message: "\(store): a device's session must name the device that opens it")
    }
}
