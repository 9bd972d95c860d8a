import Crypto
import Testing

/// PEM public keys: which are taken, and what is said of the others.
@Suite("PEM public keys")
struct PEMTests {
    static let p384 = """
        -----BEGIN PUBLIC KEY-----
        MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEO4SGLBPthu5jWW61p/dgEkoJPzL4vI0k
        l82098smHIbs1SuUr+ligEo6OJYaGLKalnyumy6fQeavzv2BCQiW5ATeOKTzbA7+
        D9acbtniB64Rya5sPVnT9nNaD/Yt8dhr
        -----END PUBLIC KEY-----
        """
    /// RFC 7515 A.2.1's key in PKCS #1 (`openssl rsa -RSAPublicKey_out`): not a SubjectPublicKeyInfo.
    static let pkcs1 = """
        -----BEGIN RSA PUBLIC KEY-----
        MIIBCgKCAQEAofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd/wWJcyQoTbji9k0l8W2
        6mPddxHmfHQp+Vaw+4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL+yRT+SFd2lZS+pCgNMs
        D1W/YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb/7OMg0LOL+bSf63kpaSHSXndS5
        z5rexMdbBYUsLA9e+KXBdQOS+UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxv
        b3qCo5ZwKh9kG4LT6/I5IhlJH7aGhyxXFvUK+DWNmoudF8NAco9/h9iaGNj8q2et
        hFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQIDAQAB
        -----END RSA PUBLIC KEY-----
        """
    static let ed25519 = """
        -----BEGIN PUBLIC KEY-----
        MCowBQYDK2VwAyEALPWHG8WsgJDf3lb2udRvq9lWt7omiKEjlV7IWBLE4Cg=
        -----END PUBLIC KEY-----
        """

    @Test(
        "refuses other curves and kinds of key, and text that is no PEM public key",
        arguments: [
            ("P-384", p384),
            ("Ed25519", ed25519),
            ("empty", ""),
            ("no PEM", "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"),
            (
                "a broken body",
                "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n"
            ),
            ("PKCS #1", pkcs1),
            (
                "a SubjectPublicKeyInfo under PKCS #1's label",
                RFC7515Tests.rsaPEM.replacing("PUBLIC KEY", with: "RSA PUBLIC KEY")
            ),
            (
                "a SubjectPublicKeyInfo with bytes after it",
                RFC7515Tests.rsaPEM.replacing("oQIDAQAB", with: "oQIDAQABAAAA")
            ),
        ]
    )
    func refuses(name: String, pem: String) {
        #expect(throws: CryptoError.self, "\(name)") { try PublicKey(pem: pem) }
    }

    @Test("takes the first public key among other text and PEM blocks")
    func takesKeyAmongText() throws {
        let parameters = "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"
        let key = try PublicKey(
            pem: "the RFC's key:\n" + parameters + RFC7515Tests.p256PEM + "\n" + RFC7515Tests.rsaPEM)
        #expect(key.kind == .p256)
    }

    @Test("says what libcrypto said, once: the error queue is left empty")
    func reportsLibCryptoOnce() throws {
        do {
            _ = try PublicKey(pem: "no key here")
            Issue.record("no key was taken")
        } catch {
            #expect(error.reason.hasPrefix("no PEM public key"))
            #expect(error.reason.contains("libcrypto:"))
            #expect(error.description == error.reason)
        }
        // A later error that libcrypto had no part in says nothing of the earlier one.
        do {
            _ = try PublicKey(p256X: [1], y: [2])
            Issue.record("a 1-byte coordinate was taken")
        } catch {
            #expect(!error.reason.contains("libcrypto"))
        }
        // Nor does one after a failed verification.
        let key = try PublicKey(pem: RFC7515Tests.p256PEM)
        #expect(!key.isValidSignature([UInt8](repeating: 0, count: 64), for: [1, 2, 3], algorithm: .ecdsaP256SHA256))
        do {
            _ = try PublicKey(rsaModulus: [1], exponent: [3])
            Issue.record("a 1-bit modulus was taken")
        } catch {
            #expect(!error.reason.contains("libcrypto"))
        }
    }
}
