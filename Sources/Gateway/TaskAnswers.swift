package import ChatAPI
package import HTTPClient
package import JSON
package import Telemetry
package import TextTasks
import Upstream

/// Text tasks answered as `/api/process` answers them (the same bodies, the same schema check
/// and repair, through the configured upstreams in fallback order), outside any request: what
/// `text-gateway eval` measures.
package struct TaskAnswers: Sendable {
    /// One answer: its text, its checked JSON for `"format": "json"`, and the upstream's usage.
    package struct Answer: Sendable {
        package let result: String
        package let data: JSONValue?
        package let usage: Usage?
    }

    private let pool: UpstreamPool
    private let bodies: ProcessBodies
    private let logger: Logger

    /// Nil when no upstream of the configuration has an API key.
    package init?(configuration: GatewayConfiguration, client: HTTPClient, logger: Logger) {
        let upstreams = Gateway.upstreams(configuration: configuration, httpClient: client)
        guard !upstreams.isEmpty else { return nil }
        pool = UpstreamPool(
            members: upstreams, policy: configuration.upstreamPolicy, deadline: configuration.upstreamTimeout,
            metrics: UpstreamMetrics(registry: MetricsRegistry()), logger: logger
        )
        bodies = ProcessBodies(configuration: configuration)
        self.logger = logger
    }

    /// `task` on `text`, answered in `format`; throws what `/api/process` would answer with.
    package func answer(task: TextTask, text: String, format: OutputFormat) async throws(GatewayError) -> Answer {
        let request = ProcessRequest(
            task: task, tone: nil, text: text, characterCount: text.count, stream: false, format: format)
        var attempts = UpstreamAttempts()
        let answer = try await TaskAnswerer.answer(
            request, pool: pool, bodies: bodies, requestID: RequestID.make(), logger: logger, attempts: &attempts)
        return Answer(result: answer.result, data: answer.data, usage: answer.usage)
    }
}
