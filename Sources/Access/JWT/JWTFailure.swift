/// Why a JWT was refused. Every case is answered alike (`401 unauthorized` with
/// `WWW-Authenticate: Bearer error="invalid_token"`); the reason is for the log and for
/// `text-gateway jwt check`, and never holds the token or a claim's value.
package enum JWTFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// Longer than ``JWTVerifier/maximumTokenBytes``: refused before any decoding.
    case oversized
    /// Not three base64url parts, a part that is not canonical base64url, or a header or
    /// claims set that is not one strict JSON object (a repeated name included).
    case malformed(String)
    /// An algorithm other than HS256, RS256 and ES256, `none` included, or one that the
    /// configuration does not allow.
    case algorithmNotAllowed
    /// The header names a critical extension (`crit`) the gateway does not implement.
    case unsupportedCritical
    /// `typ` names another kind of token.
    case wrongType
    /// No configured key has the token's `kid` (or there is no `kid` and more than one key).
    case unknownKey
    /// The key the `kid` names is of another type than the algorithm (the algorithm
    /// confusion attack), or its JWK fixes another algorithm.
    case keyMismatch
    /// The signature does not verify.
    case signature
    /// No `exp`, or one that is not a number.
    case missingExpiry
    /// `exp` is past (beyond the leeway).
    case expired
    /// `nbf` or `iat` is in the future (beyond the leeway).
    case notYetValid
    /// `iss` is not the configured issuer.
    case issuer
    /// `aud` names none of the configured audiences.
    case audience
    /// `sub` is missing, not a string, empty, longer than 128 or not printable ASCII.
    case subject

    /// One word for logs and metrics: `expired`, `signature`, `audience`, …
    package var reason: String {
        switch self {
        case .oversized: "oversized"
        case .malformed: "malformed"
        case .algorithmNotAllowed: "algorithm"
        case .unsupportedCritical: "critical_header"
        case .wrongType: "type"
        case .unknownKey: "unknown_key"
        case .keyMismatch: "key_mismatch"
        case .signature: "signature"
        case .missingExpiry: "no_expiry"
        case .expired: "expired"
        case .notYetValid: "not_yet_valid"
        case .issuer: "issuer"
        case .audience: "audience"
        case .subject: "subject"
        }
    }

    /// Every ``reason``, for the metric's label values.
    static let reasons = [
        "oversized", "malformed", "algorithm", "critical_header", "type", "unknown_key", "key_mismatch", "signature",
        "no_expiry", "expired", "not_yet_valid", "issuer", "audience", "subject",
    ]

    package var description: String {
        switch self {
        case .oversized: "the token is longer than \(JWTVerifier.maximumTokenBytes) bytes"
        case .malformed(let why): "the token is malformed: \(why)"
        case .algorithmNotAllowed:
            "the header's alg is not one the gateway accepts (HS256, RS256, ES256 with a configured key)"
        case .unsupportedCritical: "the header names critical extensions (crit), which the gateway does not implement"
        case .wrongType: "the header's typ is neither JWT nor at+jwt"
        case .unknownKey: "no configured key matches the header's kid"
        case .keyMismatch: "the key named by kid is not a key for the header's alg"
        case .signature: "the signature does not verify"
        case .missingExpiry: "the claims have no numeric exp"
        case .expired: "the token has expired (exp)"
        case .notYetValid: "the token is not valid yet (nbf or iat in the future)"
        case .issuer: "iss is not JWT_ISSUER"
        case .audience: "aud does not name JWT_AUDIENCE"
        case .subject: "sub is missing or not 1-128 printable ASCII characters"
        }
    }
}
