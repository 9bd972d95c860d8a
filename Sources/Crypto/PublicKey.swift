import CCrypto

/// A public key that verifies signatures: RSA of 2048 to 16384 bits, or P-256.
///
/// Built once (from a JWK's numbers, a PEM file or a ``PrivateKey``) and then shared: any
/// number of tasks may verify with one key at once.
package struct PublicKey: Sendable {
    /// What kind of key this is.
    package enum Kind: Sendable, Hashable {
        /// RSA with a modulus of `bits` bits.
        case rsa(bits: Int)
        /// ECDSA on NIST P-256.
        case p256
    }

    /// What kind of key this is.
    package let kind: Kind
    let key: EVPKey

    private init(key: EVPKey, kind: Kind) {
        self.key = key
        self.kind = kind
    }

    /// The RSA public key with modulus `rsaModulus` and exponent `exponent` (big-endian, as a
    /// JWK's `n` and `e`; leading zero bytes are ignored).
    ///
    /// Throws for a modulus under 2048 bits (RFC 7518 §3.3) or over 16384, an even modulus,
    /// and an exponent that is even, below 3 or of more than 32 bits (a huge exponent would
    /// make every verification slow).
    package init(rsaModulus: [UInt8], exponent: [UInt8]) throws(CryptoError) {
        let modulus = Array(rsaModulus.drop { $0 == 0 })
        let exponent = Array(exponent.drop { $0 == 0 })
        try Self.checkRSA(modulus: modulus, exponent: exponent)
        _ = LibCrypto.shared
        let built = modulus.withUnsafeBufferPointer { n in
            exponent.withUnsafeBufferPointer { e in
                CCrypto_rsa_public_key(n.baseAddress, n.count, e.baseAddress, e.count)
            }
        }
        guard let built else { throw CryptoError("libcrypto refused the RSA public key") }
        self.init(key: EVPKey(built), kind: .rsa(bits: Int(EVP_PKEY_get_bits(built))))
    }

    /// The P-256 public key whose point has the affine coordinates `x` and `y` (big-endian,
    /// 32 bytes each, as a JWK's `x` and `y`).
    ///
    /// Throws unless both are 32 bytes and the point is on the curve.
    package init(p256X x: [UInt8], y: [UInt8]) throws(CryptoError) {
        guard x.count == 32, y.count == 32 else {
            throw CryptoError("a P-256 coordinate has 32 bytes, not \(x.count) and \(y.count)")
        }
        _ = LibCrypto.shared
        // SEC 1's uncompressed encoding of the point: 0x04, x, y.
        let point: [UInt8] = [0x04] + x + y
        let built = point.withUnsafeBufferPointer { CCrypto_p256_public_key($0.baseAddress, $0.count) }
        guard let built else { throw CryptoError("(x, y) is not a P-256 public key") }
        try self.init(validating: EVPKey(built))
    }

    /// The P-256 public key whose point is `point` in SEC 1's uncompressed form, 0x04 ‖ x ‖ y
    /// (65 bytes; what App Attest's key identifier is the SHA-256 of).
    ///
    /// Throws for any other length or form and for a point not on the curve.
    package init(p256Point point: [UInt8]) throws(CryptoError) {
        guard point.count == 65, point[0] == 0x04 else {
            throw CryptoError(
                "a P-256 point is 65 bytes, 0x04 then x and y: not \(point.count) bytes beginning "
                    + (point.first.map(String.init) ?? "nothing")
            )
        }
        try self.init(p256X: Array(point[1..<33]), y: Array(point[33...]))
    }

    /// The public key of a PEM SubjectPublicKeyInfo (`-----BEGIN PUBLIC KEY-----`, what
    /// `openssl pkey -pubout` writes): RSA, with the same limits as
    /// ``init(rsaModulus:exponent:)``, or P-256.
    package init(pem: String) throws(CryptoError) {
        _ = LibCrypto.shared
        let text = Array(pem.utf8)
        guard text.count <= Int(Int32.max) else { throw CryptoError("the PEM text is too long") }
        let decoded = text.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { CCrypto_public_key_from_pem($0.baseAddress, Int32($0.count)) }
        }
        guard let decoded else { throw CryptoError("no PEM public key (SubjectPublicKeyInfo) in the text") }
        try self.init(validating: EVPKey(decoded))
    }

    /// The public key of a DER SubjectPublicKeyInfo, with the checks ``init(pem:)`` makes.
    package init(derSubjectPublicKeyInfo der: [UInt8]) throws(CryptoError) {
        let decoded = der.withUnsafeBufferPointer { CCrypto_public_key_from_der($0.baseAddress, $0.count) }
        guard let decoded else { throw CryptoError("not a DER SubjectPublicKeyInfo") }
        try self.init(validating: EVPKey(decoded))
    }

    /// Takes a key decoded from elsewhere after the checks the numbers' initialisers make.
    private init(validating key: EVPKey) throws(CryptoError) {
        if CCrypto_is_rsa(key.pointer) == 1 {
            guard let (modulus, exponent) = Self.rsaNumbers(of: key) else {
                throw CryptoError("the RSA key's numbers cannot be read")
            }
            try Self.checkRSA(modulus: modulus, exponent: exponent)
            self.init(key: key, kind: .rsa(bits: Int(EVP_PKEY_get_bits(key.pointer))))
        } else if CCrypto_is_p256(key.pointer) == 1 {
            guard CCrypto_public_check(key.pointer) == 1 else {
                throw CryptoError("the point is not on the P-256 curve")
            }
            self.init(key: key, kind: .p256)
        } else {
            throw CryptoError("only RSA and P-256 public keys are accepted")
        }
    }

    /// Refuses what RFC 7518 §3.3 and common sense refuse (see ``init(rsaModulus:exponent:)``);
    /// both numbers come without leading zero bytes.
    private static func checkRSA(modulus: [UInt8], exponent: [UInt8]) throws(CryptoError) {
        let bits = modulus.isEmpty ? 0 : modulus.count * 8 - modulus[0].leadingZeroBitCount
        guard bits >= 2048 else {
            throw CryptoError("an RSA modulus of \(bits) bits: RS256 needs 2048 or more (RFC 7518 §3.3)")
        }
        guard bits <= 16384 else { throw CryptoError("an RSA modulus of \(bits) bits: more than 16384") }
        guard modulus[modulus.count - 1] & 1 == 1 else { throw CryptoError("an even RSA modulus") }
        guard exponent.count <= 4 else { throw CryptoError("an RSA exponent of more than 32 bits") }
        let value = exponent.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard value >= 3, value & 1 == 1 else {
            throw CryptoError("an RSA exponent of \(value): it must be odd and at least 3")
        }
    }

    /// The key's numbers, as a JWK would carry them.
    package var components: PublicKeyComponents {
        switch kind {
        case .rsa:
            if let (modulus, exponent) = Self.rsaNumbers(of: key) { return .rsa(modulus: modulus, exponent: exponent) }
        case .p256:
            if let (x, y) = Self.p256Coordinates(of: key) { return .p256(x: x, y: y) }
        }
        // Reading back the numbers of a key that libcrypto built fails only when it cannot allocate.
        fatalError(CryptoError("the public key's numbers cannot be read").reason)
    }

    private static func rsaNumbers(of key: EVPKey) -> (modulus: [UInt8], exponent: [UInt8])? {
        // Room for the modulus, and so for the exponent, which is smaller: a key read from PEM
        // may be of any size until checkRSA has seen it.
        let capacity = max(Int(EVP_PKEY_get_size(key.pointer)), 1)
        let modulus = readNumber(capacity: capacity) { CCrypto_rsa_modulus(key.pointer, $0, $1) }
        let exponent = readNumber(capacity: capacity) { CCrypto_rsa_exponent(key.pointer, $0, $1) }
        guard let modulus, let exponent else { return nil }
        return (modulus, exponent)
    }

    private static func p256Coordinates(of key: EVPKey) -> (x: [UInt8], y: [UInt8])? {
        var x = [UInt8](repeating: 0, count: 32)
        var y = [UInt8](repeating: 0, count: 32)
        let read = x.withUnsafeMutableBufferPointer { x in
            y.withUnsafeMutableBufferPointer { y in
                CCrypto_ec_coordinates(key.pointer, x.baseAddress, y.baseAddress, 32)
            }
        }
        return read == 1 ? (x, y) : nil
    }

    /// The bytes `read` writes into a buffer of `capacity` bytes (it returns their count, or
    /// a negative number on failure).
    private static func readNumber(
        capacity: Int, _ read: (UnsafeMutablePointer<UInt8>, Int32) -> Int32
    ) -> [UInt8]? {
        var failed = false
        let bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            let written = read(buffer.baseAddress!, Int32(capacity))
            failed = written < 0
            count = failed ? 0 : Int(written)
        }
        return failed ? nil : bytes
    }

    /// The key as DER SubjectPublicKeyInfo (what a PEM public key holds in base64).
    package var derSubjectPublicKeyInfo: [UInt8] {
        guard let der = key.derSubjectPublicKeyInfo else {
            // Encoding a key that libcrypto built fails only when it cannot allocate.
            fatalError(CryptoError("i2d_PUBKEY failed").reason)
        }
        return der
    }

    /// Whether `signature` is a valid signature of `message` by this key under `algorithm`.
    ///
    /// false, never a throw or a trap, for an algorithm of another kind of key, any malformed
    /// signature, an ES256 signature that is not exactly 64 bytes (JWS's raw r ‖ s, turned
    /// into DER for libcrypto, whose checks refuse an r or s of zero or not below the group
    /// order), a DER signature that is not strict DER or has bytes after it (libcrypto
    /// compares it with its own re-encoding), and any libcrypto error (its entries are
    /// cleared from the thread's error queue).
    ///
    /// `message` is the message itself, hashed once with SHA-256 here: never its digest.
    ///
    /// Safe to call from any number of tasks at once on one key: each call has its own
    /// libcrypto context.
    @inlinable
    package func isValidSignature(
        _ signature: [UInt8], for message: some Collection<UInt8>, algorithm: SignatureAlgorithm
    ) -> Bool {
        message.withContiguousBytes { isValidSignature(signature, forBytes: $0, algorithm: algorithm) }
    }

    /// ``isValidSignature(_:for:algorithm:)`` of a message whose base address is not nil.
    @usableFromInline
    func isValidSignature(
        _ signature: [UInt8], forBytes message: UnsafeBufferPointer<UInt8>, algorithm: SignatureAlgorithm
    ) -> Bool {
        let valid: Bool
        switch (algorithm, kind) {
        case (.rsaPKCS1v15SHA256, .rsa):
            guard !signature.isEmpty else { return false }
            valid = signature.withUnsafeBufferPointer { verify($0, message) }
        case (.ecdsaP256SHA256, .p256):
            guard signature.count == 64 else { return false }
            // The DER of two INTEGERs of up to 33 bytes each is at most 72 bytes.
            valid = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 80) { der in
                let length = signature.withUnsafeBufferPointer {
                    CCrypto_ecdsa_raw_to_der($0.baseAddress, 32, der.baseAddress, Int32(der.count))
                }
                guard length > 0 else { return false }
                return verify(UnsafeBufferPointer(rebasing: der[..<Int(length)]), message)
            }
        case (.ecdsaP256SHA256DER, .p256):
            // Two INTEGERs of up to 33 bytes each in a SEQUENCE: at most 72 bytes.
            guard (8...72).contains(signature.count) else { return false }
            valid = signature.withUnsafeBufferPointer { verify($0, message) }
        case (.rsaPKCS1v15SHA256, .p256), (.ecdsaP256SHA256, .rsa), (.ecdsaP256SHA256DER, .rsa):
            return false
        }
        if !valid { LibCrypto.clearErrors() }
        return valid
    }

    /// One verification through its own `EVP_MD_CTX`, so that many run on one key at once.
    private func verify(_ signature: UnsafeBufferPointer<UInt8>, _ message: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, LibCrypto.shared.sha256, nil, key.pointer) == 1 else { return false }
        return EVP_DigestVerify(context, signature.baseAddress, signature.count, message.baseAddress, message.count)
            == 1
    }
}
