/// The Key Attestation extension (OID 1.3.6.1.4.1.11129.2.1.17) of an Android attestation's
/// leaf: what the phone's keystore says about the key, read by ``parse(_:)`` with only what
/// the gateway decides on kept.
///
/// ```
/// KeyDescription ::= SEQUENCE {
///     attestationVersion INTEGER, attestationSecurityLevel SecurityLevel,
///     keyMintVersion INTEGER, keyMintSecurityLevel SecurityLevel,
///     attestationChallenge OCTET STRING, uniqueId OCTET STRING,
///     softwareEnforced AuthorizationList, hardwareEnforced AuthorizationList }
/// ```
///
/// Strict on structure (a wrong universal type, a length past its container, bytes after a
/// structure, a repeated tag: refused) and tolerant of what real TEEs emit (BOOLEAN 0x01, SET
/// OF out of order, tags out of order, tags of later Android versions: skipped when well formed).
package struct KeyDescription: Sendable, Equatable {
    /// Where a key lives: the keystore's SecurityLevel.
    package enum SecurityLevel: Int64, Sendable, Comparable {
        case software = 0
        case trustedEnvironment = 1
        case strongBox = 2

        package static func < (lhs: SecurityLevel, rhs: SecurityLevel) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The phone's boot state when the key was made.
    package struct RootOfTrust: Sendable, Equatable {
        package enum BootState: Int64, Sendable {
            case verified = 0
            case selfSigned = 1
            case unverified = 2
            case failed = 3
        }

        package var deviceLocked: Bool
        package var verifiedBootState: BootState
    }

    /// The app that asked for the key: the packages of its user id and their signing
    /// certificates' SHA-256 digests.
    package struct ApplicationID: Sendable, Equatable {
        package var packages: [(name: String, version: Int64)]
        package var signatureDigests: [[UInt8]]

        package static func == (lhs: ApplicationID, rhs: ApplicationID) -> Bool {
            lhs.packages.map(\.name) == rhs.packages.map(\.name)
                && lhs.packages.map(\.version) == rhs.packages.map(\.version)
                && lhs.signatureDigests == rhs.signatureDigests
        }
    }

    /// The tags of an AuthorizationList the gateway reads.
    package struct AuthorizationList: Sendable, Equatable {
        /// Tag 2: 1 RSA, 3 EC.
        package var algorithm: Int64?
        /// Tag 10: 1 P-256.
        package var ecCurve: Int64?
        /// Tag 702: 0 GENERATED (made in the keystore), others imported or derived.
        package var origin: Int64?
        /// Tag 704.
        package var rootOfTrust: RootOfTrust?
        /// Tag 705: e.g. 130000 for Android 13.
        package var osVersion: Int64?
        /// Tag 706: YYYYMM.
        package var osPatchLevel: Int64?
        /// Tag 709.
        package var applicationID: ApplicationID?

        package init() {}
    }

    package var attestationVersion: Int64
    package var attestationSecurityLevel: SecurityLevel
    package var keyMintVersion: Int64
    package var keyMintSecurityLevel: SecurityLevel
    package var challenge: [UInt8]
    package var softwareEnforced: AuthorizationList
    package var hardwareEnforced: AuthorizationList

    /// The extension's OID.
    package static let oid = "1.3.6.1.4.1.11129.2.1.17"
    /// The most packages or digests an application id may list: a shared user id lists a
    /// dozen; far more is not a phone's.
    static let maximumListed = 256

    /// Reads the extension's value (the DER inside its OCTET STRING).
    package static func parse(_ der: [UInt8]) throws(AttestationDER.Malformed) -> KeyDescription {
        var outer = AttestationDER(der)
        let sequence = try outer.required(universal: AttestationDER.Universal.sequence, constructed: true)
        try outer.finish()
        var fields = outer.reader(of: sequence)
        let versionElement = try fields.required(universal: AttestationDER.Universal.integer)
        let attestationVersion = try fields.integer(versionElement)
        let attestationLevel = try securityLevel(&fields)
        let keyMintElement = try fields.required(universal: AttestationDER.Universal.integer)
        let keyMintVersion = try fields.integer(keyMintElement)
        let keyMintLevel = try securityLevel(&fields)
        let challengeElement = try fields.required(universal: AttestationDER.Universal.octetString)
        let challenge = fields.content(challengeElement)
        _ = try fields.required(universal: AttestationDER.Universal.octetString) // uniqueId: not a device identity
        let softwareElement = try fields.required(universal: AttestationDER.Universal.sequence, constructed: true)
        let hardwareElement = try fields.required(universal: AttestationDER.Universal.sequence, constructed: true)
        try fields.finish()
        let software = try authorizationList(fields.reader(of: softwareElement))
        let hardware = try authorizationList(fields.reader(of: hardwareElement))
        return KeyDescription(
            attestationVersion: attestationVersion, attestationSecurityLevel: attestationLevel,
            keyMintVersion: keyMintVersion, keyMintSecurityLevel: keyMintLevel, challenge: challenge,
            softwareEnforced: software, hardwareEnforced: hardware)
    }

    private static func securityLevel(_ reader: inout AttestationDER) throws(AttestationDER.Malformed) -> SecurityLevel
    {
        let element = try reader.required(universal: AttestationDER.Universal.enumerated)
        guard let level = SecurityLevel(rawValue: try reader.integer(element)) else { throw AttestationDER.Malformed() }
        return level
    }

    /// Every element an EXPLICIT context tag holding exactly one element; each tag at most once.
    private static func authorizationList(_ reader: AttestationDER) throws(AttestationDER.Malformed)
        -> AuthorizationList
    {
        var reader = reader
        var list = AuthorizationList()
        var seen: Set<UInt32> = []
        while let tagged = try reader.next() {
            guard tagged.tagClass == .contextSpecific, tagged.constructed, seen.insert(tagged.number).inserted else {
                throw AttestationDER.Malformed()
            }
            var inner = reader.reader(of: tagged)
            let value = try inner.required()
            try inner.finish()
            switch tagged.number {
            case 2: list.algorithm = try integer(value, in: inner)
            case 10: list.ecCurve = try integer(value, in: inner)
            case 702: list.origin = try integer(value, in: inner)
            case 704: list.rootOfTrust = try rootOfTrust(value, in: inner)
            case 705: list.osVersion = try integer(value, in: inner)
            case 706: list.osPatchLevel = try integer(value, in: inner)
            case 709: list.applicationID = try applicationID(value, in: inner)
            default:
                // A tag this reader has no use for, or one a later Android added: well formed
                // (one element in its EXPLICIT tag) is all that is asked of it.
                break
            }
        }
        return list
    }

    private static func integer(_ element: AttestationDER.Element, in reader: AttestationDER)
        throws(AttestationDER.Malformed) -> Int64
    {
        guard element.isUniversal(AttestationDER.Universal.integer) else { throw AttestationDER.Malformed() }
        return try reader.integer(element)
    }

    /// `SEQUENCE { verifiedBootKey OCTET STRING, deviceLocked BOOLEAN, verifiedBootState
    /// ENUMERATED, verifiedBootHash OCTET STRING OPTIONAL }`.
    private static func rootOfTrust(_ element: AttestationDER.Element, in reader: AttestationDER)
        throws(AttestationDER.Malformed) -> RootOfTrust
    {
        guard element.isUniversal(AttestationDER.Universal.sequence, constructed: true) else {
            throw AttestationDER.Malformed()
        }
        var fields = reader.reader(of: element)
        _ = try fields.required(universal: AttestationDER.Universal.octetString)
        let lockedElement = try fields.required(universal: AttestationDER.Universal.boolean)
        let locked = try fields.boolean(lockedElement)
        let stateElement = try fields.required(universal: AttestationDER.Universal.enumerated)
        guard let state = RootOfTrust.BootState(rawValue: try fields.integer(stateElement)) else {
            throw AttestationDER.Malformed()
        }
        if !fields.isAtEnd { _ = try fields.required(universal: AttestationDER.Universal.octetString) }
        try fields.finish()
        return RootOfTrust(deviceLocked: locked, verifiedBootState: state)
    }

    /// `OCTET STRING` holding `SEQUENCE { SET OF SEQUENCE { packageName OCTET STRING, version
    /// INTEGER }, SET OF signatureDigest OCTET STRING }`; the sets in any order.
    private static func applicationID(_ element: AttestationDER.Element, in reader: AttestationDER)
        throws(AttestationDER.Malformed) -> ApplicationID
    {
        guard element.isUniversal(AttestationDER.Universal.octetString) else { throw AttestationDER.Malformed() }
        var wrapped = reader.reader(of: element)
        let sequence = try wrapped.required(universal: AttestationDER.Universal.sequence, constructed: true)
        try wrapped.finish()
        var fields = wrapped.reader(of: sequence)
        let packageElement = try fields.required(universal: AttestationDER.Universal.set, constructed: true)
        let digestElement = try fields.required(universal: AttestationDER.Universal.set, constructed: true)
        try fields.finish()
        var packageSet = fields.reader(of: packageElement)
        var digestSet = fields.reader(of: digestElement)
        var packages: [(name: String, version: Int64)] = []
        while let info = try packageSet.next() {
            guard info.isUniversal(AttestationDER.Universal.sequence, constructed: true),
                packages.count < maximumListed
            else { throw AttestationDER.Malformed() }
            var parts = packageSet.reader(of: info)
            let nameElement = try parts.required(universal: AttestationDER.Universal.octetString)
            let versionElement = try parts.required(universal: AttestationDER.Universal.integer)
            let name = parts.content(nameElement)
            let version = try parts.integer(versionElement)
            try parts.finish()
            // Package names are ASCII; bytes that are not UTF-8 match no configured name.
            packages.append((String(decoding: name, as: UTF8.self), version))
        }
        var digests: [[UInt8]] = []
        while let digest = try digestSet.next() {
            guard digest.isUniversal(AttestationDER.Universal.octetString), digests.count < maximumListed else {
                throw AttestationDER.Malformed()
            }
            digests.append(digestSet.content(digest))
        }
        return ApplicationID(packages: packages, signatureDigests: digests)
    }
}
