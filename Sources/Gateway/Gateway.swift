import ChatAPI
import EventLoop
import HTTP1
public import HTTPClient
public import HTTPServer

/// The product, composed once at start: the routes of CONTRACT.md (`/api/health`,
/// `/api/process`, `/v1/models`, `/v1/chat/completions`, `/metrics`) with their middleware,
/// behind one ``Pipeline`` whose finished hook sees every request end.
public final class Gateway: Sendable {
    public let configuration: GatewayConfiguration
    public let logger: Logger
    let metrics: GatewayMetrics
    private let pipeline: Pipeline
    private let streams = StreamRegistry()

    /// - Parameters:
    ///   - httpClient: the upstream client (sharing the server's loops, ideally).
    ///   - observers: told of every finished request, after the access log.
    public convenience init(
        configuration: GatewayConfiguration, httpClient: HTTPClient, logger: Logger,
        rateLimiter: (any RateLimiter)? = nil, clock: @escaping @Sendable () -> Instant = { .now },
        observers: [any RequestObserver] = [], version: String = TextGatewayVersion.current
    ) {
        let upstream = configuration.apiKey.map {
            ChatClient(httpClient: httpClient, baseURL: configuration.baseURL, apiKey: $0, timeout: configuration.upstreamTimeout)
        }
        self.init(configuration: configuration, upstream: upstream, logger: logger, rateLimiter: rateLimiter, clock: clock,
                  observers: observers, version: version)
    }

    /// A gateway over any ``ChatUpstream`` (tests run it in-process against a fake).
    init(
        configuration: GatewayConfiguration, upstream: (any ChatUpstream)?, logger: Logger,
        rateLimiter: (any RateLimiter)? = nil, clock: @escaping @Sendable () -> Instant = { .now },
        observers: [any RequestObserver] = [], version: String = TextGatewayVersion.current
    ) {
        self.configuration = configuration
        self.logger = logger
        var tokenKeys = TextTask.allCases.compactMap { task in configuration.model(for: task).map { (task.rawValue, $0) } }
        tokenKeys += configuration.effectiveModelAliases.map { ("chat", $0.model) }
        let metrics = GatewayMetrics(tokenKeys: tokenKeys)
        self.metrics = metrics
        let limiter: (any RateLimiter)? = configuration.rateLimitsEnabled
            ? (rateLimiter ?? InMemoryRateLimiter(leaseTimeToLive: configuration.leaseTimeToLive)) : nil
        let cache = configuration.cacheTimeToLive.map { ResponseCache(timeToLive: $0, capacity: configuration.cacheMaxEntries) }
        // A concern the configuration turns off is no layer at all.
        var admission: [any Middleware] = []
        if let tokens = configuration.tokens { admission.append(AuthMiddleware(tokens: tokens)) }
        if let limiter { admission.append(RateLimitMiddleware(limiter: limiter, plans: configuration.plans, trustedProxies: configuration.trustedProxies, clock: clock)) }
        let routes = [
            Route(method: .GET, path: "/api/health", middleware: [], handler: HealthRoute(version: version)),
            Route(method: .POST, path: "/api/process", middleware: admission, handler: ProcessRoute(
                upstream: upstream, configuration: configuration, cache: cache, metrics: metrics, streams: streams, logger: logger
            )),
            Route(method: .GET, path: "/v1/models", middleware: admission, handler: ModelsRoute(aliases: configuration.effectiveModelAliases)),
            Route(method: .POST, path: "/v1/chat/completions", middleware: admission, handler: ChatCompletionsRoute(
                upstream: upstream, configuration: configuration, streams: streams, logger: logger
            )),
            Route(method: .GET, path: "/metrics", middleware: [], handler: MetricsRoute(registry: metrics.registry, token: configuration.metricsToken)),
        ]
        let finisher = RequestFinisher(
            metrics: metrics, metricsEnabled: configuration.metricsEnabled, logger: logger, limiter: limiter, clock: clock, observers: observers
        )
        pipeline = Pipeline(
            routes: routes, groups: [.api, .openAI], finisher: finisher, logger: logger,
            errorLanguage: configuration.errorLanguage
        )
    }

    /// The server settings this gateway needs: address, body limit, JSON protocol errors.
    public func serverConfiguration() -> ServerConfiguration {
        var server = ServerConfiguration()
        server.host = configuration.host
        server.port = configuration.port
        if configuration.loopCount > 0 { server.loopCount = configuration.loopCount }
        server.limits.maxBodyBytes = configuration.maxBodyBytes
        let pipeline = self.pipeline
        server.protocolErrorResponder = { pipeline.refuse($0) }
        return server
    }

    /// Answers any request (the HTTP server's responder).
    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        await pipeline.respond(to: request)
    }

    /// Ends every stream in flight with an `error` event (`shutting_down`), for the end of a
    /// shutdown's grace period.
    public func endStreams() {
        streams.endAll()
    }
}

/// The version `--version` and `/api/health` report.
public enum TextGatewayVersion {
    public static let current = "0.1.0"
}
