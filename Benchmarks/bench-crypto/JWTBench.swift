import Access
import Crypto
import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

/// `bench-crypto jwt` and `bench-crypto mint`: what one sign-in costs, and the callers for
/// `make bench-jwt`.
enum JWTBench {
    static let issuer = "https://id.bench.example"
    static let audience = "textgateway"

    static func part(_ json: String) -> String { Base64URL.encode(Array(json.utf8)) }

    static func claims(user: String, now: Double) -> String {
        #"{"iss":"\#(issuer)","aud":"\#(audience)","sub":"\#(user)","iat":\#(Int(now)),"exp":\#(Int(now + 86_400)),"email":"\#(user)@example.com","plan":"default"}"#
    }

    /// A token as an identity service signs it.
    static func token(user: String, now: Double, key: PrivateKey, kid: String, algorithm: String) throws -> String {
        let input =
            part(#"{"alg":"\#(algorithm)","typ":"JWT","kid":"\#(kid)"}"#) + "." + part(claims(user: user, now: now))
        let scheme: SignatureAlgorithm = algorithm == "ES256" ? .ecdsaP256SHA256 : .rsaPKCS1v15SHA256
        return input + "." + Base64URL.encode(try key.signature(for: Array(input.utf8), algorithm: scheme))
    }

    static func hs256(user: String, now: Double, secret: [UInt8]) -> String {
        let input = part(#"{"alg":"HS256","typ":"JWT"}"#) + "." + part(claims(user: user, now: now))
        return input + "." + Base64URL.encode(HMAC.sha256(key: secret, message: Array(input.utf8)))
    }

    /// µs per verification, the signature checked every time and from the cache, as a table.
    @MainActor
    static func run() throws {
        let now = Instant.now
        let rsa = try PrivateKey.generateRSA()
        let ec = try PrivateKey.generateP256()
        let secret = Array("bench-secret-of-at-least-thirty-two-bytes".utf8)
        let keys = JWKSet(keys: [
            try JWTKey(id: "rsa", components: rsa.publicKey.components),
            try JWTKey(id: "ec", components: ec.publicKey.components),
        ])
        var policy = JWTPolicy()
        policy.issuer = issuer
        policy.audiences = [audience]
        let verifier = JWTVerifier(policy: policy, hs256Secret: secret, keySet: keys, cacheCapacity: 1_000)
        let tokens: [(String, [UInt8])] = [
            ("HS256", Array(hs256(user: "u1", now: now.secondsSinceEpoch, secret: secret).utf8)),
            (
                "RS256 (RSA-2048)",
                Array(try token(user: "u1", now: now.secondsSinceEpoch, key: rsa, kid: "rsa", algorithm: "RS256").utf8)
            ),
            (
                "ES256 (P-256)",
                Array(try token(user: "u1", now: now.secondsSinceEpoch, key: ec, kid: "ec", algorithm: "ES256").utf8)
            ),
        ]
        print("| JWT | token bytes | signature checked µs | cached µs |")
        print("|---|---:|---:|---:|")
        for (name, token) in tokens {
            guard case .success = verifier.verifyNow(token, now: now, useCache: false) else {
                fatalError("the \(name) token is refused")
            }
            let checked = nanosecondsPerOperation(batch: 1) {
                if case .success = verifier.verifyNow(token, now: now, useCache: false) { 1 } else { 0 }
            }
            let cached = nanosecondsPerOperation(batch: 16) {
                if case .success(let acceptance) = verifier.verifyNow(token, now: now), acceptance.cached {
                    1
                } else {
                    0
                }
            }
            print("| \(name) | \(token.count) | \(microseconds(checked)) | \(microseconds(cached)) |")
        }
    }

    /// Nanoseconds as microseconds with two decimals.
    static func microseconds(_ nanoseconds: Double) -> String {
        let hundredths = Int((nanoseconds / 10).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    /// Writes `jwks.json` (one RS256 key), `jwt-tokens.txt` (a token for each of `users`
    /// users, valid for a day), `gateway-tokens.txt` (as many random gateway tokens) and
    /// `gateway-tokens.env` (their GATEWAY_TOKENS value) into `directory`.
    static func mint(users: Int, directory: String) throws {
        let now = Instant.now.secondsSinceEpoch
        let rsa = try PrivateKey.generateRSA()
        let key = try JWTKey(id: "bench-rsa", components: rsa.publicKey.components)
        try write(#"{"keys":["# + key.jwk + "]}\n", to: directory + "/jwks.json")
        var jwts: [String] = []
        var tokens: [String] = []
        var entries: [String] = []
        for index in 0..<users {
            let user = "bench-user-\(index)"
            jwts.append(try token(user: user, now: now, key: rsa, kid: "bench-rsa", algorithm: "RS256"))
            let token = "tgb_" + Base64URL.encode(SecureRandom.bytes(32))
            tokens.append(token)
            entries.append("\(SHA256.hexDigest(token.utf8)):\(user):default")
        }
        try write(jwts.joined(separator: "\n") + "\n", to: directory + "/jwt-tokens.txt")
        try write(tokens.joined(separator: "\n") + "\n", to: directory + "/gateway-tokens.txt")
        try write(entries.joined(separator: ","), to: directory + "/gateway-tokens.env")
    }

    struct WriteError: Error { let path: String }

    static func write(_ text: String, to path: String) throws {
        guard let file = fopen(path, "wb") else { throw WriteError(path: path) }
        let bytes = Array(text.utf8)
        let written = fwrite(bytes, 1, bytes.count, file)
        fclose(file)
        guard written == bytes.count else { throw WriteError(path: path) }
    }
}
