import Crypto
import Testing

/// RS256: RSA keys, from generation or their numbers, signing and verifying.
@Suite("RSA keys")
struct RSAKeyTests {
    @Test("a generated key signs and its public key verifies")
    func roundTrip() throws {
        let key = try TestKeys.rsa()
        #expect(key.publicKey.kind == .rsa(bits: 2048))
        let signature = try key.signature(for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256)
        #expect(signature.count == 256)
        #expect(key.publicKey.isValidSignature(signature, for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256))
        // Any collection of the same bytes.
        #expect(key.publicKey.isValidSignature(signature, for: TestKeys.message[...], algorithm: .rsaPKCS1v15SHA256))
        // PKCS #1 v1.5 is deterministic.
        #expect(try key.signature(for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256) == signature)
    }

    @Test("refuses a tampered message or signature")
    func refusesTampering() throws {
        let key = try TestKeys.rsa()
        let signature = try key.signature(for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256)
        let publicKey = key.publicKey
        #expect(
            !publicKey.isValidSignature(
                signature, for: TestKeys.flipping(TestKeys.message, at: 599), algorithm: .rsaPKCS1v15SHA256))
        #expect(!publicKey.isValidSignature(signature, for: TestKeys.message.dropLast(), algorithm: .rsaPKCS1v15SHA256))
        for index in [0, 128, 255] {
            #expect(
                !publicKey.isValidSignature(
                    TestKeys.flipping(signature, at: index), for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256))
        }
        #expect(
            !publicKey.isValidSignature(
                Array(signature.dropLast()), for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256))
        #expect(!publicKey.isValidSignature([0] + signature, for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256))
        #expect(!publicKey.isValidSignature([], for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256))
        #expect(
            !publicKey.isValidSignature(
                [UInt8](repeating: 0xFF, count: 256), for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256))
    }

    @Test("refuses ES256 with an RSA key, verifying and signing")
    func refusesOtherAlgorithm() throws {
        let key = try TestKeys.rsa()
        let signature = try key.signature(for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256)
        #expect(!key.publicKey.isValidSignature(signature, for: TestKeys.message, algorithm: .ecdsaP256SHA256))
        #expect(
            !key.publicKey.isValidSignature(
                Array(signature.prefix(64)), for: TestKeys.message, algorithm: .ecdsaP256SHA256))
        #expect(throws: CryptoError.self) { try key.signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256) }
    }

    @Test("a key rebuilt from its components verifies the original's signatures")
    func rebuildsFromComponents() throws {
        let key = try TestKeys.rsa()
        guard case .rsa(let modulus, let exponent) = key.publicKey.components else {
            Issue.record("an RSA key's components are not RSA's")
            return
        }
        #expect(modulus.count == 256 && modulus[0] != 0)
        #expect(exponent == [0x01, 0x00, 0x01])
        let rebuilt = try PublicKey(rsaModulus: modulus, exponent: exponent)
        #expect(rebuilt.kind == .rsa(bits: 2048))
        #expect(rebuilt.components == key.publicKey.components)
        #expect(rebuilt.derSubjectPublicKeyInfo == key.publicKey.derSubjectPublicKeyInfo)
        let signature = try key.signature(for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256)
        #expect(rebuilt.isValidSignature(signature, for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256))
        // Leading zero bytes, which a sloppy JWK might carry, change nothing.
        let padded = try PublicKey(rsaModulus: [0, 0] + modulus, exponent: [0] + exponent)
        #expect(padded.components == key.publicKey.components)
    }

    /// An odd 2048-bit number with its top bit set: the shape of a modulus.
    static let modulus2048 = [0xC0] + [UInt8](repeating: 0x5A, count: 254) + [0x01]

    @Test(
        "refuses moduli under 2048 bits or over 16384, even ones, and odd exponents",
        arguments: [
            ("1024 bits", [0xC0] + [UInt8](repeating: 0x5A, count: 126) + [0x01], [0x01, 0x00, 0x01]),
            ("2047 bits", [0x40] + [UInt8](repeating: 0x5A, count: 254) + [0x01], [0x01, 0x00, 0x01]),
            ("16385 bits", [0x01] + [UInt8](repeating: 0x5A, count: 2047) + [0x01], [0x01, 0x00, 0x01]),
            ("empty modulus", [], [0x01, 0x00, 0x01]),
            ("zero modulus", [UInt8](repeating: 0, count: 256), [0x01, 0x00, 0x01]),
            ("even modulus", [0xC0] + [UInt8](repeating: 0x5A, count: 255), [0x01, 0x00, 0x01]),
            ("exponent 1", modulus2048, [0x01]),
            ("exponent 0", modulus2048, [0x00]),
            ("no exponent", modulus2048, []),
            ("even exponent", modulus2048, [0x01, 0x00, 0x00]),
            ("exponent of 33 bits", modulus2048, [0x01, 0x00, 0x00, 0x00, 0x01]),
        ] as [(String, [UInt8], [UInt8])]
    )
    func refusesUnsoundNumbers(name: String, modulus: [UInt8], exponent: [UInt8]) {
        #expect(throws: CryptoError.self, "\(name)") { try PublicKey(rsaModulus: modulus, exponent: exponent) }
    }

    @Test("refuses a 1024-bit key in PEM, and says why")
    func refuses1024BitPEM() {
        let pem = """
            -----BEGIN PUBLIC KEY-----
            MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQCbzkm5r8z18A05aGsMepgW9XE+
            qapLz+/6mp3cUNJl3LGDXChngKqL8DnHtryOGme6YU3GZ7A0fp/gEx/+WGIHkauY
            1r24g7otS/MiMzLoRy+++6xGrIzh9AYIZUYH1FgdGsjT6Geo9n9VKqBpujtXx7HT
            R4znN1XPZHZfKDQmIwIDAQAB
            -----END PUBLIC KEY-----
            """
        #expect(throws: CryptoError.self) { try PublicKey(pem: pem) }
        do {
            _ = try PublicKey(pem: pem)
        } catch {
            #expect(error.reason.contains("1024 bits"))
        }
    }

    @Test("refuses in PEM what it refuses as numbers")
    func refusesUnsoundPEM() throws {
        // The builder is right: it writes the RFC 7515 key as openssl does.
        let rfc = TestKeys.rsaSubjectPublicKeyInfo(modulus: RFC7515Tests.rsaModulus, exponent: RFC7515Tests.rsaExponent)
        #expect(rfc == RFC7515Tests.der(ofPEM: RFC7515Tests.rsaPEM))
        #expect(try PublicKey(pem: TestKeys.pem(rfc)).kind == .rsa(bits: 2048))

        let cases: [(modulus: [UInt8], exponent: [UInt8], reason: String)] = [
            ([0xC0] + [UInt8](repeating: 0x5A, count: 2049) + [0x01], [0x01, 0x00, 0x01], "more than 16384"),
            (RFC7515Tests.rsaModulus, [0x01], "exponent of 1"),
            (RFC7515Tests.rsaModulus, [0x01, 0x00, 0x00, 0x00, 0x01], "more than 32 bits"),
            (Array(RFC7515Tests.rsaModulus.dropLast()) + [0x02], [0x01, 0x00, 0x01], "even"),
        ]
        for testCase in cases {
            let pem = TestKeys.pem(
                TestKeys.rsaSubjectPublicKeyInfo(modulus: testCase.modulus, exponent: testCase.exponent))
            do {
                _ = try PublicKey(pem: pem)
                Issue.record("a key was taken that should not be: \(testCase.reason)")
            } catch {
                #expect(error.reason.contains(testCase.reason), "\(error.reason)")
            }
        }
    }

    @Test("a key read back from its PEM is the same key")
    func pemRoundTrip() throws {
        let key = try TestKeys.rsa()
        let pem = TestKeys.pem(key.publicKey.derSubjectPublicKeyInfo)
        let read = try PublicKey(pem: pem)
        #expect(read.kind == .rsa(bits: 2048))
        #expect(read.components == key.publicKey.components)
        let signature = try key.signature(for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256)
        #expect(read.isValidSignature(signature, for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256))
    }

    @Test("refuses to generate keys under 2048 bits")
    func refusesSmallGeneration() {
        #expect(throws: CryptoError.self) { try PrivateKey.generateRSA(bits: 1024) }
    }
}
