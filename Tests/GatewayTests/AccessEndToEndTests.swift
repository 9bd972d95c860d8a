import Gateway
import HTTPClient
import Synchronization
import TestSupport
import Testing

@testable import Access
@testable import Telemetry

/// A wall clock the test moves by hand.
final class TestClock: Sendable {
    private let seconds = Mutex(1_800_000_000.0)
    var now: Instant { Instant(secondsSinceEpoch: seconds.withLock { $0 }) }
    func advance(_ by: Double) { seconds.withLock { $0 += by } }
}

@Suite("Caller tokens, rate limits and quotas end to end", .serialized)
struct AccessEndToEndTests {
    static let sample = ProcessEndToEndTests.sample
    static let token = "tg-caller-token-0123456789"

    static func configure(plans: String, _ configuration: inout GatewayConfiguration) throws {
        configuration.rateLimitsEnabled = true
        configuration.tokens = try TokenStore.parse(inline: "\(TokenStore.hashLine(forToken: token)):alice:pro")
        configuration.plans = try PlanCatalog.parse(plans)
    }

    static func bearer(_ token: String = Self.token) -> [(name: String, value: String)] {
        [("Authorization", "Bearer \(token)")]
    }

    @Test("requires a caller token on /api/process and /v1, never on /api/health, and logs the user, not the token")
    func authentication() async throws {
        try await GatewayHarness.with(configure: { try? Self.configure(plans: "pro:-:-:-", &$0) }) { harness in
            let missing = try await harness.process(task: "summarize", text: Self.sample)
            #expect(missing.status == 401)
            #expect(missing.header("WWW-Authenticate") == "Bearer")
            #expect(try Body(missing).code == "unauthorized")
            #expect(
                try await harness.process(task: "summarize", text: Self.sample, headers: Self.bearer("wrong")).status
                    == 401)
            #expect(
                try await harness.process(
                    task: "summarize", text: Self.sample, headers: [("Authorization", Self.token)]
                ).status == 401)
            let ok = try await harness.process(
                task: "summarize", text: Self.sample, headers: Self.bearer() + [("X-Request-Id", "auth-1")])
            #expect(ok.status == 200)
            let models = try await harness.client.send(HTTPClientRequest(url: harness.base + "/v1/models"))
            #expect(models.status == 401)
            #expect(
                try await harness.client.send(
                    HTTPClientRequest(url: harness.base + "/v1/models", headers: Self.bearer())
                ).status == 200)
            #expect(try await harness.client.send(HTTPClientRequest(url: harness.base + "/api/health")).status == 200)
            let line = try #require(harness.logs.lines.first { $0.contains("auth-1") })
            #expect(line.contains("user_id=alice"))
            #expect(!harness.logs.lines.joined().contains(Self.token))
        }
    }

    @Test("refuses past the per-minute limit with 429 and RateLimit headers, then recovers after the window")
    func perMinute() async throws {
        let clock = TestClock()
        try await GatewayHarness.with(configure: { try? Self.configure(plans: "pro:3:-:-", &$0) }, clock: { clock.now })
        { harness in
            for remaining in [2, 1, 0] {
                let response = try await harness.process(task: "summarize", text: Self.sample, headers: Self.bearer())
                #expect(response.status == 200)
                #expect(response.header("RateLimit-Limit") == "3")
                #expect(response.header("RateLimit-Remaining") == String(remaining))
            }
            let refused = try await harness.process(task: "summarize", text: Self.sample, headers: Self.bearer())
            #expect(refused.status == 429)
            #expect(try Body(refused).code == "rate_limited")
            #expect(Int(refused.header("Retry-After") ?? "") ?? 0 >= 1)
            #expect(refused.header("RateLimit-Remaining") == "0")
            #expect(refused.header("RateLimit-Reset") != nil)
            clock.advance(61)
            #expect(
                try await harness.process(task: "summarize", text: Self.sample, headers: Self.bearer()).status == 200)
            #expect(harness.mock.stats.requests == 4)
        }
    }

    @Test("refuses a request over the concurrency limit until the one in flight ends")
    func concurrency() async throws {
        try await GatewayHarness.with(configure: { try? Self.configure(plans: "pro:-:1:-", &$0) }) { harness in
            let slow = Task {
                try await harness.process(
                    task: "summarize", text: Self.sample + " [mock:latency-ms=500]", headers: Self.bearer())
            }
            await eventually("the upstream has the call") { harness.mock.stats.inFlight == 1 }
            let refused = try await harness.process(task: "summarize", text: Self.sample, headers: Self.bearer())
            #expect(refused.status == 429)
            #expect(refused.header("Retry-After") != nil)
            #expect(try await slow.value.status == 200)
            #expect(
                try await harness.process(task: "summarize", text: Self.sample, headers: Self.bearer()).status == 200)
        }
    }

    @Test(
        "refuses calls once the day's tokens cannot cover their worst case (cache hits are free); recovers next day"
    )
    func dailyTokens() async throws {
        let clock = TestClock()
        try await GatewayHarness.with(
            configure: {
                try? Self.configure(plans: "pro:-:-:600", &$0)
                $0.cacheTimeToLive = .seconds(3600)
                $0.maxTokens = 50 // a worst case of about 100 tokens: the body's estimate and 50
            }, clock: { clock.now }
        ) { harness in
            #expect(
                // ~270 tokens
                try await harness.process(task: "summarize", text: Self.sample, headers: Self.bearer()).status == 200)
            for _ in 0..<3 {
                #expect(
                    try await harness.process(task: "summarize", text: Self.sample, headers: Self.bearer()).header(
                        "X-Cache") == "HIT")
            }
            // ~330 left
            #expect(try await harness.process(task: "rewrite", text: Self.sample, headers: Self.bearer()).status == 200)
            // ~60 left
            let refused = try await harness.process(task: "titles", text: Self.sample, headers: Self.bearer())
            #expect(refused.status == 429)
            #expect(Int(refused.header("Retry-After") ?? "") ?? 0 > 60)
            clock.advance(86_400)
            #expect(try await harness.process(task: "titles", text: Self.sample, headers: Self.bearer()).status == 200)
        }
    }

    @Test("keys guests by the forwarded address only behind a trusted proxy")
    func trustedProxies() async throws {
        try await GatewayHarness.with(configure: {
            $0.rateLimitsEnabled = true
            $0.plans = try! PlanCatalog.parse("guest:2:-:-")
            $0.trustedProxies = try! TrustedProxies.parse("127.0.0.1/32")
        }) { harness in
            for client in ["203.0.113.7", "203.0.113.8"] {
                for _ in 0..<2 {
                    let response = try await harness.process(
                        task: "summarize", text: Self.sample, headers: [("X-Forwarded-For", "198.51.100.1, \(client)")])
                    #expect(response.status == 200)
                }
            }
            #expect(
                try await harness.process(
                    task: "summarize", text: Self.sample, headers: [("X-Forwarded-For", "203.0.113.7")]
                ).status == 429)
        }
        try await GatewayHarness.with(configure: {
            $0.rateLimitsEnabled = true
            $0.plans = try! PlanCatalog.parse("guest:2:-:-")
        }) { harness async throws in
            #expect(
                try await harness.process(
                    task: "summarize", text: Self.sample, headers: [("X-Forwarded-For", "203.0.113.1")]
                ).status == 200)
            #expect(
                try await harness.process(
                    task: "summarize", text: Self.sample, headers: [("X-Forwarded-For", "203.0.113.2")]
                ).status == 200)
            // Untrusted peer: the header is ignored, every request is the peer's.
            #expect(
                try await harness.process(
                    task: "summarize", text: Self.sample, headers: [("X-Forwarded-For", "203.0.113.3")]
                ).status == 429)
        }
    }

    @Test("keys an IPv6 guest by its /64: a host that changes its address inside it stays one guest")
    func ipv6GuestsByPrefix() async throws {
        func forwarded(_ address: String) -> [(name: String, value: String)] { [("X-Forwarded-For", address)] }
        try await GatewayHarness.with(configure: {
            $0.rateLimitsEnabled = true
            $0.plans = try! PlanCatalog.parse("guest:2:-:-")
            $0.trustedProxies = try! TrustedProxies.parse("127.0.0.1/32")
        }) { harness async throws in
            for address in ["2001:db8:1:2::1", "2001:db8:1:2:8a2e:370:7334:99"] {
                #expect(
                    try await harness.process(task: "summarize", text: Self.sample, headers: forwarded(address)).status
                        == 200)
            }
            // A third address of the same /64 is the same guest, over its two a minute.
            let refused = try await harness.process(
                task: "summarize", text: Self.sample, headers: forwarded("[2001:db8:1:2:ffff::5]:443"))
            #expect(refused.status == 429)
            #expect(refused.header("Retry-After") != nil)
            // The neighbouring /64 and an IPv4 client are guests of their own.
            #expect(
                try await harness.process(task: "summarize", text: Self.sample, headers: forwarded("2001:db8:1:3::1"))
                    .status == 200)
            #expect(
                try await harness.process(task: "summarize", text: Self.sample, headers: forwarded("203.0.113.9"))
                    .status == 200)
        }
        // IPV6_CLIENT_PREFIX=128: every address is its own guest again.
        try await GatewayHarness.with(configure: {
            $0.rateLimitsEnabled = true
            $0.plans = try! PlanCatalog.parse("guest:1:-:-")
            $0.trustedProxies = try! TrustedProxies.parse("127.0.0.1/32")
            $0.ipv6ClientPrefix = 128
        }) { harness async throws in
            for address in ["2001:db8:1:2::1", "2001:db8:1:2::2"] {
                #expect(
                    try await harness.process(task: "summarize", text: Self.sample, headers: forwarded(address)).status
                        == 200)
            }
            #expect(
                try await harness.process(task: "summarize", text: Self.sample, headers: forwarded("2001:db8:1:2::1"))
                    .status == 429)
        }
    }
}
