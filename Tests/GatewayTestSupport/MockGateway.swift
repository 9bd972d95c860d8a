package import Gateway
package import MockUpstream

/// What a test's gateway on a mock upstream starts from, whichever suite it is in.
package enum MockGateway {
    /// A mock upstream on an ephemeral loopback port that wants `apiKey` and streams its
    /// deltas 1 ms apart (a stream takes a few milliseconds, yet has deltas to cancel between).
    package static func upstream(apiKey: String) async throws -> MockUpstream {
        var defaults = MockBehaviour()
        defaults.deltaDelayMilliseconds = 1
        return try await MockUpstream.started(defaults: defaults, apiKey: apiKey)
    }

    /// A gateway on `upstream` with `apiKey` and model `test-model`: an ephemeral loopback
    /// port, two event loops, one second to drain.
    package static func configuration(upstream: MockUpstream, apiKey: String) -> GatewayConfiguration {
        var configuration = GatewayConfiguration()
        configuration.apiKey = apiKey
        configuration.defaultModel = "test-model"
        configuration.baseURL = upstream.baseURL
        configuration.port = 0
        configuration.loopCount = 2
        configuration.shutdownGrace = .seconds(1)
        return configuration
    }
}
