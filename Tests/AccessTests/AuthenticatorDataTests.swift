import AccessTestSupport
import Crypto
import Testing

@testable import Access

@Suite("App Attest authenticator data")
struct AuthenticatorDataTests {
    // MARK: Hand-made parts

    static let rpIdHash = [UInt8](repeating: 0xAB, count: 32)
    static let keyID = [UInt8](repeating: 0x5C, count: 32)

    /// `rpIdHash`, `flags`, `signCount`.
    static func fixed(flags: UInt8, counter: UInt32 = 0) -> [UInt8] {
        rpIdHash + [
            flags, UInt8(counter >> 24), UInt8(counter >> 16 & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter & 0xFF),
        ]
    }

    /// A COSE EC2 key on P-256 for ES256: {1: 2, 3: -7, -1: 1, -2: x, -3: y}, 77 bytes.
    static let coseKey: [UInt8] =
        [0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20] + [UInt8](repeating: 0x11, count: 32)
        + [0x22, 0x58, 0x20] + [UInt8](repeating: 0x22, count: 32)

    /// Attested credential data: the development AAGUID, the id's length, the id, the key.
    static func credential(id: [UInt8] = keyID, length: Int? = nil, key: [UInt8] = coseKey) -> [UInt8] {
        let length = length ?? id.count
        return Array("appattestdevelop".utf8) + [UInt8(length >> 8), UInt8(length & 0xFF)] + id + key
    }

    /// An extensions map of the shape newer iOS versions append:
    /// {"apple_bundle_version_01": "1", "apple_validation_category_01": h'01000000'}.
    static let extensionMap: [UInt8] =
        [0xA2, 0x77] + Array("apple_bundle_version_01".utf8) + [0x61, 0x31]
        + [0x78, 0x1C] + Array("apple_validation_category_01".utf8) + [0x44, 0x01, 0x00, 0x00, 0x00]

    /// Where the credential public key starts in hand-made attestation data.
    static let keyOffset = 37 + 16 + 2 + 32

    // MARK: The real device's data

    static func realAuthData() throws -> (attestation: [UInt8], assertion: [UInt8], fixture: AppAttestFixture.Values) {
        let fixture = try AppAttestFixture.load()
        let attestation = try #require(try CBORReader.decode(fixture.attestation).map?["authData"]?.bytes)
        let assertion = try #require(try CBORReader.decode(fixture.assertion).map?["authenticatorData"]?.bytes)
        return (attestation, assertion, fixture)
    }

    @Test("the real attestation's data: counter 0, development AAGUID, the key id, the App ID's hash")
    func realAttestation() throws {
        let (bytes, _, fixture) = try Self.realAuthData()
        let data = try AuthenticatorData.parse(bytes, as: .attestation)
        #expect(data.raw == bytes)
        #expect(data.rpIdHash == SHA256.hash(AppAttestFixture.appID.utf8))
        #expect(data.flags == AuthenticatorData.attestedCredentialFlag)
        #expect(data.signCount == 0)
        #expect(data.extensions == nil)
        let credential = try #require(data.attestedCredential)
        #expect(credential.aaguid == Array("appattestdevelop".utf8))
        #expect(credential.credentialId == fixture.keyID)
        // The COSE key is the device key of the PEM: EC2, ES256, P-256, and the same point
        // (the SubjectPublicKeyInfo ends in 04 || x || y).
        let key = credential.publicKey
        #expect(key[1] == .unsigned(2))
        #expect(key[3]?.integer == -7)
        #expect(key[-1] == .unsigned(1))
        let x = try #require(key[-2]?.bytes)
        let y = try #require(key[-3]?.bytes)
        #expect(Array(fixture.publicKeyInfo.suffix(65)) == [0x04] + x + y)
    }

    @Test("the real assertion's data: counter 1, no credential data although AT is set")
    func realAssertion() throws {
        let (attestation, bytes, _) = try Self.realAuthData()
        let data = try AuthenticatorData.parse(bytes, as: .assertion)
        #expect(data.raw == bytes)
        #expect(data.rpIdHash == Array(attestation[0..<32]))
        #expect(data.signCount == 1)
        // App Attest sets AT in an assertion and writes no credential data after it.
        #expect(data.flags == AuthenticatorData.attestedCredentialFlag)
        #expect(data.attestedCredential == nil)
        #expect(data.extensions == nil)
        // Read as an attestation's, the same bytes lack the credential AT announces.
        #expect(throws: AuthenticatorDataError(.truncated, at: 37)) {
            try AuthenticatorData.parse(bytes, as: .attestation)
        }
    }

    @Test("an extensions map after the real credential, with the ED flag, is read")
    func realAttestationWithExtensions() throws {
        let (bytes, _, fixture) = try Self.realAuthData()
        var extended = bytes + Self.extensionMap
        extended[32] |= AuthenticatorData.extensionDataFlag
        let data = try AuthenticatorData.parse(extended, as: .attestation)
        #expect(data.raw == extended)
        #expect(data.attestedCredential?.credentialId == fixture.keyID)
        let extensions = try #require(data.extensions)
        #expect(extensions["apple_bundle_version_01"] == .text("1"))
        #expect(extensions["apple_validation_category_01"] == .bytes([1, 0, 0, 0]))
    }

    @Test(
        "an extensions map is read whether or not ED is set, as newer iOS versions write it",
        arguments: [
            (AuthenticatorData.Kind.attestation, UInt8(0x40)),
            (.attestation, 0xC0),
            (.assertion, 0x00),
            (.assertion, 0x40),
            (.assertion, 0x80),
            (.assertion, 0xC0),
        ]
    )
    func extensionsWithAnyFlags(kind: AuthenticatorData.Kind, flags: UInt8) throws {
        let rest = kind == .attestation ? Self.credential() + Self.extensionMap : Self.extensionMap
        let data = try AuthenticatorData.parse(Self.fixed(flags: flags, counter: 7) + rest, as: kind)
        #expect(data.signCount == 7)
        #expect(data.extensions?["apple_bundle_version_01"] == .text("1"))
        #expect((data.attestedCredential != nil) == (kind == .attestation))
    }

    @Test("a credential id of any length the data holds is read")
    func credentialIdLengths() throws {
        for id in [[], [0x01], [UInt8](repeating: 0x7E, count: 300)] as [[UInt8]] {
            let data = try AuthenticatorData.parse(Self.fixed(flags: 0x40) + Self.credential(id: id), as: .attestation)
            #expect(data.attestedCredential?.credentialId == id)
            #expect(data.attestedCredential?.publicKey[-2]?.bytes?.count == 32)
        }
    }

    struct ErrorCase: CustomTestStringConvertible, Sendable {
        var name: String
        var bytes: [UInt8]
        var kind: AuthenticatorData.Kind
        var error: AuthenticatorDataError

        init(
            _ name: String, _ bytes: [UInt8], _ kind: AuthenticatorData.Kind, _ reason: AuthenticatorDataError.Reason,
            at offset: Int
        ) {
            self.name = name
            self.bytes = bytes
            self.kind = kind
            self.error = AuthenticatorDataError(reason, at: offset)
        }

        var testDescription: String { name }
    }

    static let refused: [ErrorCase] = {
        let attestation = fixed(flags: 0x40) + credential()
        let end = attestation.count
        return [
            ErrorCase("no bytes", [], .assertion, .truncated, at: 0),
            ErrorCase(
                "one byte short of the counter", Array(fixed(flags: 0).dropLast()), .assertion, .truncated, at: 36),
            ErrorCase(
                "an attestation without AT", fixed(flags: 0x00) + credential(), .attestation, .noAttestedCredential,
                at: 32),
            ErrorCase(
                "an attestation with ED but without AT", fixed(flags: 0x80) + extensionMap, .attestation,
                .noAttestedCredential, at: 32),
            ErrorCase(
                "an attestation that ends after the counter", fixed(flags: 0x40), .attestation, .truncated, at: 37),
            ErrorCase(
                "an attestation cut inside the AAGUID", Array(attestation[0..<45]), .attestation, .truncated, at: 45),
            ErrorCase(
                "an attestation cut inside the id's length", Array(attestation[0..<54]), .attestation, .truncated,
                at: 54),
            ErrorCase(
                "a credential id longer than the bytes left",
                fixed(flags: 0x40) + credential(length: 0x0100, key: []), .attestation, .truncated, at: 87
            ),
            ErrorCase(
                "no credential public key", fixed(flags: 0x40) + credential(key: []), .attestation,
                .credentialPublicKey(.truncated), at: keyOffset),
            ErrorCase(
                "a credential public key cut short", Array(attestation.dropLast()), .attestation,
                .credentialPublicKey(.truncated), at: keyOffset + 43),
            ErrorCase(
                "an indefinite-length credential public key",
                fixed(flags: 0x40) + credential(key: [0xBF, 0x01, 0x02, 0xFF]),
                .attestation, .credentialPublicKey(.indefiniteLength), at: keyOffset
            ),
            ErrorCase(
                "a credential public key with a key twice",
                fixed(flags: 0x40) + credential(key: [0xA2, 0x01, 0x02, 0x01, 0x02]),
                .attestation, .credentialPublicKey(.duplicateKey), at: keyOffset + 3
            ),
            ErrorCase(
                "a credential public key that is not a map", fixed(flags: 0x40) + credential(key: [0x01]), .attestation,
                .credentialPublicKeyNotMap, at: keyOffset),
            ErrorCase(
                "an attestation with ED and no extensions", fixed(flags: 0xC0) + credential(), .attestation,
                .missingExtensions, at: end),
            ErrorCase(
                "an assertion with ED and no extensions", fixed(flags: 0x80, counter: 1), .assertion,
                .missingExtensions, at: 37),
            ErrorCase(
                "a byte after the extensions map", attestation + extensionMap + [0x00], .attestation, .trailingBytes,
                at: end + extensionMap.count),
            ErrorCase(
                "two maps after an assertion's counter", fixed(flags: 0x40) + [0xA0, 0xA0], .assertion, .trailingBytes,
                at: 38),
            ErrorCase(
                "a byte after the credential public key", attestation + [0x01], .attestation, .extensionsNotMap, at: end
            ),
            ErrorCase(
                "an integer after an assertion's counter", fixed(flags: 0x40) + [0x01], .assertion, .extensionsNotMap,
                at: 37),
            ErrorCase(
                "a break after an assertion's counter", fixed(flags: 0x40) + [0xFF], .assertion,
                .extensions(.indefiniteLength), at: 37),
            ErrorCase(
                "an extensions map cut short", fixed(flags: 0xC0) + credential() + extensionMap.dropLast(),
                .attestation, .extensions(.truncated), at: end + 57),
            ErrorCase(
                "an extensions map with a tag", fixed(flags: 0x80) + [0xA1, 0x61, 0x61, 0xC1, 0x00], .assertion,
                .extensions(.tag), at: 40),
        ]
    }()

    @Test("refuses data that is not what its flags and kind say, saying where", arguments: refused)
    func refuses(_ test: ErrorCase) {
        #expect(throws: test.error) { try AuthenticatorData.parse(test.bytes, as: test.kind) }
    }

    @Test("every proper prefix of the real attestation's data is refused, and so is one byte more")
    func realPrefixes() throws {
        let (bytes, _, _) = try Self.realAuthData()
        for length in 0..<bytes.count {
            #expect(throws: AuthenticatorDataError.self, "prefix of \(length) bytes") {
                try AuthenticatorData.parse(Array(bytes[0..<length]), as: .attestation)
            }
        }
        #expect(throws: AuthenticatorDataError(.extensionsNotMap, at: bytes.count)) {
            try AuthenticatorData.parse(bytes + [0x00], as: .attestation)
        }
    }

    @Test("an error says its reason and offset, and nothing of the input")
    func errorDescription() {
        #expect(
            "\(AuthenticatorDataError(.credentialPublicKey(.truncated), at: 87))"
                == "authenticator data: credential public key: CBOR truncated at byte 87")
    }
}
