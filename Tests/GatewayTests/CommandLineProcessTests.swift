import Access
import EventLoop
import Gateway
import GatewayCommandLine
import HTTPClient
import HTTPServer
import MockUpstream
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("text-gateway as a process", .serialized)
struct CommandLineProcessTests {
    static let baseEnvironment = ["PATH": "/usr/bin:/bin", "LOG_FORMAT": "text"]

    /// A fresh empty working directory, so no developer `.env` is read.
    static func emptyDirectory() -> String {
        var template = Array("/tmp/textgateway-cwd-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { return "/tmp" }
        return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    @Test("prints its version and help and exits 0")
    func versionAndHelp() async throws {
        let version = try ChildProcess("text-gateway", arguments: ["--version"], environment: Self.baseEnvironment)
        #expect(await version.waitForExit(seconds: 10) == 0)
        #expect(version.output == "text-gateway \(TextGatewayVersion.current)\n")
        let help = try ChildProcess("text-gateway", arguments: ["--help"], environment: Self.baseEnvironment)
        #expect(await help.waitForExit(seconds: 10) == 0)
        #expect(help.output.contains("usage: text-gateway"))
    }

    @Test(
        "--help or -h after any command prints the usage on standard output and exits 0",
        arguments: [
            ["-h"], ["help"], ["serve", "--help"], ["serve", "--port", "1", "-h"], ["healthcheck", "--help"],
            ["token", "hash", "--help"],
            ["tokens", "--help"], ["tokens", "create", "--help"], ["tokens", "create", "--user", "u", "-h"],
            ["tokens", "list", "--help"],
            ["tokens", "revoke", "--help"], ["usage", "--help"], ["usage", "-h"], ["db", "--help"],
            ["db", "backup", "--help"],
            ["db", "check", "--help"], ["db", "check", "-h"], ["jwt", "--help"], ["jwt", "check", "--help"],
            ["eval", "--help"],
            ["eval", "-h"], ["eval", "--task", "titles", "--help"],
        ]
    )
    func helpEverywhere(arguments: [String]) async throws {
        // No store, key or token is needed: help is answered before any setting is read.
        let child = try ChildProcess(
            "text-gateway", arguments: arguments, environment: Self.baseEnvironment,
            workingDirectory: Self.emptyDirectory(), standardOutputOnly: true)
        #expect(await child.waitForExit(seconds: 10) == 0)
        #expect(child.output.hasPrefix("usage: text-gateway"), "\(child.output)")
        #expect(child.output.contains("text-gateway eval ") && child.output.contains("text-gateway db check"))
    }

    @Test("-h as an option's value is that value, not a request for help")
    func helpAsValue() throws {
        #expect(
            try GatewayCommand.parse(["tokens", "create", "--user", "-h"])
                == .store(.createToken(user: "-h", plan: "default", label: nil), environment: "development"))
        #expect(try GatewayCommand.parse(["eval", "--help"]) == .help)
    }

    @Test(
        "refuses invalid settings with a clear message and exit code 2",
        arguments: [
            (["serve", "--port", "70000"], [:], "--port"),
            (["serve", "--bogus"], [:], "unknown option"),
            (["serve"], ["PORT": "http"], "PORT"),
            (["serve"], ["UPSTREAM_TIMEOUT_SECONDS": "soon"], "UPSTREAM_TIMEOUT_SECONDS"),
            (["serve"], ["LOG_FORMAT": "xml"], "LOG_FORMAT"),
            (["serve"], ["DARVAREH_BASE_URL": "ftp://example"], "DARVAREH_BASE_URL"),
            (["serve"], ["GATEWAY_TOKENS": "nothex:alice:pro"], "GATEWAY_TOKENS"),
            (["serve"], ["PLANS": "pro:fast:-:-"], "PLANS"),
            (["serve"], ["TRUSTED_PROXIES": "10.0.0.0/99"], "TRUSTED_PROXIES"),
            (["serve"], ["RATE_LIMITS": "maybe"], "RATE_LIMITS"),
            (["serve"], ["GATEWAY_TOKEN": "x"], "did you mean GATEWAY_TOKENS?"),
            (
                ["serve"], ["AUTH_REQUIRED": "on", "DATABASE_URL": "off"],
                "AUTH_REQUIRED is on but no caller can authenticate"
            ),
            (["tokens", "list"], ["JOB_WORKER": "2"], "did you mean JOB_WORKERS?"),
            (["serve"], ["APP_ATTEST_APP_IDS": "com.example.app"], "APP_ATTEST_APP_IDS must list App IDs"),
            (["serve"], ["APP_ATTEST_REQUIRED": "guests"], "APP_ATTEST_REQUIRED is set but APP_ATTEST_APP_IDS is not"),
            (
                ["serve"], ["APP_ATTEST_APP_IDS": "ABCDE12345.example.app", "DATABASE_URL": "off"],
                "APP_ATTEST_APP_IDS needs a store"
            ),
            (
                ["serve"], ["APP_ATTEST_APP_IDS": "ABCDE12345.example.app", "APP_ATTEST_ENVIRONMENT": "staging"],
                "APP_ATTEST_ENVIRONMENT"
            ),
            (
                ["serve"],
                ["APP_ATTEST_APP_IDS": "ABCDE12345.example.app", "APP_ATTEST_EXTRA_ROOT_CA_FILE": "/nonexistent.pem"],
                "APP_ATTEST_EXTRA_ROOT_CA_FILE cannot be read"
            ),
            (
                ["serve"],
                [
                    "APP_ATTEST_APP_IDS": "ABCDE12345.example.app", "APP_ATTEST_REQUIRED": "guests",
                    "AUTH_REQUIRED": "off",
                ],
                "AUTH_REQUIRED is off but APP_ATTEST_REQUIRED"
            ),
            (["serve"], ["ADMIN_TOKEN": String(repeating: "x", count: 40)], "ADMIN_TOKEN is too easy to guess"),
            (["serve"], ["ADMIN_TOKN": "x"], "did you mean ADMIN_TOKEN?"),
            (["serve"], ["MAX_TOKEN": "100"], "did you mean MAX_TOKENS?"),
            (
                ["serve"], ["JWT_HS256_SECRET": String(repeating: "s", count: 32), "JWT_ALGORITHMS": "RS256"],
                "JWT_ALGORITHMS names no algorithm a configured key can verify"
            ),
        ] as [([String], [String: String], String)]
    )
    func invalidSettings(arguments: [String], environment: [String: String], mention: String) async throws {
        let child = try ChildProcess(
            "text-gateway", arguments: arguments, environment: Self.baseEnvironment.merging(environment) { $1 },
            workingDirectory: Self.emptyDirectory())
        #expect(await child.waitForExit(seconds: 10) == 2)
        #expect(child.output.contains(mention))
    }

    /// Runs `text-gateway token hash` with `input` on standard input.
    static func tokenHash(_ input: [UInt8]) async throws -> (status: Int32?, output: String) {
        let directory = Self.emptyDirectory()
        let path = directory + "/token.txt"
        try writeFile(path, input)
        defer { unlink(path) }
        let child = try ChildProcess(
            "/bin/sh",
            arguments: [
                "-c", "exec \"$0\" token hash < \"$1\"", ChildProcess.productsDirectory + "/text-gateway", path,
            ],
            environment: Self.baseEnvironment, workingDirectory: directory)
        let status = await child.waitForExit(seconds: 10)
        return (status, child.output)
    }

    @Test("token hash prints the digest of one token of 1-512 printable ASCII characters, and refuses any other input")
    func tokenHash() async throws {
        let longest = String(repeating: "~", count: 512)
        for token in ["tgk_example-token", longest] {
            let (status, output) = try await Self.tokenHash(Array((token + "\n").utf8))
            #expect(status == 0)
            #expect(output == TokenStore.hashLine(forToken: token) + "\n")
        }
        for input in [
            "", "\n", longest + "~", "two words", "one\ntwo\n", "caf\u{E9}-token", String(repeating: "a", count: 5000),
        ] {
            let (status, output) = try await Self.tokenHash(Array(input.utf8))
            #expect(status == 2, "\(input.prefix(20))")
            #expect(output.contains("1-512 printable ASCII characters, no spaces"))
            #expect(!output.contains("two words") && !output.contains("~~~~"))
        }
    }

    @Test("a port in use stops the start with exit 1 and an error naming the address it could not bind")
    func portInUse() async throws {
        let taken = try Socket.listen(
            on: try #require(SocketAddress.resolve(host: "127.0.0.1", port: 0).first), backlog: 1)
        defer { Socket.close(taken) }
        let port = try Socket.localAddress(taken).port
        let child = try ChildProcess(
            "text-gateway", arguments: ["serve", "--hostname", "127.0.0.1", "--port", String(port)],
            environment: Self.baseEnvironment, workingDirectory: Self.emptyDirectory())
        #expect(await child.waitForExit(seconds: 10) == 1)
        let said = child.output.split(separator: "\n").filter { $0.hasPrefix("text-gateway:") }
        #expect(
            said.count == 1 && said[0].contains("bind 127.0.0.1:\(port) failed") && said[0].contains("in use"),
            "\(child.output)")
        #expect(!child.output.contains("started"))
    }

    @Test("reports a malformed .env line with its line number, without the value, and exits 2")
    func malformedDotEnv() async throws {
        let directory = Self.emptyDirectory()
        let path = directory + "/.env"
        let text = "# settings\nDARVAREH_API_KEY=k # a test key\nDARVAREH_MODEL_ID=\"sk-unterminated-secret\n"
        let file = fopen(path, "w")
        fputs(text, file)
        fclose(file)
        defer { unlink(path) }
        let child = try ChildProcess(
            "text-gateway", arguments: ["serve", "--port", "0"], environment: Self.baseEnvironment,
            workingDirectory: directory)
        #expect(await child.waitForExit(seconds: 10) == 2)
        #expect(child.output.contains(".env:3"))
        #expect(!child.output.contains("sk-unterminated-secret"))
    }

    @Test(
        "refuses a misspelled setting (environment or .env) with exit 2, naming it and the one meant, never its value"
    )
    func misspelledSetting() async throws {
        let secret = "sk-misspelled-secret-value"
        let child = try ChildProcess(
            "text-gateway", arguments: ["serve", "--port", "0"],
            environment: Self.baseEnvironment.merging(["GATEWAY_TOKEN": secret, "DARVAREH_API_KEY": secret]) { $1 },
            workingDirectory: Self.emptyDirectory()
        )
        #expect(await child.waitForExit(seconds: 10) == 2)
        #expect(child.output.contains("unknown setting GATEWAY_TOKEN: did you mean GATEWAY_TOKENS?"), "\(child.output)")
        #expect(!child.output.contains(secret) && !child.output.contains("started"))

        let directory = Self.emptyDirectory()
        let path = directory + "/.env"
        let file = fopen(path, "w")
        fputs("DARVAREH_API_KEY=\(secret)\ndarvareh_model_id=\(secret)\n", file)
        fclose(file)
        defer { unlink(path) }
        let fromFile = try ChildProcess(
            "text-gateway", arguments: ["serve", "--port", "0"], environment: Self.baseEnvironment,
            workingDirectory: directory)
        #expect(await fromFile.waitForExit(seconds: 10) == 2)
        #expect(
            fromFile.output.contains("darvareh_model_id is not a setting: the setting is DARVAREH_MODEL_ID"),
            "\(fromFile.output)")
        #expect(!fromFile.output.contains(secret) && !fromFile.output.contains("started"))
    }

    @Test("drains on SIGTERM: the request in flight completes, new connections are refused, exit 0")
    func gracefulShutdown() async throws {
        let mock = try await MockUpstream.started(apiKey: "k")
        let directory = Self.emptyDirectory()
        let child = try ChildProcess(
            "text-gateway", arguments: ["serve", "--hostname", "127.0.0.1", "--port", "0"],
            environment: Self.baseEnvironment.merging([
                "DARVAREH_API_KEY": "k", "DARVAREH_MODEL_ID": "m", "DARVAREH_BASE_URL": mock.baseURL,
                "SHUTDOWN_GRACE_SECONDS": "5",
            ]) { $1 },
            workingDirectory: directory
        )
        await child.waitForOutput("started")
        let line = child.output.split(separator: "\n").first { $0.contains("started") } ?? ""
        let port =
            Int(line.split(separator: " ").first { $0.hasPrefix("address=") }?.split(separator: ":").last ?? "") ?? 0
        #expect(port > 0)
        let client = try HTTPClient()
        let body = Array(
            #"{"task":"titles","text":"متنی برای آزمون توقف آرام سرور با درخواست در جریان [mock:latency-ms=800]"}"#.utf8
        )
        let inFlight = Task {
            try await client.send(
                HTTPClientRequest(
                    method: "POST", url: "http://127.0.0.1:\(port)/api/process",
                    headers: [("Content-Type", "application/json")], body: body))
        }
        await eventually("the upstream has the call") { mock.stats.inFlight == 1 }
        child.signal(SIGTERM)
        let response = try await inFlight.value
        #expect(response.status == 200)
        #expect(await child.waitForExit(seconds: 10) == 0)
        #expect(child.output.contains("stopping") && child.output.contains("stopped"))
        let refused = try? await client.send(
            HTTPClientRequest(url: "http://127.0.0.1:\(port)/api/health", timeout: .seconds(2)))
        #expect(refused == nil)
        await client.shutdown()
        await mock.shutdown()
    }

    @Test("starts without a key, logs it loudly, serves health and answers 500 not_configured")
    func missingKey() async throws {
        let child = try ChildProcess(
            "text-gateway", arguments: ["serve", "--port", "0"], environment: Self.baseEnvironment,
            workingDirectory: Self.emptyDirectory())
        await child.waitForOutput("started")
        // Logged right after `started`, possibly a moment later: waited for, not just looked up.
        await child.waitForOutput("ERROR not_configured missing=DARVAREH_API_KEY")
        let line = child.output.split(separator: "\n").first { $0.contains("started") } ?? ""
        // Open, and said so even on loopback.
        #expect(line.contains("access=open"))
        #expect(
            child.output.contains("open_gateway")
                && child.output.contains("anyone who can reach this address spends the upstream key"))
        let port =
            Int(line.split(separator: " ").first { $0.hasPrefix("address=") }?.split(separator: ":").last ?? "") ?? 0
        let client = try HTTPClient()
        #expect(try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(port)/api/health")).status == 200)
        let process = try await client.send(
            HTTPClientRequest(
                method: "POST", url: "http://127.0.0.1:\(port)/api/process",
                headers: [("Content-Type", "application/json")],
                body: Array(#"{"task":"summarize","text":"متنی که به اندازه کافی بلند است برای آزمون"}"#.utf8)))
        #expect(process.status == 500)
        #expect(String(decoding: process.body, as: UTF8.self).contains("not_configured"))
        await client.shutdown()
        child.signal(SIGINT)
        #expect(await child.waitForExit(seconds: 10) == 0)
    }
}
