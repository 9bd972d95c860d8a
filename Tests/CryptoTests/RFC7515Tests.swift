import Crypto
import Testing

/// Known answers: the examples of RFC 7515 (JWS) Appendix A.2 (RS256) and A.3 (ES256), with
/// the keys' JWK numbers, the JWS Signing Input and the signatures as the RFC prints them
/// (base64url, lines joined).
@Suite("RFC 7515 examples")
struct RFC7515Tests {
    /// The JWS Signing Input of A.2: the protected header {"alg":"RS256"}, a dot, the payload.
    static let rs256SigningInput = Array(
        ("eyJhbGciOiJSUzI1NiJ9."
            + "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ").utf8
    )
    /// A.2.1's key.
    static let rsaModulus = TestEncoding.base64(
        "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddx"
            + "HmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMs"
            + "D1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSH"
            + "SXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdV"
            + "MTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8"
            + "NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ"
    )
    static let rsaExponent = TestEncoding.base64("AQAB")
    /// A.2.1's signature.
    static let rs256Signature = TestEncoding.base64(
        "cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7"
            + "AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4"
            + "BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K"
            + "0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqv"
            + "hJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrB" + "p0igcN_IoypGlUPQGe77Rw"
    )
    /// A.2.1's key as `openssl pkey -pubout` writes it.
    static let rsaPEM = """
        -----BEGIN PUBLIC KEY-----
        MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAofgWCuLjybRlzo0tZWJj
        NiuSfb4p4fAkd/wWJcyQoTbji9k0l8W26mPddxHmfHQp+Vaw+4qPCJrcS2mJPMEz
        P1Pt0Bm4d4QlL+yRT+SFd2lZS+pCgNMsD1W/YpRPEwOWvG6b32690r2jZ47soMZo
        9wGzjb/7OMg0LOL+bSf63kpaSHSXndS5z5rexMdbBYUsLA9e+KXBdQOS+UTo7WTB
        EMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6/I5IhlJH7aGhyxX
        FvUK+DWNmoudF8NAco9/h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXp
        oQIDAQAB
        -----END PUBLIC KEY-----
        """

    /// The JWS Signing Input of A.3: the protected header {"alg":"ES256"}, a dot, the payload.
    static let es256SigningInput = Array(
        ("eyJhbGciOiJFUzI1NiJ9."
            + "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ").utf8
    )
    /// A.3.1's key.
    static let p256X = TestEncoding.base64("f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU")
    static let p256Y = TestEncoding.base64("x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0")
    /// A.3.1's signature, r ‖ s.
    static let es256Signature = TestEncoding.base64(
        "DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
    )
    /// A.3.1's key as `openssl pkey -pubout` writes it.
    static let p256PEM = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEf83OJ3D2xF1Bg8vub9tLe1gHMzV7
        6e8Tus9uPHvRVEXH8UTNG72bfocs3+257rn0s2ldbqkLJK2KRiMohYjlrQ==
        -----END PUBLIC KEY-----
        """

    /// The base64 body of a PEM text, decoded.
    static func der(ofPEM pem: String) -> [UInt8] {
        TestEncoding.base64(pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined())
    }

    @Test("A.2: the RS256 example verifies with the JWK's n and e")
    func verifiesRS256Example() throws {
        #expect(Self.rsaModulus.count == 256 && Self.rs256Signature.count == 256)
        let key = try PublicKey(rsaModulus: Self.rsaModulus, exponent: Self.rsaExponent)
        #expect(key.kind == .rsa(bits: 2048))
        #expect(key.isValidSignature(Self.rs256Signature, for: Self.rs256SigningInput, algorithm: .rsaPKCS1v15SHA256))
        #expect(!key.isValidSignature(Self.rs256Signature, for: Self.es256SigningInput, algorithm: .rsaPKCS1v15SHA256))
        #expect(
            !key.isValidSignature(
                TestKeys.flipping(Self.rs256Signature, at: 100), for: Self.rs256SigningInput,
                algorithm: .rsaPKCS1v15SHA256))
        #expect(!key.isValidSignature(Self.rs256Signature, for: Self.rs256SigningInput, algorithm: .ecdsaP256SHA256))
        #expect(key.components == .rsa(modulus: Self.rsaModulus, exponent: Self.rsaExponent))
        #expect(key.derSubjectPublicKeyInfo == Self.der(ofPEM: Self.rsaPEM))
    }

    @Test("A.2: the RS256 example verifies with the key read from PEM")
    func verifiesRS256ExampleFromPEM() throws {
        let key = try PublicKey(pem: Self.rsaPEM)
        #expect(key.kind == .rsa(bits: 2048))
        #expect(key.components == .rsa(modulus: Self.rsaModulus, exponent: Self.rsaExponent))
        #expect(key.isValidSignature(Self.rs256Signature, for: Self.rs256SigningInput, algorithm: .rsaPKCS1v15SHA256))
    }

    @Test("A.3: the ES256 example verifies with the JWK's x and y")
    func verifiesES256Example() throws {
        #expect(Self.es256Signature.count == 64)
        let key = try PublicKey(p256X: Self.p256X, y: Self.p256Y)
        #expect(key.kind == .p256)
        #expect(key.isValidSignature(Self.es256Signature, for: Self.es256SigningInput, algorithm: .ecdsaP256SHA256))
        #expect(!key.isValidSignature(Self.es256Signature, for: Self.rs256SigningInput, algorithm: .ecdsaP256SHA256))
        #expect(
            !key.isValidSignature(
                TestKeys.der(ofRaw: Self.es256Signature), for: Self.es256SigningInput, algorithm: .ecdsaP256SHA256))
        #expect(!key.isValidSignature(Self.es256Signature, for: Self.es256SigningInput, algorithm: .rsaPKCS1v15SHA256))
        #expect(key.components == .p256(x: Self.p256X, y: Self.p256Y))
        #expect(key.derSubjectPublicKeyInfo == Self.der(ofPEM: Self.p256PEM))
    }

    @Test("A.3: the ES256 example verifies with the key read from PEM")
    func verifiesES256ExampleFromPEM() throws {
        let key = try PublicKey(pem: Self.p256PEM)
        #expect(key.kind == .p256)
        #expect(key.components == .p256(x: Self.p256X, y: Self.p256Y))
        #expect(key.isValidSignature(Self.es256Signature, for: Self.es256SigningInput, algorithm: .ecdsaP256SHA256))
    }
}
