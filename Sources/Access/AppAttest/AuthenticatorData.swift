/// WebAuthn authenticator data (Web Authentication §6.1) as App Attest writes it: the
/// `authData` of an attestation object and the `authenticatorData` of an assertion.
///
/// Layout: `rpIdHash` (32 bytes), `flags` (1), `signCount` (4, big-endian); in an attestation
/// then the attested credential data — `aaguid` (16), the credential id's length (2,
/// big-endian), the credential id, and the credential public key as one CBOR item (a COSE
/// key); then, in either, an extensions map when any bytes are left.
///
/// App Attest frames two things unlike WebAuthn, and the parser follows the device:
/// - An assertion sets the AT flag but carries no attested credential data (the real iOS
///   assertion in the tests' fixture is 37 bytes with flags 0x40), so an assertion's
///   credential data is never read, whatever the flag says.
/// - Newer iOS versions append an extensions map without setting the ED flag (the sample
///   attestation in Apple's "Attestation Object Validation Guide" has flags 0x40 and the map
///   after its COSE key), so bytes after the fixed fields are read as the extensions map
///   whether or not ED is set. They must be exactly one CBOR map; anything after it is refused.
///   With ED set, the map must be there.
struct AuthenticatorData: Equatable, Sendable {
    /// Which object the data came from; App Attest frames the two differently.
    enum Kind: Sendable {
        /// The attestation object's `authData`: attested credential data required.
        case attestation
        /// An assertion's `authenticatorData`: no attested credential data.
        case assertion
    }

    /// The credential an attestation attests.
    struct AttestedCredential: Equatable, Sendable {
        /// 16 bytes: `appattestdevelop` or `appattest` and seven zero bytes in App Attest.
        let aaguid: [UInt8]
        /// App Attest's key identifier: the SHA-256 of the public key.
        let credentialId: [UInt8]
        /// The COSE key (RFC 9052 §7): 1 (kty), 3 (alg), −1 (crv), −2 (x), −3 (y).
        let publicKey: CBORMap
    }

    /// AT: attested credential data follows the fixed fields (in an attestation).
    static let attestedCredentialFlag: UInt8 = 0x40
    /// ED: extension data follows.
    static let extensionDataFlag: UInt8 = 0x80
    /// `rpIdHash`, `flags` and `signCount`.
    static let fixedByteCount = 37

    /// The bytes as received: the verifier hashes them into the nonce.
    let raw: [UInt8]
    /// SHA-256 of the App ID (team identifier, a dot, bundle identifier).
    let rpIdHash: [UInt8]
    let flags: UInt8
    /// The key's use counter: 0 in an attestation, then one more with each assertion.
    let signCount: UInt32
    /// Present in an attestation, nil in an assertion.
    let attestedCredential: AttestedCredential?
    /// The extensions map, when the data has one.
    let extensions: CBORMap?

    /// Reads `bytes` as the authenticator data of `kind`. `limits` bound each CBOR item in it.
    static func parse(
        _ bytes: [UInt8], as kind: Kind, limits: CBORLimits = .default
    ) throws(AuthenticatorDataError) -> AuthenticatorData {
        guard bytes.count >= fixedByteCount else { throw AuthenticatorDataError(.truncated, at: bytes.count) }
        let flags = bytes[32]
        let signCount = bytes[33..<37].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var offset = fixedByteCount

        var credential: AttestedCredential?
        if kind == .attestation {
            guard flags & attestedCredentialFlag != 0 else {
                throw AuthenticatorDataError(.noAttestedCredential, at: 32)
            }
            // aaguid and the length: 18 bytes.
            guard bytes.count - offset >= 18 else { throw AuthenticatorDataError(.truncated, at: bytes.count) }
            let aaguid = Array(bytes[offset..<(offset + 16)])
            let idLength = Int(bytes[offset + 16]) << 8 | Int(bytes[offset + 17])
            offset += 18
            guard bytes.count - offset >= idLength else { throw AuthenticatorDataError(.truncated, at: bytes.count) }
            let credentialId = Array(bytes[offset..<(offset + idLength)])
            offset += idLength
            let key: CBORValue
            let keyLength: Int
            do {
                (key, keyLength) = try CBORReader.decodePrefix(bytes, from: offset, limits: limits)
            } catch {
                throw AuthenticatorDataError(.credentialPublicKey(error.reason), at: error.offset)
            }
            guard let publicKey = key.map else { throw AuthenticatorDataError(.credentialPublicKeyNotMap, at: offset) }
            offset += keyLength
            credential = AttestedCredential(aaguid: aaguid, credentialId: credentialId, publicKey: publicKey)
        }

        var extensions: CBORMap?
        if offset < bytes.count {
            let item: CBORValue
            let itemLength: Int
            do {
                (item, itemLength) = try CBORReader.decodePrefix(bytes, from: offset, limits: limits)
            } catch {
                throw AuthenticatorDataError(.extensions(error.reason), at: error.offset)
            }
            guard let map = item.map else { throw AuthenticatorDataError(.extensionsNotMap, at: offset) }
            offset += itemLength
            guard offset == bytes.count else { throw AuthenticatorDataError(.trailingBytes, at: offset) }
            extensions = map
        } else if flags & extensionDataFlag != 0 {
            throw AuthenticatorDataError(.missingExtensions, at: offset)
        }

        return AuthenticatorData(
            raw: bytes, rpIdHash: Array(bytes[0..<32]), flags: flags, signCount: signCount,
            attestedCredential: credential, extensions: extensions
        )
    }
}

/// Why bytes are not App Attest authenticator data. Holds no byte of the input.
struct AuthenticatorDataError: Error, Equatable, Sendable, CustomStringConvertible {
    enum Reason: Equatable, Sendable {
        /// Shorter than the fixed fields, or than the credential id's length says.
        case truncated
        /// An attestation's data without the AT flag.
        case noAttestedCredential
        /// The credential public key is not one well-formed CBOR item.
        case credentialPublicKey(CBORError.Reason)
        /// The credential public key is a CBOR item but not a map.
        case credentialPublicKeyNotMap
        /// What follows the fixed fields (and the credential) is not one well-formed CBOR item.
        case extensions(CBORError.Reason)
        /// What follows the fixed fields (and the credential) is a CBOR item but not a map.
        case extensionsNotMap
        /// The ED flag is set and nothing follows.
        case missingExtensions
        /// Bytes after the extensions map.
        case trailingBytes
    }

    let reason: Reason
    /// Where the fault is, from the start of the authenticator data.
    let offset: Int

    init(_ reason: Reason, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    var description: String {
        let what =
            switch reason {
            case .truncated: "truncated"
            case .noAttestedCredential: "no attested credential data"
            case .credentialPublicKey(let cbor): "credential public key: CBOR \(cbor.rawValue)"
            case .credentialPublicKeyNotMap: "credential public key is not a map"
            case .extensions(let cbor): "extensions: CBOR \(cbor.rawValue)"
            case .extensionsNotMap: "extensions are not a map"
            case .missingExtensions: "ED flag set without extensions"
            case .trailingBytes: "trailing bytes"
            }
        return "authenticator data: \(what) at byte \(offset)"
    }
}
