import Crypto

/// The JWS algorithms the gateway verifies (RFC 7518 §3.1). Anything else — `none`, the
/// other HMAC and RSA sizes, PS256, EdDSA — is refused by name, before any key is looked at.
package enum JWTAlgorithm: String, Sendable, Hashable, CaseIterable {
    case hs256 = "HS256"
    case rs256 = "RS256"
    case es256 = "ES256"

    /// The signature scheme of an asymmetric algorithm; nil for HS256.
    var signatureAlgorithm: SignatureAlgorithm? {
        switch self {
        case .hs256: nil
        case .rs256: .rsaPKCS1v15SHA256
        case .es256: .ecdsaP256SHA256
        }
    }
}
