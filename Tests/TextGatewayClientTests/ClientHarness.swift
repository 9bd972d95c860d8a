import Foundation
import Gateway
import GatewayTestSupport
import MockUpstream
import TextGatewayClient

@testable import Access
@testable import Telemetry

/// A real gateway on a mock upstream, both on ephemeral loopback ports, with a store in a
/// temporary SQLite file and one caller token (`alice`, plan `pro`), and a client of it.
struct ClientHarness {
    static let upstreamKey = "sk-client-test-0123456789abcdef"
    static let token = "tgk_client-test-token-0123456789abcdefghij"

    let mock: MockUpstream
    let gateway: GatewayServer
    let baseURL: URL

    /// A client of this gateway with the caller token.
    func client(retry: RetryPolicy = .none, token: String? = Self.token) -> TextGatewayClient {
        TextGatewayClient(baseURL: baseURL, token: token, retry: retry)
    }

    /// Runs `body` against a fresh gateway and mock (plans as `PLANS`: `name:rpm:concurrent:tokensPerDay`),
    /// then stops both whether or not it threw.
    static func with(
        plans: String = "pro:-:-:1000000",
        configure: (inout GatewayConfiguration) -> Void = { _ in },
        _ body: (ClientHarness) async throws -> Void
    ) async throws {
        let mock = try await MockGateway.upstream(apiKey: upstreamKey)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "textgateway-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = MockGateway.configuration(upstream: mock, apiKey: upstreamKey)
        configuration.database = .sqlite(path: directory.appendingPathComponent("store.sqlite").path)
        configuration.tokens = try TokenStore.parse(inline: "\(TokenStore.hashLine(forToken: token)):alice:pro")
        configuration.plans = try PlanCatalog.parse(plans)
        configuration.rateLimitsEnabled = true
        configure(&configuration)
        let gateway: GatewayServer
        do {
            gateway = try await GatewayServer.start(
                configuration: configuration, logger: Logger(level: .error, format: .text, sink: LogSink.memory()))
        } catch {
            await mock.shutdown()
            throw error
        }
        let harness = ClientHarness(
            mock: mock, gateway: gateway, baseURL: URL(string: "http://127.0.0.1:\(gateway.address?.port ?? 0)")!)
        do {
            try await body(harness)
        } catch {
            await harness.stop(directory)
            throw error
        }
        await harness.stop(directory)
    }

    private func stop(_ directory: URL) async {
        await gateway.stop()
        await mock.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A Persian text long enough for every task, made unique by `tag` (so no cache answers it).
func sampleText(_ tag: String = UUID().uuidString, directive: String = "") -> String {
    "این یک متن آزمایشی فارسی است که برای سنجش کارخواه سوئیفت دروازه نوشته شده است. \(tag) \(directive)"
}
