import AccessTestSupport
import Crypto
import HTTPClient
import TestSupport
import Testing

@testable import Gateway
@testable import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

/// Sign-in as operators meet it: a gateway process told by SIGHUP to read its key set again,
/// and `text-gateway jwt check` explaining a token.
@Suite("Sign-in JWTs across processes: SIGHUP and jwt check", .serialized)
struct JWTProcessTests {
    static let sample = ProcessEndToEndTests.sample

    static func token(_ key: PrivateKey, kid: String, sub: String) throws -> String {
        try TestJWT.signed(
            #"{"sub":"\#(sub)","exp":\#(Int(Instant.now.secondsSinceEpoch + 600))}"#, key: key, kid: kid,
            algorithm: "RS256")
    }

    static func modification(_ path: String) -> (timespec, Int) {
        var info = stat()
        stat(path, &info)
        return (info.st_mtim, Int(info.st_size))
    }

    @Test("SIGHUP reads JWT_JWKS_FILE again, even when the file looks unchanged")
    func sighupReloads() async throws {
        let upstream = try await StoreProcessTests.Upstream.start()
        let directory = CommandLineProcessTests.emptyDirectory()
        let file = directory + "/jwks.json"
        let first = try PrivateKey.generateRSA()
        let second = try PrivateKey.generateRSA()
        try writeFile(file, try TestJWT.jwks([("key-1", first)]))
        let (modified, size) = Self.modification(file)
        var environment = upstream.environment(database: directory + "/db.sqlite", ["JWT_JWKS_FILE": file])
        environment["GATEWAY_TOKENS"] = nil
        let gateway = try await StoreProcessTests.Gateway.start(environment, directory: directory)
        let client = try HTTPClient()
        func status(_ token: String) async throws -> Int {
            try await client.send(
                HTTPClientRequest(
                    method: "POST", url: gateway.base + "/api/process",
                    headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")],
                    body: Array(#"{"task":"summarize","text":"\#(Self.sample)"}"#.utf8)
                )
            ).status
        }
        #expect(try await status(try Self.token(first, kid: "key-1", sub: "before")) == 200)
        // The second key under a kid of the same length: the same size, written in place
        // (the same inode), the modification time put back — nothing a poll could notice.
        try writeFile(file, try TestJWT.jwks([("key-2", second)]))
        var times = [modified, modified]
        #expect(utimensat(AT_FDCWD, file, &times, 0) == 0)
        let (after, sizeAfter) = Self.modification(file)
        try #require(sizeAfter == size && after.tv_sec == modified.tv_sec && after.tv_nsec == modified.tv_nsec)
        gateway.child.signal(SIGHUP)
        await gateway.child.waitForOutput("reloading", seconds: 10)
        await eventually("a token of the new key is accepted after SIGHUP") {
            (try? await status(try Self.token(second, kid: "key-2", sub: "after"))) == 200
        }
        #expect(try await status(try Self.token(first, kid: "key-1", sub: "old-key")) == 401)
        // SIGHUP does not stop it.
        #expect(try await status(try Self.token(second, kid: "key-2", sub: "still")) == 200)
        await client.shutdown()
        gateway.child.signal(SIGTERM)
        #expect(await gateway.child.waitForExit(seconds: 20) == 0)
        await upstream.mock.shutdown()
    }

    /// Runs `text-gateway jwt check` with `token` on standard input.
    static func check(_ token: String, environment: [String: String]) async throws -> (status: Int32?, output: String) {
        let directory = CommandLineProcessTests.emptyDirectory()
        let input = directory + "/token.txt"
        try writeFile(input, token + "\n")
        let child = try ChildProcess(
            "/bin/sh",
            arguments: [
                "-c", "exec \"$0\" jwt check < \"$1\"", ChildProcess.productsDirectory + "/text-gateway", input,
            ],
            environment: CommandLineProcessTests.baseEnvironment.merging(environment) { $1 },
            workingDirectory: directory
        )
        let status = await child.waitForExit(seconds: 30)
        return (status, child.output)
    }

    @Test("jwt check explains an accepted token and a refused one, and never prints the token")
    func jwtCheck() async throws {
        let environment = [
            "JWT_HS256_SECRET": String(decoding: TestJWT.secret, as: UTF8.self), "JWT_AUDIENCE": "textgateway",
            "PLANS": "pro:10:2:-",
        ]
        let now = Int(Instant.now.secondsSinceEpoch)
        let good = TestJWT.hs256(#"{"sub":"cli-user","aud":"textgateway","plan":"pro","exp":\#(now + 3600)}"#)
        let accepted = try await Self.check(good, environment: environment)
        #expect(accepted.status == 0, "\(accepted.output)")
        #expect(accepted.output.contains(#"decision: accepted: user "jwt:cli-user" on plan "pro""#))
        #expect(accepted.output.contains("header: alg=HS256"))
        #expect(!accepted.output.contains(good) && !accepted.output.contains(String(good.split(separator: ".")[2])))

        let expired = TestJWT.hs256(#"{"sub":"cli-user","aud":"textgateway","exp":\#(now - 3600)}"#)
        let refused = try await Self.check(expired, environment: environment)
        #expect(refused.status == 1)
        #expect(refused.output.contains("decision: refused (expired)"))
        #expect(refused.output.contains(#"WWW-Authenticate: Bearer error="invalid_token""#))
        #expect(!refused.output.contains(String(expired.split(separator: ".")[2])))

        let unconfigured = try await Self.check(good, environment: [:])
        #expect(unconfigured.status == 2)
        #expect(unconfigured.output.contains("sign-in is not configured"))
    }
}
