import Crypto

/// The one reading of `Authorization: Bearer <token>` (RFC 6750 §2.1 over RFC 9110 §11.4,
/// formerly RFC 7235 §2.1), for the callers' tokens and for `METRICS_TOKEN` alike.
///
/// Accepted is `credentials = auth-scheme 1*SP token`:
///
/// - the scheme `Bearer` in any ASCII case;
/// - one or more spaces (SP only: the grammar has no HTAB there);
/// - a token of 1–16,384 bytes (``maximumLength``: room for a JWT of
///   ``JWTVerifier/maximumTokenBytes`` and then some, so a longer one is refused as a JWT
///   that is too long, not read as no token), each printable ASCII
///   without space (0x21–0x7E), and nothing after it.
///
/// The token is a superset of RFC 6750's `b64token` (RFC 9110's `token68`: `1*( ALPHA /
/// DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`): configured tokens are the operator's
/// choice and only their hashes are kept, so every token a configuration could hold before
/// must still get in.
/// Trailing spaces are refused: the HTTP parser already strips the whitespace around a field
/// value, so any left over was not sent as part of a well-formed header.
package enum BearerCredentials {
    /// The longest token read from the header, in bytes.
    static let maximumLength = 16_384

    /// What an `Authorization` field presents to the gateway.
    package enum Presented: Equatable {
        /// No field, or a scheme other than `Bearer` (a proxy's `Basic`, say): no bearer
        /// credential was offered.
        case none
        /// A well-formed bearer token.
        case token([UInt8])
        /// The `Bearer` scheme with a token that cannot be one: empty, longer than
        /// ``maximumLength``, a byte outside 0x21–0x7E, or a tab instead of a space. A bearer
        /// credential that fails, as any unknown token does.
        case malformed
    }

    /// What `authorization` (the field's value, or nil when absent) presents.
    package static func read(_ authorization: String?) -> Presented {
        guard let authorization else { return .none }
        let bytes = Array(authorization.utf8)
        if let token = token(in: bytes) { return .token(token) }
        return hasBearerScheme(bytes) ? .malformed : .none
    }

    /// The token bytes of a well-formed `Bearer <token>` value, or `nil`.
    static func token(in authorization: String) -> [UInt8]? {
        token(in: Array(authorization.utf8))
    }

    /// Whether `authorization` carries exactly `secret` as its bearer token. The SHA-256
    /// digests of both are compared in constant time, so the time taken says neither how
    /// much of a guess was right nor how long the secret is. An empty secret matches nothing.
    package static func matches(authorization: String?, secret: String) -> Bool {
        guard let authorization, !secret.isEmpty, let token = token(in: authorization) else { return false }
        return ConstantTime.equals(SHA256.hash(token), SHA256.hash(secret.utf8))
    }

    /// Whether `byte` may appear in a token.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        (0x21...0x7E).contains(byte)
    }

    /// Whether `bytes` starts with the scheme `Bearer` (any case) and then ends or goes on
    /// with whitespace: a bearer credential, well-formed or not.
    private static func hasBearerScheme(_ bytes: [UInt8]) -> Bool {
        let scheme = "bearer".utf8
        guard bytes.count >= scheme.count else { return false }
        for (index, expected) in scheme.enumerated() {
            // ASCII lower-casing: setting 0x20 maps A–Z onto a–z and never maps another byte
            // onto a letter of "bearer".
            let byte = bytes[index]
            let lowered = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
            guard lowered == expected else { return false }
        }
        return bytes.count == scheme.count || bytes[scheme.count] == UInt8(ascii: " ")
            || bytes[scheme.count] == UInt8(ascii: "\t")
    }

    private static func token(in bytes: [UInt8]) -> [UInt8]? {
        let scheme = "bearer".utf8
        guard bytes.count > scheme.count, hasBearerScheme(bytes) else { return nil }
        var start = scheme.count
        guard bytes[start] == UInt8(ascii: " ") else { return nil }
        while start < bytes.count, bytes[start] == UInt8(ascii: " ") { start += 1 }
        let length = bytes.count - start
        guard length > 0, length <= maximumLength else { return nil }
        let token = bytes[start...]
        guard token.allSatisfy(isTokenByte) else { return nil }
        return Array(token)
    }
}
