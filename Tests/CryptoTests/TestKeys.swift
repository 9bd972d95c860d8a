import Crypto

/// Keys generated once for the whole test run: an RSA key takes a while to make.
enum TestKeys {
    static let rsaResult = Result { () throws(CryptoError) in try PrivateKey.generateRSA() }
    static let p256Result = Result { () throws(CryptoError) in try PrivateKey.generateP256() }

    static func rsa() throws -> PrivateKey { try rsaResult.get() }
    static func p256() throws -> PrivateKey { try p256Result.get() }

    /// A message of 600 bytes, about a JWT's signing input.
    static let message = Array((0..<600).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })

    /// P-256's group order n (FIPS 186-4 §D.1.2.3).
    static let p256Order = TestEncoding.hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")

    /// `bytes` with bit 0 of byte `index` flipped.
    static func flipping(_ bytes: [UInt8], at index: Int) -> [UInt8] {
        var bytes = bytes
        bytes[index] ^= 1
        return bytes
    }

    /// The DER ECDSA-Sig-Value of a raw r ‖ s: what libcrypto and X.509 use, not JWS.
    static func der(ofRaw raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw[..<32]) + integer(raw[32...])
        return [0x30, UInt8(body.count)] + body
    }

    /// The DER SubjectPublicKeyInfo of an RSA key with these numbers (RFC 8017 A.1.1 inside
    /// RFC 5280 §4.1), whatever they are: for keys libcrypto would never make.
    static func rsaSubjectPublicKeyInfo(modulus: [UInt8], exponent: [UInt8]) -> [UInt8] {
        func length(_ count: Int) -> [UInt8] {
            switch count {
            case ..<0x80: [UInt8(count)]
            case ..<0x100: [0x81, UInt8(count)]
            default: [0x82, UInt8(count >> 8), UInt8(count & 0xFF)]
            }
        }
        func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag] + length(content.count) + content }
        func integer(_ bytes: [UInt8]) -> [UInt8] {
            element(0x02, bytes.first.map { $0 & 0x80 != 0 } == true ? [0] + bytes : bytes)
        }
        let rsaEncryption: [UInt8] = [
            0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00,
        ]
        let key = element(0x30, integer(modulus) + integer(exponent))
        return element(0x30, rsaEncryption + element(0x03, [0] + key))
    }

    /// `der` as a PEM public key.
    static func pem(_ der: [UInt8]) -> String {
        "-----BEGIN PUBLIC KEY-----\n" + TestEncoding.pemBody(der) + "-----END PUBLIC KEY-----\n"
    }
}
