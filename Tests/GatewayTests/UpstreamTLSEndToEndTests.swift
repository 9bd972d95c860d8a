import ChatAPI
import Gateway
import HTTPClient
import HTTPServer
import MockUpstream
import TestSupport
import Testing

@testable import Upstream

/// The production path: the gateway calling an HTTPS upstream (nginx with `ssl http2`, its
/// certificates made by openssl for the test, in front of the mock), trusted through
/// `UPSTREAM_<NAME>_CA_FILE`.
@Suite("Upstreams over HTTPS end to end")
struct UpstreamTLSEndToEndTests {
    static func with(
        certificate: (TestCertificates) -> (certificate: String, key: String), caFile: (TestCertificates) -> String,
        _ body: (GatewayHarness, TLSProxy) async throws -> Void
    ) async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.loopCount = 1
        var defaults = MockBehaviour()
        defaults.deltaDelayMilliseconds = 1
        let mock = try MockUpstream(configuration: configuration, defaults: defaults, apiKey: upstreamKey)
        let address = try await mock.start()
        let proxy: TLSProxy
        do {
            proxy = try await TLSProxy.start(upstreamPort: address.port, certificate: certificate(certificates))
        } catch {
            await mock.shutdown()
            throw error
        }
        do {
            try await GatewayHarness.with(configure: { gateway in
                var upstream = UpstreamSettings(
                    name: "secure", baseURL: "https://localhost:\(proxy.port)/v1", apiKey: upstreamKey,
                    defaultModel: "m")
                upstream.caFile = caFile(certificates)
                gateway.upstreams = [upstream]
                gateway.upstreamPolicy.retries = 0
            }) { harness in try await body(harness, proxy) }
        } catch {
            await proxy.stop()
            await mock.shutdown()
            throw error
        }
        await proxy.stop()
        await mock.shutdown()
    }

    static let text = persianText(60)

    @Test("the private CA of UPSTREAM_<NAME>_CA_FILE answers, over HTTP/2, streamed and not")
    func trusted() async throws {
        try await Self.with(certificate: { $0.server }, caFile: { $0.caFile }) { harness, proxy in
            let response = try await harness.process(task: "summarize", text: Self.text)
            #expect(response.status == 200)
            #expect(response.header("X-Upstream") == "secure")
            let streamed = try await harness.process(#"{"task":"summarize","text":"\#(Self.text)","stream":true}"#)
            #expect(String(decoding: streamed.body, as: UTF8.self).contains("event: done"))
            let lines = proxy.accessLogLines()
            #expect(lines.count == 2)
            #expect(lines.allSatisfy { $0.contains("HTTP/2.0") && $0.contains(" 200 ") }, "\(lines)")
        }
    }

    @Test(
        "a certificate from another CA, an expired one and one for another host are 502 upstream_error, logged as tls",
        arguments: [
            "other CA", "expired", "wrong host",
        ])
    func refused(kind: String) async throws {
        try await Self.with(
            certificate: { kind == "expired" ? $0.expired : kind == "wrong host" ? $0.wrongHost : $0.server },
            caFile: { kind == "other CA" ? $0.otherCAFile : $0.caFile }
        ) { harness, proxy in
            let response = try await harness.process(task: "summarize", text: Self.text)
            #expect(response.status == 502)
            #expect(try Body(response).code == "upstream_error")
            #expect(proxy.accessLogLines().isEmpty, "a request reached the upstream past a refused certificate")
            await eventually("a tls upstream failure is logged") {
                harness.logs.lines.contains { $0.contains("upstream_failure") && $0.contains("kind=tls") }
            }
        }
    }
}
