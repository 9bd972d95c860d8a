import Access
package import Crypto

/// Makes JWTs for tests from raw JSON text, so a test can write what no library would: a
/// claim named twice, a header with `alg: none`, a signature in the wrong form.
package enum TestJWT {
    package static let secret = Array("the-hs256-secret-of-this-test-suite-0123456789".utf8)
    package static let issuer = "https://id.example.test"
    package static let audience = "textgateway"
    /// The tests' fixed wall clock.
    package static let now = 1_800_000_000.0

    package static func part(_ json: String) -> String { Base64URL.encode(Array(json.utf8)) }

    /// `header.claims.signature`, the signature made over the first two parts by `sign`.
    package static func token(header: String, claims: String, sign: ([UInt8]) throws -> [UInt8]) rethrows -> String {
        let input = part(header) + "." + part(claims)
        return input + "." + Base64URL.encode(try sign(Array(input.utf8)))
    }

    package static func hs256(
        _ claims: String, header: String = #"{"alg":"HS256","typ":"JWT"}"#, secret: [UInt8] = TestJWT.secret
    ) -> String {
        token(header: header, claims: claims) { HMAC.sha256(key: secret, message: $0) }
    }

    package static func signed(
        _ claims: String, key: PrivateKey, kid: String?, algorithm: String, header extra: String = ""
    )
        throws -> String
    {
        let kidMember = kid.map { #","kid":"\#($0)""# } ?? ""
        let header = #"{"alg":"\#(algorithm)","typ":"JWT"\#(kidMember)\#(extra)}"#
        let scheme: SignatureAlgorithm = algorithm == "ES256" ? .ecdsaP256SHA256 : .rsaPKCS1v15SHA256
        return try token(header: header, claims: claims) { try key.signature(for: $0, algorithm: scheme) }
    }

    /// Claims valid at ``now`` for the tests' issuer and audience, with `extra` members added
    /// (or, named again, replacing: the first of two equal names is dropped).
    package static func claims(sub: String? = "user-1", exp: Double? = now + 600, _ extra: [(String, String)] = [])
        -> String
    {
        var members: [(String, String)] = [
            ("iss", "\"\(issuer)\""), ("aud", "\"\(audience)\""), ("iat", "\(Int(now - 10))"),
        ]
        if let sub { members.append(("sub", "\"\(sub)\"")) }
        if let exp { members.append(("exp", "\(Int(exp))")) }
        for (name, value) in extra {
            members.removeAll { $0.0 == name }
            members.append((name, value))
        }
        return "{" + members.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    package static func jwks(_ keys: [(id: String, key: PrivateKey)]) throws -> String {
        let entries = try keys.map { try JWTKey(id: $0.id, components: $0.key.publicKey.components).jwk }
        return #"{"keys":["# + entries.joined(separator: ",") + "]}"
    }
}
