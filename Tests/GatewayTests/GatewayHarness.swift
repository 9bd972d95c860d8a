import ChatAPI
import EventLoop
import Gateway
import GatewayTestSupport
import HTTPClient
import HTTPServer
import JSON
import MockUpstream

@testable import Telemetry

let upstreamKey = "sk-test-secret-key-0123456789abcdef"

/// A gateway wired to an in-process mock upstream, both on ephemeral loopback ports, plus a
/// client to call the gateway with, and the gateway's log lines in memory.
struct GatewayHarness {
    let mock: MockUpstream
    let running: GatewayServer
    let client: HTTPClient
    let logs: LogSink
    let base: String
    /// False for a ``peer(configure:_:)``, which shares the mock of the harness it came from.
    let ownsMock: Bool

    static func with(
        configure: (inout GatewayConfiguration) -> Void = { _ in },
        logFormat: Logger.Format = .text,
        clock: @escaping @Sendable () -> Instant = { .now },
        observers: [any RequestObserver] = [],
        _ body: (GatewayHarness) async throws -> Void
    ) async throws {
        let mock = try await MockGateway.upstream(apiKey: upstreamKey)
        try await start(
            mock: mock, ownsMock: true, configure: configure, logFormat: logFormat, clock: clock, observers: observers
        ).serve(body)
    }

    /// Another gateway on this harness's mock upstream (one more instance, configured afresh),
    /// stopped when `body` ends; the mock stays with this harness.
    func peer(configure: (inout GatewayConfiguration) -> Void = { _ in }, _ body: (GatewayHarness) async throws -> Void)
        async throws
    {
        try await Self.start(
            mock: mock, ownsMock: false, configure: configure, logFormat: .text, clock: { .now }, observers: []
        ).serve(body)
    }

    /// Runs `body`, then stops this gateway whether or not it threw.
    private func serve(_ body: (GatewayHarness) async throws -> Void) async throws {
        do {
            try await body(self)
        } catch {
            await stop()
            throw error
        }
        await stop()
    }

    private static func start(
        mock: MockUpstream, ownsMock: Bool, configure: (inout GatewayConfiguration) -> Void, logFormat: Logger.Format,
        clock: @escaping @Sendable () -> Instant, observers: [any RequestObserver]
    ) async throws -> GatewayHarness {
        var configuration = MockGateway.configuration(upstream: mock, apiKey: upstreamKey)
        configuration.rateLimitsEnabled = false // the access tests turn limits on themselves
        configuration.database = .off // the store tests give each gateway a file of its own
        configure(&configuration)
        let logs = LogSink.memory()
        let running = try await GatewayServer.start(
            configuration: configuration, logger: Logger(level: .debug, format: logFormat, sink: logs), clock: clock,
            observers: observers)
        let client = try HTTPClient()
        return GatewayHarness(
            mock: mock, running: running, client: client, logs: logs,
            base: "http://127.0.0.1:\(running.address?.port ?? 0)", ownsMock: ownsMock
        )
    }

    func stop() async {
        await client.shutdown()
        await running.stop()
        if ownsMock { await mock.shutdown() }
    }

    /// POSTs `body` to /api/process.
    func process(_ body: String, headers: [(name: String, value: String)] = [("Content-Type", "application/json")])
        async throws -> HTTPClientResponse
    {
        try await client.send(
            HTTPClientRequest(method: "POST", url: base + "/api/process", headers: headers, body: Array(body.utf8)))
    }

    /// POSTs `{"task":…,"text":…}` (plus `tone` when given) to /api/process.
    func process(task: String, text: String, tone: String? = nil, headers: [(name: String, value: String)] = [])
        async throws -> HTTPClientResponse
    {
        var writer = "{\"task\":\(jsonString(task)),\"text\":\(jsonString(text))"
        if let tone { writer += ",\"tone\":\(jsonString(tone))" }
        writer += "}"
        return try await process(writer, headers: [("Content-Type", "application/json")] + headers)
    }

    /// The last request the mock received.
    var lastUpstreamRequest: ChatCompletionRequest? {
        try? JSON.decode(ChatCompletionRequest.self, from: mock.lastRequestBody)
    }
}

func jsonString(_ text: String) -> String {
    String(decoding: (try? JSON.encode(text)) ?? [], as: UTF8.self)
}

/// The decoded JSON object of a gateway response.
struct Body: Decodable {
    let success: Bool?
    let result: String?
    let requestId: String?
    let usage: UsageBody?
    let error: Bool?
    let reason: String?
    let message: String?
    let code: String?

    struct UsageBody: Decodable, Equatable {
        let inputTokens: Int
        let outputTokens: Int
        let totalTokens: Int
    }

    init(_ response: HTTPClientResponse) throws {
        self = try JSON.decode(Body.self, from: response.body)
    }
}

/// A text of `count` characters (Persian letters and spaces).
func persianText(_ count: Int) -> String {
    let sample = Array("این متن آزمایشی فارسی برای سنجش طول است ")
    return String((0..<count).map { sample[$0 % sample.count] }).replacingFirstAndLastSpace()
}

extension String {
    /// Keeps the length but makes sure the text neither starts nor ends with whitespace.
    func replacingFirstAndLastSpace() -> String {
        var characters = Array(self)
        if characters.first == " " { characters[0] = "ا" }
        if characters.last == " " { characters[characters.count - 1] = "ا" }
        return String(characters)
    }
}
