import AccessTestSupport
import Crypto
import Testing

@testable import Access
@testable import Telemetry

@Suite("JWT verifier")
struct JWTVerifierTests {
    static let rsa = try! PrivateKey.generateRSA()
    static let at = Instant(secondsSinceEpoch: TestJWT.now)

    static func verifier(
        _ configure: (inout JWTPolicy) -> Void = { _ in }, keys: JWKSet = JWKSet(keys: []), capacity: Int = 100
    ) -> JWTVerifier {
        var policy = JWTPolicy()
        configure(&policy)
        return JWTVerifier(policy: policy, hs256Secret: TestJWT.secret, keySet: keys, cacheCapacity: capacity)
    }

    static func token(sub: String = "u1", exp: Double = TestJWT.now + 60, _ extra: String = "") -> [UInt8] {
        Array(TestJWT.hs256(#"{"sub":"\#(sub)","exp":\#(Int(exp))\#(extra)}"#).utf8)
    }

    @Test("a returning token comes from the cache, until it expires")
    func caches() async throws {
        let verifier = Self.verifier()
        let token = Self.token(exp: TestJWT.now + 60)
        let first = try verifier.verifyNow(token, now: Self.at).get()
        #expect(!first.cached)
        #expect(first.caller == Caller(userID: "jwt:u1", plan: "default"))
        #expect(first.expiresAt == TestJWT.now + 60 + 30)
        #expect(try verifier.verifyNow(token, now: Self.at).get().cached)
        // Past exp plus the leeway the cache does not answer; the full check says why.
        #expect(verifier.verifyNow(token, now: Self.at.advanced(by: 91)) == .failure(.expired))
        #expect(verifier.cachedCount == 0)
    }

    @Test("a new key set ends what the old one verified")
    func cacheFollowsKeySet() throws {
        let key = try JWTKey(id: "k1", components: Self.rsa.publicKey.components)
        let verifier = Self.verifier(keys: JWKSet(keys: [key]))
        let token = Array(
            try TestJWT.signed(
                #"{"sub":"u","exp":\#(Int(TestJWT.now + 60))}"#, key: Self.rsa, kid: "k1", algorithm: "RS256"
            ).utf8)
        #expect(try !verifier.verifyNow(token, now: Self.at).get().cached)
        #expect(try verifier.verifyNow(token, now: Self.at).get().cached)
        // The same keys again change nothing.
        #expect(!verifier.install(JWKSet(keys: [key])))
        #expect(try verifier.verifyNow(token, now: Self.at).get().cached)
        #expect(verifier.install(JWKSet(keys: [])))
        #expect(verifier.verifyNow(token, now: Self.at) == .failure(.unknownKey))
    }

    @Test("the cache holds at most its capacity, and keeps the tokens in use")
    func boundedCache() throws {
        let verifier = Self.verifier(capacity: 10)
        let kept = Self.token(sub: "kept")
        _ = verifier.verifyNow(kept, now: Self.at)
        for index in 0..<100 {
            _ = verifier.verifyNow(Self.token(sub: "user-\(index)"), now: Self.at)
            #expect(try verifier.verifyNow(kept, now: Self.at).get().cached)
            #expect(verifier.cachedCount <= 10)
        }
    }

    @Test("the plan comes from the configured claim, nested or not, and only when it exists")
    func plans() throws {
        let catalog = try PlanCatalog.parse("pro:100:4:-")
        let flat = Self.verifier { $0.plans = catalog }
        #expect(try flat.verifyNow(Self.token(#","plan":"pro""#), now: Self.at).get().caller.plan == "pro")
        #expect(
            try flat.verifyNow(Self.token(sub: "u2", #","plan":"platinum""#), now: Self.at).get().caller.plan
                == "default")
        #expect(try flat.verifyNow(Self.token(sub: "u3", #","plan":7"#), now: Self.at).get().caller.plan == "default")
        let nested = Self.verifier {
            $0.plans = catalog
            $0.planClaim = ["app_metadata", "plan"]
        }
        #expect(
            try nested.verifyNow(Self.token(#","app_metadata":{"plan":"pro"}"#), now: Self.at).get().caller.plan
                == "pro")
    }

    @Test("JWT_ALGORITHMS narrows what is accepted, even with a key for it")
    func allowList() {
        let verifier = Self.verifier { $0.algorithms = [.rs256] }
        #expect(verifier.verifyNow(Self.token(), now: Self.at) == .failure(.algorithmNotAllowed))
    }

    @Test("a token over 8 KiB is refused before it is decoded or hashed")
    func oversized() {
        let verifier = Self.verifier()
        let token = [UInt8](repeating: UInt8(ascii: "!"), count: JWTVerifier.maximumTokenBytes + 1)
        #expect(verifier.verifyNow(token, now: Self.at) == .failure(.oversized))
    }

    @Test("base64url: canonical only, and round trips")
    func base64URL() {
        for count in 0..<40 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            let text = Base64URL.encode(bytes)
            #expect(Base64URL.decode(text.utf8) == bytes)
            #expect(!text.contains("="))
        }
        for bad in ["a", "ab=", "a+b/", "ab c", "e31", "AB==", "A"] {
            #expect(Base64URL.decode(bad.utf8) == nil, "\(bad)")
        }
        #expect(Base64URL.decode("e30".utf8) == Array("{}".utf8))
    }
}
