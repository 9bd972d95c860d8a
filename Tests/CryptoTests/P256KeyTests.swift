import Crypto
import Testing

/// ES256: P-256 keys, from generation or their numbers, signing and verifying.
@Suite("P-256 keys")
struct P256KeyTests {
    @Test("a generated key signs and its public key verifies")
    func roundTrip() throws {
        let key = try TestKeys.p256()
        #expect(key.publicKey.kind == .p256)
        let signature = try key.signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256)
        #expect(signature.count == 64)
        #expect(key.publicKey.isValidSignature(signature, for: TestKeys.message, algorithm: .ecdsaP256SHA256))
        // ECDSA draws a new nonce each time: another signature, valid too.
        let another = try key.signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256)
        #expect(another != signature)
        #expect(key.publicKey.isValidSignature(another, for: TestKeys.message, algorithm: .ecdsaP256SHA256))
        #expect(
            key.publicKey.isValidSignature(
                try key.signature(for: [UInt8](), algorithm: .ecdsaP256SHA256), for: [UInt8](),
                algorithm: .ecdsaP256SHA256))
    }

    @Test("refuses a tampered message or signature")
    func refusesTampering() throws {
        let key = try TestKeys.p256()
        let signature = try key.signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256)
        let publicKey = key.publicKey
        #expect(
            !publicKey.isValidSignature(
                signature, for: TestKeys.flipping(TestKeys.message, at: 0), algorithm: .ecdsaP256SHA256))
        for index in [0, 31, 32, 63] {
            #expect(
                !publicKey.isValidSignature(
                    TestKeys.flipping(signature, at: index), for: TestKeys.message, algorithm: .ecdsaP256SHA256))
        }
    }

    @Test("refuses signatures that are not JWS's 64 bytes r ‖ s")
    func refusesOtherShapes() throws {
        let key = try TestKeys.p256()
        let signature = try key.signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256)
        let der = TestKeys.der(ofRaw: signature)
        for shape in [
            der, Array(signature.dropLast()), signature + [0], [0] + signature, [], Array(signature.prefix(32)),
        ] {
            #expect(
                !key.publicKey.isValidSignature(shape, for: TestKeys.message, algorithm: .ecdsaP256SHA256),
                "\(shape.count) bytes")
        }
    }

    @Test("refuses r or s of zero or not below the group order")
    func refusesOutOfRangeNumbers() throws {
        let key = try TestKeys.p256()
        let signature = try key.signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256)
        let (r, s) = (Array(signature[..<32]), Array(signature[32...]))
        let zero = [UInt8](repeating: 0, count: 32)
        let all = [UInt8](repeating: 0xFF, count: 32)
        for (r, s) in [
            (zero, s), (r, zero), (zero, zero), (TestKeys.p256Order, s), (r, TestKeys.p256Order), (all, s), (r, all),
        ] {
            #expect(!key.publicKey.isValidSignature(r + s, for: TestKeys.message, algorithm: .ecdsaP256SHA256))
        }
    }

    @Test("refuses RS256 with a P-256 key, verifying and signing")
    func refusesOtherAlgorithm() throws {
        let key = try TestKeys.p256()
        let signature = try key.signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256)
        #expect(!key.publicKey.isValidSignature(signature, for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256))
        #expect(throws: CryptoError.self) { try key.signature(for: TestKeys.message, algorithm: .rsaPKCS1v15SHA256) }
    }

    @Test("a key rebuilt from its components verifies the original's signatures")
    func rebuildsFromComponents() throws {
        let key = try TestKeys.p256()
        guard case .p256(let x, let y) = key.publicKey.components else {
            Issue.record("a P-256 key's components are not P-256's")
            return
        }
        #expect(x.count == 32 && y.count == 32)
        let rebuilt = try PublicKey(p256X: x, y: y)
        #expect(rebuilt.kind == .p256)
        #expect(rebuilt.derSubjectPublicKeyInfo == key.publicKey.derSubjectPublicKeyInfo)
        let signature = try key.signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256)
        #expect(rebuilt.isValidSignature(signature, for: TestKeys.message, algorithm: .ecdsaP256SHA256))
    }

    @Test("refuses a point off the curve and coordinates not of 32 bytes")
    func refusesUnsoundPoints() throws {
        guard case .p256(let x, let y) = try TestKeys.p256().publicKey.components else { return }
        #expect(throws: CryptoError.self) { try PublicKey(p256X: x, y: TestKeys.flipping(y, at: 31)) }
        #expect(throws: CryptoError.self) {
            try PublicKey(p256X: [UInt8](repeating: 0, count: 32), y: [UInt8](repeating: 0, count: 32))
        }
        // x = p, the field's prime: not a coordinate at all.
        let prime = TestEncoding.hex("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff")
        #expect(throws: CryptoError.self) { try PublicKey(p256X: prime, y: y) }
        #expect(throws: CryptoError.self) { try PublicKey(p256X: Array(x.dropFirst()), y: y) }
        #expect(throws: CryptoError.self) { try PublicKey(p256X: x, y: [0] + y) }
    }

    @Test("a key read back from its PEM is the same key")
    func pemRoundTrip() throws {
        let key = try TestKeys.p256()
        let read = try PublicKey(pem: TestKeys.pem(key.publicKey.derSubjectPublicKeyInfo))
        #expect(read.kind == .p256)
        #expect(read.components == key.publicKey.components)
        let signature = try key.signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256)
        #expect(read.isValidSignature(signature, for: TestKeys.message, algorithm: .ecdsaP256SHA256))
    }

    @Test("verifies from many tasks at once with one key")
    func verifiesConcurrently() async throws {
        let key = try TestKeys.p256()
        let signature = try key.signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256)
        let publicKey = key.publicKey
        let valid = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    (0..<25).count(where: { _ in
                        publicKey.isValidSignature(signature, for: TestKeys.message, algorithm: .ecdsaP256SHA256)
                    })
                }
            }
            return await group.reduce(0, +)
        }
        #expect(valid == 200)
    }
}
