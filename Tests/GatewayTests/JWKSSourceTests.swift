import AccessTestSupport
import Crypto
import HTTP1
import HTTPClient
import HTTPServer
import Synchronization
import TestSupport
import Testing

@testable import Gateway
@testable import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

/// An identity service's key set endpoint on loopback: the test says what it serves, and
/// stops it to play the service being down.
final class KeySetServer: Sendable {
    private let document = Mutex("{\"keys\":[]}")
    private let served = Atomic<Int>(0)
    let server: HTTPServer
    let url: String

    private init(server: HTTPServer, url: String) {
        self.server = server
        self.url = url
    }

    static func start(_ document: String) async throws -> KeySetServer {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.loopCount = 1
        let box = Mutex<KeySetServer?>(nil)
        let server = try HTTPServer(configuration: configuration) { _ in
            guard let keys = box.withLock({ $0 }) else { return HTTPResponse(status: .serviceUnavailable) }
            keys.served.add(1, ordering: .relaxed)
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/jwk-set+json")
            return HTTPResponse(status: .ok, headers: headers, body: .bytes(Array(keys.document.withLock { $0 }.utf8)))
        }
        let address = try await server.start()
        let keys = KeySetServer(server: server, url: "http://127.0.0.1:\(address.port)/.well-known/jwks.json")
        keys.serve(document)
        box.withLock { $0 = keys }
        return keys
    }

    func serve(_ text: String) { document.withLock { $0 = text } }
    var fetches: Int { served.load(ordering: .relaxed) }
    func stop() async { await server.shutdown(gracePeriod: .zero) }
}

@Suite("Key sets by URL and file", .serialized)
struct JWKSSourceTests {
    static let first = try! PrivateKey.generateRSA()
    static let second = try! PrivateKey.generateP256()
    static let sample = ProcessEndToEndTests.sample

    static func token(_ key: PrivateKey, kid: String, sub: String = "rotating-user") throws -> String {
        try TestJWT.signed(
            #"{"sub":"\#(sub)","exp":\#(Int(TestJWT.now + 600))}"#, key: key, kid: kid,
            algorithm: kid.hasPrefix("ec") ? "ES256" : "RS256")
    }

    static func status(_ harness: GatewayHarness, _ token: String) async throws -> Int {
        try await harness.process(task: "summarize", text: sample, headers: [("Authorization", "Bearer \(token)")])
            .status
    }

    static func metrics(_ harness: GatewayHarness) async throws -> String {
        String(
            decoding: try await harness.client.send(HTTPClientRequest(url: harness.base + "/metrics")).body,
            as: UTF8.self)
    }

    /// `textgateway_jwks_loads_total{source="url",result="failed"}`.
    static func failedFetches(_ harness: GatewayHarness) async -> Int {
        let name = #"textgateway_jwks_loads_total{source="url",result="failed"} "#
        let text = (try? await metrics(harness)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix(name) }
        return line.flatMap { Int($0.dropFirst(name.count)) } ?? 0
    }

    @Test("a key rotated in at the identity service is picked up at once, without a restart")
    func rotation() async throws {
        let keys = try await KeySetServer.start(try TestJWT.jwks([("rsa-1", Self.first)]))
        let jwt = try GatewayConfiguration(environment: ["JWT_JWKS_URL": keys.url, "JWT_JWKS_REFRESH_SECONDS": "600"])
            .jwt
        try await GatewayHarness.with(configure: { $0.jwt = jwt }, clock: { Instant(secondsSinceEpoch: TestJWT.now) }) {
            harness async throws in
            // Fetched at start: the first token works at once.
            #expect(try await Self.status(harness, try Self.token(Self.first, kid: "rsa-1")) == 200)
            #expect(keys.fetches == 1)

            // Rotation: the service now signs with a new key under a new kid. Its first token
            // makes the gateway fetch the set at once, long before the 600 s refresh.
            keys.serve(try TestJWT.jwks([("ec-2", Self.second)]))
            #expect(try await Self.status(harness, try Self.token(Self.second, kid: "ec-2")) == 200)
            #expect(keys.fetches == 2)
            // The old key left the set, and so did what it verified: the cached token is refused.
            #expect(try await Self.status(harness, try Self.token(Self.first, kid: "rsa-1")) == 401)
            // Unknown kids within 10 s of that fetch do not fetch again.
            #expect(try await Self.status(harness, try Self.token(Self.first, kid: "rsa-7")) == 401)
            #expect(keys.fetches == 2)
        }
        await keys.stop()
    }

    @Test("when the identity service is down, the last good key set stays in force and each failed fetch is counted")
    func outage() async throws {
        let keys = try await KeySetServer.start(try TestJWT.jwks([("rsa-1", Self.first)]))
        var jwt = try GatewayConfiguration(environment: ["JWT_JWKS_URL": keys.url]).jwt
        jwt?.jwksRefresh = .seconds(1)
        try await GatewayHarness.with(configure: { $0.jwt = jwt }, clock: { Instant(secondsSinceEpoch: TestJWT.now) }) {
            harness async throws in
            #expect(try await Self.status(harness, try Self.token(Self.first, kid: "rsa-1")) == 200)
            await keys.stop()
            await eventually("a failed fetch of the key set is counted") { await Self.failedFetches(harness) > 0 }
            // A new token (not from the cache) of the last good set still gets in.
            #expect(
                try await Self.status(harness, try Self.token(Self.first, kid: "rsa-1", sub: "another-user")) == 200)
            #expect(
                harness.logs.lines.contains {
                    $0.contains("jwks_load_failed") && $0.contains("the last good key set stays in force")
                })
            #expect(try await Self.metrics(harness).contains("textgateway_jwks_keys 1"))
        }
    }

    @Test("a set that cannot be fetched at start refuses RS256 and ES256 and retries; HS256 is unaffected")
    func unavailableAtStart() async throws {
        let keys = try await KeySetServer.start(try TestJWT.jwks([("rsa-1", Self.first)]))
        let url = keys.url
        await keys.stop()
        let environment = ["JWT_JWKS_URL": url, "JWT_HS256_SECRET": String(decoding: TestJWT.secret, as: UTF8.self)]
        let jwt = try GatewayConfiguration(environment: environment).jwt
        try await GatewayHarness.with(configure: { $0.jwt = jwt }, clock: { Instant(secondsSinceEpoch: TestJWT.now) }) {
            harness async throws in
            #expect(try await Self.status(harness, try Self.token(Self.first, kid: "rsa-1")) == 401)
            #expect(
                try await Self.status(harness, TestJWT.hs256(#"{"sub":"h","exp":\#(Int(TestJWT.now + 60))}"#)) == 200)
            #expect(harness.logs.lines.contains { $0.contains("jwks_unavailable") })
        }
    }

    @Test("a changed JWKS file is picked up while the gateway runs; a broken one keeps the last good set")
    func fileChanges() async throws {
        let file = storeDirectory() + "/jwks.json"
        try writeFile(file, try TestJWT.jwks([("rsa-1", Self.first)]))
        let jwt = try GatewayConfiguration(environment: ["JWT_JWKS_FILE": file]).jwt
        try await GatewayHarness.with(configure: { $0.jwt = jwt }, clock: { Instant(secondsSinceEpoch: TestJWT.now) }) {
            harness async throws in
            #expect(try await Self.status(harness, try Self.token(Self.first, kid: "rsa-1")) == 200)
            try writeFile(file, try TestJWT.jwks([("ec-2", Self.second)]))
            await eventually("a token of the key written to the file is accepted") {
                (try? await Self.status(
                    harness, try Self.token(Self.second, kid: "ec-2", sub: "u\(Int.random(in: 0...1_000_000))")))
                    == 200
            }
            #expect(try await Self.status(harness, try Self.token(Self.first, kid: "rsa-1")) == 401)
            try writeFile(file, #"{"keys":[{"kty":"RSA","n":"!!","e":"AQAB"}]}"#)
            await eventually("the broken key file is logged as jwks_load_failed") {
                harness.logs.lines.contains { $0.contains("jwks_load_failed") && $0.contains("source=file") }
            }
            #expect(
                try await Self.status(harness, try Self.token(Self.second, kid: "ec-2", sub: "after-broken")) == 200)
        }
    }
}
