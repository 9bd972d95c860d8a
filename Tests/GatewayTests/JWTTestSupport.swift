import Crypto

@testable import Access
@testable import Gateway

#if canImport(Glibc)
    import Glibc
#endif

/// Writes `bytes` to `path` in place (the same inode when the file exists).
func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    guard let file = fopen(path, "wb") else { throw TestFileError(path: path) }
    let written = fwrite(bytes, 1, bytes.count, file)
    fclose(file)
    guard written == bytes.count else { throw TestFileError(path: path) }
}

func writeFile(_ path: String, _ text: String) throws {
    try writeFile(path, Array(text.utf8))
}

struct TestFileError: Error { let path: String }

/// Makes JWTs for tests from raw JSON text, so a test can write what no library would: a
/// claim named twice, a header with `alg: none`, a signature in the wrong form.
enum TestJWT {
    static let secret = Array("the-hs256-secret-of-this-test-suite-0123456789".utf8)
    static let issuer = "https://id.example.test"
    static let audience = "textgateway"
    /// The tests' fixed wall clock.
    static let now = 1_800_000_000.0

    static func part(_ json: String) -> String { Base64URL.encode(Array(json.utf8)) }

    /// `header.claims.signature`, the signature made over the first two parts by `sign`.
    static func token(header: String, claims: String, sign: ([UInt8]) throws -> [UInt8]) rethrows -> String {
        let input = part(header) + "." + part(claims)
        return input + "." + Base64URL.encode(try sign(Array(input.utf8)))
    }

    static func hs256(
        _ claims: String, header: String = #"{"alg":"HS256","typ":"JWT"}"#, secret: [UInt8] = TestJWT.secret
    ) -> String {
        token(header: header, claims: claims) { HMAC.sha256(key: secret, message: $0) }
    }

    static func signed(_ claims: String, key: PrivateKey, kid: String?, algorithm: String, header extra: String = "")
        throws -> String
    {
        let kidMember = kid.map { #","kid":"\#($0)""# } ?? ""
        let header = #"{"alg":"\#(algorithm)","typ":"JWT"\#(kidMember)\#(extra)}"#
        let scheme: SignatureAlgorithm = algorithm == "ES256" ? .ecdsaP256SHA256 : .rsaPKCS1v15SHA256
        return try token(header: header, claims: claims) { try key.signature(for: $0, algorithm: scheme) }
    }

    /// Claims valid at ``now`` for the tests' issuer and audience, with `extra` members added
    /// (or, named again, replacing: the first of two equal names is dropped).
    static func claims(sub: String? = "user-1", exp: Double? = now + 600, _ extra: [(String, String)] = []) -> String {
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

    static func jwks(_ keys: [(id: String, key: PrivateKey)]) throws -> String {
        let entries = try keys.map { try JWTKey(id: $0.id, components: $0.key.publicKey.components).jwk }
        return #"{"keys":["# + entries.joined(separator: ",") + "]}"
    }
}
