package import Crypto
import JSON

/// One verification key from a JWK Set (RFC 7517): its `kid`, the public key, and the
/// one algorithm it verifies. The key decides the algorithm, never the token: an RSA key
/// verifies RS256 only and a P-256 key ES256 only, whatever a header asks for.
package struct JWTKey: Sendable {
    /// The JWK's `kid`; nil when it has none.
    package let id: String?
    /// RS256 for an RSA key, ES256 for a P-256 key.
    package let algorithm: JWTAlgorithm
    let publicKey: PublicKey

    init(id: String?, algorithm: JWTAlgorithm, publicKey: PublicKey) {
        self.id = id
        self.algorithm = algorithm
        self.publicKey = publicKey
    }

    /// The key from public components (for tests, benchmarks and tools that make key sets).
    package init(id: String?, components: PublicKeyComponents) throws(CryptoError) {
        switch components {
        case .rsa(let modulus, let exponent):
            self.init(id: id, algorithm: .rs256, publicKey: try PublicKey(rsaModulus: modulus, exponent: exponent))
        case .p256(let x, let y):
            self.init(id: id, algorithm: .es256, publicKey: try PublicKey(p256X: x, y: y))
        }
    }

    /// The key as a public JWK object: `kty`, `kid`, `use`, `alg` and its components.
    package var jwk: String {
        var writer = JSONWriter()
        writer.object { object in
            switch publicKey.components {
            case .rsa(let modulus, let exponent):
                object.field("kty", "RSA")
                object.field("n", Base64URL.encode(modulus))
                object.field("e", Base64URL.encode(exponent))
            case .p256(let x, let y):
                object.field("kty", "EC")
                object.field("crv", "P-256")
                object.field("x", Base64URL.encode(x))
                object.field("y", Base64URL.encode(y))
            }
            if let id { object.field("kid", id) }
            object.field("use", "sig")
            object.field("alg", algorithm.rawValue)
        }
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
