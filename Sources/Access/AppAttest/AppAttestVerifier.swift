package import Crypto

/// Why an attestation or an assertion was refused: the log's `attest_error`. Never holds the
/// bytes it was about.
package struct AppAttestFailure: Error, Hashable, Sendable {
    package enum Reason: String, Sendable, CaseIterable {
        /// Not the CBOR, the base64 or the structure App Attest sends.
        case malformed
        /// The attestation's `fmt` is not `apple-appattest`.
        case format
        /// The certificates do not chain to a trusted root at the verification time.
        case chain
        /// The leaf's nonce is not SHA-256(authData ‖ SHA-256(challenge)).
        case nonce
        /// The key id is not SHA-256 of the leaf's key, or not authData's credential id.
        case keyID = "key_id"
        /// authData's rpIdHash is not the hash of an allowed (or the device's) App ID.
        case appID = "app_id"
        /// An attestation's counter is not 0, or an assertion's is not above the device's.
        case counter
        /// The AAGUID's environment is not the one `APP_ATTEST_ENVIRONMENT` allows.
        case environment
        /// The assertion's signature is not the device key's over its nonce.
        case signature
        /// The challenge was never issued, was used, or expired.
        case challenge
        /// No device has this key id, or it was revoked.
        case unknownDevice = "unknown_device"
    }

    package let reason: Reason
    init(_ reason: Reason) { self.reason = reason }
}

/// What a verified attestation tells about a device.
package struct VerifiedAttestation: Sendable {
    /// The device key: a 65-byte uncompressed P-256 point.
    package var publicKey: [UInt8]
    package var appID: String
    package var environment: AppAttestEnvironment
    /// Apple's receipt, kept for a later fraud-metric check.
    package var receipt: [UInt8]
}

/// Apple's steps for "Validating apps that connect to your server", as pure functions of the
/// bytes, the allowed apps, the trusted roots and the time: no store, no clock of its own.
package struct AppAttestVerifier: Sendable {
    /// The extension of the leaf certificate that holds the attestation's nonce.
    package static let nonceExtension = "1.2.840.113635.100.8.2"
    package static let productionAAGUID: [UInt8] = Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
    package static let developmentAAGUID: [UInt8] = Array("appattestdevelop".utf8)

    /// Each allowed App ID with its SHA-256 (authData's rpIdHash).
    let apps: [(id: String, hash: [UInt8])]
    let environments: AppAttestSettings.Environment
    let trust: X509TrustStore

    package init(appIDs: [String], environments: AppAttestSettings.Environment, trust: X509TrustStore) {
        apps = appIDs.map { ($0, SHA256.hash(Array($0.utf8))) }
        self.environments = environments
        self.trust = trust
    }

    /// The trust store of Apple's App Attestation root, and `extraRootPEM`'s root beside it.
    package static func trustStore(extraRootPEM: String?) throws(CryptoError) -> X509TrustStore {
        var roots = [try X509Certificate(pem: AppleAppAttestationRoot.pem)]
        if let extraRootPEM { roots.append(try X509Certificate(pem: extraRootPEM)) }
        return X509TrustStore(roots: roots)
    }

    /// Verifies a key's attestation object over `clientData` (the challenge's UTF-8 bytes).
    package func verifyAttestation(keyID: [UInt8], attestation: [UInt8], clientData: [UInt8], at unixSeconds: Int64)
        throws(AppAttestFailure) -> VerifiedAttestation
    {
        guard let object = try? CBORReader.decode(attestation).map else { throw AppAttestFailure(.malformed) }
        guard object["fmt"]?.text == "apple-appattest" else { throw AppAttestFailure(.format) }
        guard let statement = object["attStmt"]?.map, let chain = statement["x5c"]?.array, chain.count >= 2,
            let authDataBytes = object["authData"]?.bytes, let receipt = statement["receipt"]?.bytes
        else { throw AppAttestFailure(.malformed) }
        var certificates: [X509Certificate] = []
        for item in chain {
            guard let der = item.bytes, let certificate = try? X509Certificate(der: der) else {
                throw AppAttestFailure(.malformed)
            }
            certificates.append(certificate)
        }
        let leaf = certificates[0]
        do {
            try trust.verify(leaf: leaf, intermediates: Array(certificates.dropFirst()), at: unixSeconds)
        } catch {
            throw AppAttestFailure(.chain)
        }
        let nonce = SHA256.hash(authDataBytes + SHA256.hash(clientData))
        guard let value = leaf.extensionValue(oid: Self.nonceExtension), Self.nonce(inExtension: value) == nonce else {
            throw AppAttestFailure(.nonce)
        }
        guard let point = leaf.p256PublicPoint, SHA256.hash(point) == keyID else { throw AppAttestFailure(.keyID) }
        guard let authData = try? AuthenticatorData.parse(authDataBytes, as: .attestation),
            let credential = authData.attestedCredential
        else {
            throw AppAttestFailure(.malformed)
        }
        guard let app = apps.first(where: { $0.hash == authData.rpIdHash }) else { throw AppAttestFailure(.appID) }
        guard authData.signCount == 0 else { throw AppAttestFailure(.counter) }
        let environment: AppAttestEnvironment
        switch credential.aaguid {
        case Self.productionAAGUID: environment = .production
        case Self.developmentAAGUID: environment = .development
        default: throw AppAttestFailure(.environment)
        }
        guard environments.allows(environment) else { throw AppAttestFailure(.environment) }
        guard credential.credentialId == keyID else { throw AppAttestFailure(.keyID) }
        return VerifiedAttestation(publicKey: point, appID: app.id, environment: environment, receipt: receipt)
    }

    /// Verifies an assertion over `clientData` by the device whose key is `publicKey`,
    /// registered for `appID` with its last counter `counter`; returns the new counter.
    package func verifyAssertion(
        _ assertion: [UInt8], clientData: [UInt8], publicKey: [UInt8], appID: String, counter: Int64
    ) throws(AppAttestFailure) -> Int64 {
        guard let object = try? CBORReader.decode(assertion).map, let signature = object["signature"]?.bytes,
            let authDataBytes = object["authenticatorData"]?.bytes,
            let authData = try? AuthenticatorData.parse(authDataBytes, as: .assertion)
        else { throw AppAttestFailure(.malformed) }
        guard authData.rpIdHash == SHA256.hash(Array(appID.utf8)) else { throw AppAttestFailure(.appID) }
        guard Int64(authData.signCount) > counter else { throw AppAttestFailure(.counter) }
        // The device signs the nonce with ECDSA over SHA-256: the verification hashes it once more.
        let nonce = SHA256.hash(authDataBytes + SHA256.hash(clientData))
        guard let key = try? PublicKey(p256Point: publicKey),
            key.isValidSignature(signature, for: nonce, algorithm: .ecdsaP256SHA256DER)
        else {
            throw AppAttestFailure(.signature)
        }
        return Int64(authData.signCount)
    }

    /// The 32-byte nonce of the leaf's extension: DER `SEQUENCE { [1] EXPLICIT OCTET STRING }`.
    static func nonce(inExtension der: [UInt8]) -> [UInt8]? {
        var reader = DERReader(der)
        guard let sequence = reader.read(tag: 0x30), reader.isAtEnd else { return nil }
        var inner = DERReader(sequence)
        guard let tagged = inner.read(tag: 0xA1), inner.isAtEnd else { return nil }
        var octets = DERReader(tagged)
        guard let nonce = octets.read(tag: 0x04), octets.isAtEnd, nonce.count == 32 else { return nil }
        return nonce
    }
}

/// Just enough DER for the nonce extension: one tag-length-value at a time, definite lengths.
private struct DERReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    /// The content of the next element when its tag is `tag`.
    mutating func read(tag: UInt8) -> [UInt8]? {
        guard offset + 2 <= bytes.count, bytes[offset] == tag else { return nil }
        var length = Int(bytes[offset + 1])
        var start = offset + 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard count >= 1, count <= 2, start + count <= bytes.count else { return nil }
            length = bytes[start..<start + count].reduce(0) { $0 << 8 | Int($1) }
            start += count
        }
        guard length <= bytes.count - start else { return nil }
        offset = start + length
        return Array(bytes[start..<offset])
    }
}
