package import Crypto

/// Why an Android attestation or session was refused: the log's `attest_error`. Never holds
/// the bytes it was about.
package struct AndroidAttestationFailure: Error, Hashable, Sendable {
    package enum Reason: String, Sendable, CaseIterable {
        /// Not base64, not DER certificates, too many or too large, or a chain too short.
        case malformed
        /// A link whose issuer name is not the subject above it or whose signature does not
        /// verify with the key above it, a chain of the wrong shape, or one extended past the leaf.
        case chain
        /// The chain does not end at one of Google's hardware attestation roots (or the test root).
        case root
        /// An intermediate not yet valid, or expired on a remotely provisioned chain.
        case validity
        /// A certificate of the chain is on the revocation list.
        case revoked
        /// The Key Attestation extension missing from the leaf, present elsewhere, or malformed.
        case `extension`
        /// The attested challenge is not the one issued, or the challenge was never issued,
        /// was used, or expired.
        case challenge
        /// The key or the attestation is not in a TEE or StrongBox (StrongBox when required).
        case securityLevel = "security_level"
        /// The key was imported or derived, not generated in the keystore.
        case origin
        /// No listed package with one of its listed signing-certificate digests.
        case app
        /// No root of trust in the hardware list, a failed boot, or (unless relaxed) an
        /// unverified boot or an unlocked bootloader.
        case boot
        /// The OS patch level is below the configured minimum.
        case patchLevel = "patch_level"
        /// A key the gateway cannot verify a session signature with (only P-256 and RSA ≥ 2048).
        case keyType = "key_type"
        /// The session signature is not the device key's over its challenge.
        case signature
        /// No device has this key id, or it was revoked.
        case unknownDevice = "unknown_device"
    }

    package let reason: Reason
    package init(_ reason: Reason) { self.reason = reason }
}

/// What an operator accepts from an Android phone (docs/android.md).
package struct AndroidAttestationPolicy: Sendable, Equatable {
    /// Each allowed package with the SHA-256 digests of the signing certificates its builds
    /// carry (Google Play's re-signing key and the developer's own for other stores).
    package var apps: [String: [[UInt8]]]
    /// Whether a verified boot and a locked bootloader are required. Off accepts unverified
    /// and self-signed boots and unlocked bootloaders (custom ROMs, test phones), never a failed boot.
    package var requireLockedBootloader = true
    /// Whether the key and the attestation must both be in StrongBox.
    package var requireStrongBox = false
    /// The lowest OS patch level accepted (YYYYMM), if any.
    package var minimumPatchLevel: Int64?

    package init(apps: [String: [[UInt8]]]) {
        self.apps = apps
    }
}

/// How a chain's keys were provisioned: the intermediate under the root says.
package enum AndroidProvisioning: String, Sendable {
    /// Remote key provisioning: root → Droid CA2 → Droid CA3 → attestation key → leaf; the
    /// intermediates live days to weeks.
    case remote
    /// Keys installed at the factory: the intermediate under the root names a serial number;
    /// its expiry is not checked, since such keys cannot be rotated.
    case factory
}

/// What a verified Android attestation tells about a device key.
package struct VerifiedAndroidKey: Sendable, Equatable {
    /// The leaf's DER SubjectPublicKeyInfo: the key that signs the device's sessions.
    package var subjectPublicKeyInfo: [UInt8]
    /// SHA-256 of ``subjectPublicKeyInfo``: the device's key id.
    package var keyID: [UInt8]
    package var package: String
    /// The signing-certificate digest that matched the configuration.
    package var signingDigest: [UInt8]
    /// The lower of the attestation's and the key's security levels.
    package var securityLevel: KeyDescription.SecurityLevel
    package var bootState: KeyDescription.RootOfTrust.BootState
    package var deviceLocked: Bool
    package var osPatchLevel: Int64?
    package var attestationVersion: Int64
    package var provisioning: AndroidProvisioning
}

/// Android Key Attestation verified offline, as pure functions of the chain, the challenge,
/// the roots, the revocation list, the policy and the time: no store, no clock, no network.
///
/// The chain is walked link by link here (names byte for byte, each signature with the key
/// above), not by libcrypto's path validation: genuine chains break RFC 5280 rules (batch
/// certificates without `cA`, expired factory intermediates, leaves dated 2106) that Google's
/// own verifier does not apply either.
package struct AndroidAttestationVerifier: Sendable {
    /// At most this many certificates in a chain (RKP chains have 5, factory ones 4).
    package static let maximumCertificates = 8
    /// At most this many bytes in one certificate.
    package static let maximumCertificateBytes = 16_384
    /// The remote-provisioning intermediate directly under a root.
    static let remoteProvisioningCommonName = "Droid CA2"

    /// The trusted roots, with their key and name read once.
    let anchors: [(certificate: X509Certificate, key: [UInt8], subject: [UInt8])]
    package let policy: AndroidAttestationPolicy

    /// A verifier trusting Google's hardware attestation roots, and `extraRoots` beside them
    /// (a test root: the server takes one only under `--env testing`).
    package init(policy: AndroidAttestationPolicy, extraRoots: [X509Certificate] = []) {
        anchors = (Self.googleRoots + extraRoots).map { ($0, $0.subjectPublicKeyInfoDER, $0.subjectNameDER) }
        self.policy = policy
    }

    /// Google's hardware attestation roots.
    package static let googleRoots: [X509Certificate] = GoogleHardwareAttestationRoots.pems.map {
        // The PEMs are part of the binary; one that does not read is a build defect.
        do { return try X509Certificate(pem: $0) } catch { fatalError("a pinned Google root does not read: \(error)") }
    }

    /// Verifies `chain` (DER, leaf first, as `KeyStore.getCertificateChain` gives it) made with
    /// `setAttestationChallenge(challenge)`, at `unixSeconds`.
    package func verify(
        chain derChain: [[UInt8]], challenge: [UInt8], at unixSeconds: Int64, revocations: AndroidRevocationList
    ) throws(AndroidAttestationFailure) -> VerifiedAndroidKey {
        guard (3...Self.maximumCertificates).contains(derChain.count),
            derChain.allSatisfy({ !$0.isEmpty && $0.count <= Self.maximumCertificateBytes })
        else { throw AndroidAttestationFailure(.malformed) }
        var chain: [X509Certificate] = []
        chain.reserveCapacity(derChain.count)
        for der in derChain {
            guard let certificate = try? X509Certificate(der: der) else { throw AndroidAttestationFailure(.malformed) }
            chain.append(certificate)
        }
        let provisioning = try verifyPath(chain)
        try verifyDates(chain, provisioning: provisioning, at: unixSeconds)
        for certificate in chain where revocations.refuses(serialHex: certificate.serialHex) {
            throw AndroidAttestationFailure(.revoked)
        }
        let leaf = chain[0]
        guard chain.dropFirst().allSatisfy({ $0.extensionCount(oid: KeyDescription.oid) == 0 }) else {
            // A genuine attested key can sign a child with a made-up extension: only the
            // leaf's may be believed, and a chain carrying another is an attack.
            throw AndroidAttestationFailure(.chain)
        }
        guard leaf.extensionCount(oid: KeyDescription.oid) == 1,
            let value = leaf.extensionValue(oid: KeyDescription.oid),
            let description = try? KeyDescription.parse(value)
        else { throw AndroidAttestationFailure(.extension) }
        return try judge(description, leaf: leaf, challenge: challenge, provisioning: provisioning)
    }

    /// Whether `signature` (X9.62 DER for EC keys, PKCS #1 v1.5 for RSA) is the key's over
    /// ``sessionMessage(challenge:)``.
    package static func isValidSession(signature: [UInt8], challenge: String, subjectPublicKeyInfo: [UInt8]) -> Bool {
        guard let key = try? PublicKey(derSubjectPublicKeyInfo: subjectPublicKeyInfo) else { return false }
        let algorithm: SignatureAlgorithm
        switch key.kind {
        case .p256: algorithm = .ecdsaP256SHA256DER
        case .rsa: algorithm = .rsaPKCS1v15SHA256
        }
        return key.isValidSignature(signature, for: sessionMessage(challenge: challenge), algorithm: algorithm)
    }

    /// What a device signs to open a session: a fixed label, so the signature means nothing
    /// anywhere else, then the challenge as the gateway gave it.
    package static func sessionMessage(challenge: String) -> [UInt8] {
        Array("textgateway-android-session:".utf8) + Array(challenge.utf8)
    }

    /// The chain ends at a pinned root (by key), each link names and is signed by the
    /// certificate above it, and its shape is one a phone makes.
    private func verifyPath(_ chain: [X509Certificate]) throws(AndroidAttestationFailure) -> AndroidProvisioning {
        let count = chain.count
        let sentRoot = chain[count - 1]
        let underRoot = chain[count - 2]
        guard sentRoot.isSelfIssued else { throw AndroidAttestationFailure(.root) }
        // The phone's own copy of the root may have expired (the 2016 certificate): only its
        // key counts, and it must be a pinned root's that signed the certificate under it.
        let rootKey = sentRoot.subjectPublicKeyInfoDER
        let issuer = underRoot.issuerNameDER
        guard
            anchors.contains(where: {
                $0.key == rootKey && $0.subject == issuer && underRoot.isSigned(by: $0.certificate)
            })
        else { throw AndroidAttestationFailure(.root) }
        for index in stride(from: count - 3, through: 0, by: -1) {
            let certificate = chain[index]
            let issuer = chain[index + 1]
            guard certificate.issuerNameDER == issuer.subjectNameDER, certificate.isSigned(by: issuer) else {
                throw AndroidAttestationFailure(.chain)
            }
        }
        // Anything after the leaf would be a certificate signed by an attested key.
        let provisioning: AndroidProvisioning =
            underRoot.subjectHasSerialNumber ? .factory : .remote
        switch provisioning {
        case .remote: guard count == 5 else { throw AndroidAttestationFailure(.chain) }
        case .factory: guard count == 3 || count == 4 else { throw AndroidAttestationFailure(.chain) }
        }
        return provisioning
    }

    /// The intermediates' dates at `unixSeconds`; never the leaf's (the app and the phone's
    /// clock set them) nor the sent root's.
    private func verifyDates(_ chain: [X509Certificate], provisioning: AndroidProvisioning, at unixSeconds: Int64)
        throws(AndroidAttestationFailure)
    {
        for certificate in chain.dropFirst().dropLast() {
            guard certificate.notBefore <= unixSeconds else { throw AndroidAttestationFailure(.validity) }
            if provisioning == .remote, unixSeconds >= certificate.notAfter {
                throw AndroidAttestationFailure(.validity)
            }
        }
    }

    private func judge(
        _ description: KeyDescription, leaf: X509Certificate, challenge: [UInt8], provisioning: AndroidProvisioning
    ) throws(AndroidAttestationFailure) -> VerifiedAndroidKey {
        guard ConstantTime.equals(description.challenge, challenge) else { throw AndroidAttestationFailure(.challenge) }
        let level = min(description.attestationSecurityLevel, description.keyMintSecurityLevel)
        guard level >= (policy.requireStrongBox ? .strongBox : .trustedEnvironment) else {
            throw AndroidAttestationFailure(.securityLevel)
        }
        let hardware = description.hardwareEnforced
        guard hardware.origin == 0 else { throw AndroidAttestationFailure(.origin) }
        guard let key = try? leaf.publicKey else { throw AndroidAttestationFailure(.keyType) }
        switch key.kind {
        case .p256: break
        case .rsa(let bits): guard bits >= 2048 else { throw AndroidAttestationFailure(.keyType) }
        }
        // Written by Android's keystore service, never by the TEE: as true as the OS, which
        // is why the boot state below matters.
        guard let application = description.softwareEnforced.applicationID ?? hardware.applicationID,
            let (package, digest) = match(application)
        else { throw AndroidAttestationFailure(.app) }
        guard let root = hardware.rootOfTrust, root.verifiedBootState != .failed else {
            throw AndroidAttestationFailure(.boot)
        }
        if policy.requireLockedBootloader {
            guard root.verifiedBootState == .verified, root.deviceLocked else { throw AndroidAttestationFailure(.boot) }
        }
        let patchLevel = hardware.osPatchLevel ?? description.softwareEnforced.osPatchLevel
        if let minimum = policy.minimumPatchLevel {
            guard let patchLevel, patchLevel >= minimum else { throw AndroidAttestationFailure(.patchLevel) }
        }
        let spki = leaf.subjectPublicKeyInfoDER
        return VerifiedAndroidKey(
            subjectPublicKeyInfo: spki, keyID: SHA256.hash(spki), package: package, signingDigest: digest,
            securityLevel: level, bootState: root.verifiedBootState, deviceLocked: root.deviceLocked,
            osPatchLevel: patchLevel, attestationVersion: description.attestationVersion, provisioning: provisioning)
    }

    /// The first listed package the policy allows with one of the listed digests it allows for it.
    private func match(_ application: KeyDescription.ApplicationID) -> (String, [UInt8])? {
        for package in application.packages {
            guard let allowed = policy.apps[package.name] else { continue }
            if let digest = application.signatureDigests.first(where: { allowed.contains($0) }) {
                return (package.name, digest)
            }
        }
        return nil
    }
}
