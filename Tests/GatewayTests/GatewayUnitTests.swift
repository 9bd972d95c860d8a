import GatewayCommandLine
import JSON
import Testing

@testable import Gateway

@Suite("Gateway pieces")
struct GatewayUnitTests {
    @Test(
        "picks the language from Accept-Language",
        arguments: [
            (nil, Language.persian), ("en", .english), ("en-GB", .english), ("fa", .persian),
            ("de, en;q=0.5", .english),
            ("fa;q=0.9, en;q=0.8", .persian), ("en;q=0, fa", .persian), ("*", .persian), ("EN-us", .english),
            ("fa;q=0.4, en; Q = 0.5", .english), ("\ten", .english), (";en", .persian), ("fa;q=x, en;q=0.1", .english),
        ] as [(String?, Language)]
    )
    func language(header: String?, expected: Language) {
        #expect(Language(acceptLanguage: header) == expected)
    }

    @Test(
        "streams for Accept: text/event-stream among other ranges, in any case and spacing",
        arguments: [
            (nil, false), ("text/event-stream", true), ("application/json, Text/Event-Stream;q=0.9", true),
            (" text/event-stream ; charset=utf-8", true), ("\ttext/event-stream", true), ("*/*", false),
            (";text/event-stream", false), ("text/event-streams", false), ("application/json", false),
        ] as [(String?, Bool)]
    )
    func eventStreamAccept(header: String?, expected: Bool) {
        #expect(ProcessRoute.acceptsEventStream(header) == expected)
    }

    @Test("keeps well-formed request ids and replaces the rest with UUIDs")
    func requestIDs() {
        #expect(RequestID.accept("abc-DEF_1.2") == "abc-DEF_1.2")
        for bad in ["", "a b", "a/b", "ä", String(repeating: "x", count: 129)] {
            let made = RequestID.accept(bad)
            #expect(made != bad && made.count == 36)
        }
        #expect(RequestID.make() != RequestID.make())
    }

    @Test("splits the open-file limit between caller and upstream connections when it is short")
    func descriptorBudget() {
        let tight = DescriptorBudget(limit: 20_000, loops: 2, connectionsPerCurlHandle: 256)
        #expect(tight.perSide == 9_927)
        #expect(tight.cap(16_384) == 9_927 && tight.cap(100) == 100)
        // Both sides full, with the curl handles' socket pairs (20 per loop), fit the limit.
        let handles = 2 * ((tight.perSide / 2 + 255) / 256)
        #expect(2 * tight.perSide + DescriptorBudget.reserve + 2 * handles <= 20_000)
        #expect(DescriptorBudget(limit: 1_048_576, loops: 2, connectionsPerCurlHandle: 256).cap(16_384) == 16_384)
        #expect(DescriptorBudget(limit: 50, loops: 2, connectionsPerCurlHandle: 256).cap(1_000) == 16)
        // limit unknown: caps as configured
        #expect(DescriptorBudget(limit: 0, loops: 2, connectionsPerCurlHandle: 256).cap(16_384) == 16_384)
    }

    @Test("makes distinct version-7 UUIDs across many refills of the random pool, ordered by their time")
    func requestIDsAreUUIDs() {
        var seen = Set<String>()
        for _ in 0..<2000 { // 16 bytes each: several 4 KiB refills
            let id = RequestID.make()
            let bytes = Array(id.utf8)
            #expect(bytes.count == 36 && bytes[8] == UInt8(ascii: "-") && bytes[14] == UInt8(ascii: "7"))
            #expect([UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "A"), UInt8(ascii: "B")].contains(bytes[19]))
            let dashes: Set = [8, 13, 18, 23]
            #expect(
                bytes.indices.allSatisfy { index in
                    dashes.contains(index)
                        ? bytes[index] == UInt8(ascii: "-") : Array("0123456789ABCDEF".utf8).contains(bytes[index])
                }, "\(id)")
            seen.insert(id)
        }
        #expect(seen.count == 2000)
        // The time comes first: an id of a later millisecond sorts after, whatever its random bits.
        let times: [UInt64] = [1, 1_764_547_200_000, 1_764_547_200_001, 0xFFFF_FFFF_FFFF]
        let ids = times.map { RequestID.make(milliseconds: $0) }
        #expect(ids == ids.sorted())
        #expect(
            String(ids[1].prefix(13)).replacingDashes()
                == String(1_764_547_200_000, radix: 16, uppercase: true).leftPadded(to: 12))
    }

    @Test("polls up to EVENT_LOOP_POLL_MICROSECONDS, by default 500 µs without a CPU quota and not at all under one")
    func loopPolling() throws {
        let defaults = try GatewayConfiguration(environment: [:])
        #expect(defaults.loopPollMicroseconds == nil)
        #expect(defaults.loopPollLimit(cpuQuota: nil) == .microseconds(500))
        #expect(defaults.loopPollLimit(cpuQuota: 2) == .zero, "a quota would pay for the polling")
        let set = try GatewayConfiguration(environment: ["EVENT_LOOP_POLL_MICROSECONDS": "150"])
        #expect(set.loopPollLimit(cpuQuota: nil) == .microseconds(150))
        #expect(set.loopPollLimit(cpuQuota: 2) == .microseconds(150), "set explicitly, it holds under a quota too")
        let off = try GatewayConfiguration(environment: ["EVENT_LOOP_POLL_MICROSECONDS": "0"])
        #expect(off.loopPollLimit(cpuQuota: nil) == .zero)
        for bad in ["-1", "1001", "0.5", "fast"] {
            #expect(throws: ConfigurationError.self, "\(bad)") {
                try GatewayConfiguration(environment: ["EVENT_LOOP_POLL_MICROSECONDS": bad])
            }
        }
    }

    @Test("reads every variable and treats empty values as unset")
    func configuration() throws {
        let configuration = try GatewayConfiguration(environment: [
            "DARVAREH_API_KEY": "key", "DARVAREH_MODEL_ID": "base", "SUMMARY_MODEL_ID": "sum", "REWRITE_MODEL_ID": "",
            "EXTRACTION_MODEL_ID": "ext", "CREATIVE_MODEL_ID": "cre", "DARVAREH_BASE_URL": "http://127.0.0.1:9/v1",
            "HOST": "0.0.0.0", "PORT": "9000", "UPSTREAM_TIMEOUT_SECONDS": "1.5",
            "UPSTREAM_CONNECT_TIMEOUT_SECONDS": "2",
            "UPSTREAM_MAX_CONNECTIONS": "20000", "UPSTREAM_IDLE_TIMEOUT_SECONDS": "2.5", "MAX_TOKENS": "99",
            "MAX_BODY_BYTES": "4096", "LOG_LEVEL": "WARNING", "LOG_FORMAT": "json",
        ])
        #expect(configuration.model(for: .summarize) == "sum")
        #expect(configuration.model(for: .rewrite) == "base")
        #expect(configuration.model(for: .keyPoints) == "ext")
        #expect(configuration.model(for: .titles) == "cre")
        #expect(configuration.port == 9000 && configuration.host == "0.0.0.0")
        #expect(configuration.upstreamTimeout == .milliseconds(1500))
        #expect(configuration.upstreamMaxConnections == 20000)
        #expect(configuration.upstreamIdleTimeout == .milliseconds(2500))
        #expect(configuration.maxTokens == 99 && configuration.maxBodyBytes == 4096)
        #expect(configuration.logLevel == .warning && configuration.logFormat == .json)
        let defaults = try GatewayConfiguration(environment: ["DARVAREH_API_KEY": "  "])
        #expect(defaults.apiKey == nil)
        #expect(defaults.baseURL == "https://api.darvareh.ir/v1")
        #expect(defaults.port == 8080 && defaults.maxTokens == 1200 && defaults.maxBodyBytes == 1_048_576)
        #expect(defaults.upstreamTimeout == .seconds(60) && defaults.upstreamConnectTimeout == .seconds(10))
        #expect(defaults.upstreamMaxConnections == 16_384 && defaults.upstreamIdleTimeout == .seconds(60))
    }

    @Test(
        "refuses invalid values naming the variable, never the value",
        arguments: [
            "PORT=-1", "PORT=65536", "MAX_TOKENS=0", "UPSTREAM_TIMEOUT_SECONDS=nan", "LOG_LEVEL=loud",
            "MAX_BODY_BYTES=12", "UPSTREAM_MAX_CONNECTIONS=0", "IDEMPOTENCY_RETRY_WINDOW_SECONDS=59",
            "IPV6_CLIENT_PREFIX=31", "IPV6_CLIENT_PREFIX=129", "IPV6_CLIENT_PREFIX=/64",
        ]
    )
    func invalidConfiguration(assignment: String) {
        let parts = assignment.split(separator: "=", maxSplits: 1).map(String.init)
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration(environment: [parts[0]: parts[1]]) }
        do {
            _ = try GatewayConfiguration(environment: [parts[0]: parts[1]])
        } catch {
            #expect(error.message.contains(parts[0]))
        }
    }

    @Test("IPV6_CLIENT_PREFIX keys IPv6 clients by /64 unless set, within 32...128")
    func ipv6ClientPrefix() throws {
        let defaults = try GatewayConfiguration(environment: [:])
        #expect(defaults.ipv6ClientPrefix == 64)
        #expect(defaults.clientAddressKey.key(peer: "2001:db8:1:2::9", forwardedFor: nil) == "2001:db8:1:2::/64")
        let wide = try GatewayConfiguration(environment: ["IPV6_CLIENT_PREFIX": "48", "TRUSTED_PROXIES": "10.0.0.0/8"])
        #expect(wide.ipv6ClientPrefix == 48)
        #expect(wide.clientAddressKey.key(peer: "10.1.1.1", forwardedFor: "2001:db8:1:2::9") == "2001:db8:1::/48")
        #expect(try GatewayConfiguration(environment: ["IPV6_CLIENT_PREFIX": "128"]).ipv6ClientPrefix == 128)
        #expect(try GatewayConfiguration(environment: ["IPV6_CLIENT_PREFIX": "32"]).ipv6ClientPrefix == 32)
    }

    @Test("parses the command line")
    func commandLine() throws {
        #expect(try GatewayCommand.parse([]) == .serve(hostname: nil, port: nil, environment: "development"))
        #expect(
            try GatewayCommand.parse(["serve", "--hostname", "::", "--port", "80", "--env", "production"])
                == .serve(hostname: "::", port: 80, environment: "production"))
        #expect(
            try GatewayCommand.parse(["--port", "1"]) == .serve(hostname: nil, port: 1, environment: "development"))
        #expect(try GatewayCommand.parse(["--help"]) == .help)
        #expect(try GatewayCommand.parse(["--version"]) == .version)
        #expect(try GatewayCommand.parse(["healthcheck", "--port", "81"]) == .healthcheck(port: 81))
        #expect(try GatewayCommand.parse(["token", "hash"]) == .tokenHash)
        for bad in [
            ["serve", "--port"], ["serve", "--port", "x"], ["launch"], ["serve", "--env", "../x"],
            ["healthcheck", "--env", "p"],
        ] {
            #expect(throws: CommandLineError.self) { try GatewayCommand.parse(bad) }
        }
    }

    @Test("--env takes what the help says: development, production, testing or any name of letters, digits, - and _")
    func environmentNames() throws {
        #expect(GatewayCommand.usage.contains("[--env NAME]"))
        #expect(GatewayCommand.usage.contains("letters, digits, '-' and '_'"))
        for name in ["development", "production", "testing", "staging-2", "eu_west"] {
            #expect(try GatewayCommand.parse(["--env", name]) == .serve(hostname: nil, port: nil, environment: name))
        }
        for name in ["a b", "x/y", "", ".env"] {
            #expect(throws: CommandLineError.self) { try GatewayCommand.parse(["--env", name]) }
        }
    }

}

extension String {
    fileprivate func replacingDashes() -> String { String(filter { $0 != "-" }) }
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
