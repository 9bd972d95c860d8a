// libFuzzer target for sign-in tokens: the compact JWS parser, strict base64url, the claims
// checks and the JWK Set parser. Every invariant violation traps, which libFuzzer reports
// as a crash with the input saved.
//
// Input: the first byte picks the mode, the rest is its data.
//   0: the data is a token, verified as a request's would be (HS256 secret and an RSA key set).
//   1: the data is "header JSON \0 claims JSON": the harness signs it with the HS256 secret,
//      so the fuzzer reaches the claims checks behind a valid signature.
//   2: the data is a JWK Set document.
//   3: the data is base64url text.
import Crypto

@testable import Access
@testable import Telemetry

private let secret = Array("fuzzing-secret-of-at-least-32-bytes-long".utf8)
private let now = Instant(secondsSinceEpoch: 1_800_000_000)
private let issuer = "https://id.example"
private let audience = "textgateway"
private let plans = try! PlanCatalog.parse("pro:10:2:-")
private let rsa = try! PrivateKey.generateRSA()
private let rsaKey = try! JWTKey(id: "rsa-1", components: rsa.publicKey.components)

private func makeVerifier() -> JWTVerifier {
    var policy = JWTPolicy()
    policy.issuer = issuer
    policy.audiences = [audience]
    policy.plans = plans
    policy.planClaim = ["app", "plan"]
    return JWTVerifier(policy: policy, hs256Secret: secret, keySet: JWKSet(keys: [rsaKey]), cacheCapacity: 64)
}

private let verifier = makeVerifier()

/// What every acceptance must satisfy, whatever the token.
private func checkAccepted(_ acceptance: JWTVerifier.Acceptance, token: [UInt8]) {
    let caller = acceptance.caller
    // The user id is `jwt:` and the subject; the subject alone is what the policy bounds.
    require(caller.userID.hasPrefix("jwt:"), "accepted a caller whose user id is not jwt:<sub>")
    require(
        JWTPolicy.isValidSubject(String(caller.userID.dropFirst(4))),
        "accepted a subject that is not 1-128 printable ASCII")
    require(claimsSubject(token) == String(caller.userID.dropFirst(4)), "the user id is not the token's own subject")
    // The plan is the one the plan claim names when the catalog has it (the built-in `guest`
    // and `default` included), else `default`.
    require(
        caller.plan == expectedPlan(token), "the plan is not the claim's plan, or default when the catalog lacks it")
    require(caller.tokenID == nil, "a JWT caller with a store token's id")
    require(acceptance.expiresAt >= now.secondsSinceEpoch, "accepted a token past its exp and leeway")
    require(token.count <= JWTVerifier.maximumTokenBytes, "accepted an oversized token")
    // Accepted means: three canonical base64url parts, a header naming HS256 or RS256 /
    // ES256, and a signature that verifies over the first two parts.
    let parts = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    require(parts.count == 3, "accepted a token that is not three parts")
    for part in parts {
        require(
            Base64URL.decode(part).map { Base64URL.encode($0) } == String(decoding: part, as: UTF8.self),
            "accepted a non-canonical part")
    }
    let jws = try! CompactJWS.parse(token)
    switch jws.header.algorithm {
    case .hs256?:
        require(
            HMAC.sha256(key: secret, message: jws.signingInput) == jws.signature,
            "accepted an HS256 token whose MAC is wrong")
    case .rs256?:
        require(
            rsaKey.publicKey.isValidSignature(jws.signature, for: jws.signingInput, algorithm: .rsaPKCS1v15SHA256),
            "accepted an RS256 token whose signature is wrong")
    default:
        require(false, "accepted an algorithm that is not allowed")
    }
    let claims = try! jws.claims()
    require(claims["iss"] == .string(issuer), "accepted another issuer")
    switch claims["aud"] {
    case .string(let name)?: require(name == audience, "accepted another audience")
    case .array(let names)?: require(names.contains(.string(audience)), "accepted a list without the audience")
    default: require(false, "accepted a token without an audience")
    }
    guard case .number(let expiry)? = claims["exp"] else { return require(false, "accepted a token without exp") }
    require(acceptance.expiresAt == expiry + verifier.policy.leewaySeconds, "expiresAt is not exp and the leeway")
}

/// The plan the verifier owes a token's caller: `app.plan` when the catalog has it, else `default`.
private func expectedPlan(_ token: [UInt8]) -> String? {
    guard let jws = try? CompactJWS.parse(token), let claims = try? jws.claims() else { return nil }
    guard case .object(let app)? = claims["app"], case .string(let name)? = app["plan"], plans.contains(name) else {
        return PlanCatalog.defaultName
    }
    return name
}

/// The `sub` claim as the token carries it, read independently of the verifier's result.
private func claimsSubject(_ token: [UInt8]) -> String? {
    guard let jws = try? CompactJWS.parse(token), let claims = try? jws.claims(),
        case .string(let subject)? = claims["sub"]
    else { return nil }
    return subject
}

private func verify(_ token: [UInt8]) {
    let fresh = makeVerifier()
    let first = fresh.verifyNow(token, now: now, useCache: false)
    require(fresh.verifyNow(token, now: now, useCache: false) == first, "verification is not deterministic")
    // The cache gives the same answer as the full check, on a miss and on a hit.
    let cachedFirst = verifier.verifyNow(token, now: now)
    let cachedSecond = verifier.verifyNow(token, now: now)
    switch (first, cachedFirst, cachedSecond) {
    case (.success(let a), .success(let b), .success(let c)):
        require(a.caller == b.caller && b.caller == c.caller, "the cache names another caller")
        require(c.cached, "a verified token was not cached")
        checkAccepted(a, token: token)
    case (.failure(let a), .failure(let b), .failure(let c)):
        require(a == b && b == c, "the cache changes why a token is refused")
        require(!"\(a)".contains("\u{0}"), "a failure's description holds input")
    default:
        require(false, "the cache and the full check disagree")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let body = Array(input[1...])
    switch input[0] % 4 {
    case 0:
        verify(body)
    case 1:
        let split = body.firstIndex(of: 0) ?? body.endIndex
        let header = Base64URL.encode(body[..<split])
        let claims = Base64URL.encode(body[min(split + 1, body.endIndex)...])
        let signingInput = Array((header + "." + claims).utf8)
        let token = signingInput + Array(("." + Base64URL.encode(HMAC.sha256(key: secret, message: signingInput))).utf8)
        verify(token)
    case 2:
        if let set = try? JWKSet.parse(body) {
            require(set.keys.count + set.skipped <= JWKSet.maximumKeys, "more keys than allowed")
            // The keys, written out and read back, are the same keys.
            let again = try! JWKSet.parse(
                Array(("{\"keys\":[" + set.keys.map(\.jwk).joined(separator: ",") + "]}").utf8))
            require(again.keys.map(\.jwk) == set.keys.map(\.jwk), "a key set does not round-trip")
        }
    default:
        if let decoded = Base64URL.decode(body) {
            require(Array(Base64URL.encode(decoded).utf8) == body, "base64url decoding is not canonical")
        }
        let encoded = Base64URL.encode(body)
        require(Base64URL.decode(encoded.utf8) == body, "base64url does not round-trip")
    }
    return 0
}
