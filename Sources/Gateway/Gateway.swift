package import Access
import EventLoop
import HTTP1
package import HTTPClient
package import HTTPServer
import Redis
import Store
package import Telemetry
import Upstream

/// The product, composed once at start: the routes of docs/api.md (`/api/health`,
/// `/api/process`, `/v1/models`, `/v1/chat/completions`, `/metrics`) with their middleware,
/// behind one ``Pipeline`` whose finished hook sees every request end.
package final class Gateway: Sendable {
    package let configuration: GatewayConfiguration
    package let logger: Logger
    let metrics: GatewayMetrics
    private let pipeline: Pipeline
    private let streams: StreamRegistry
    /// What runs beside the routes while the gateway serves, each feature's in the order of
    /// the features: started after Redis and the upstream client, stopped before them.
    let services: [any Service]
    /// `JWT_JWKS_FILE`'s watcher, read again on SIGHUP.
    let keyFile: JWKSFileSource?
    /// Google's revocation list for Android attestations, when Android devices register.
    let androidRevocations: AndroidRevocationSource?
    /// The routes this gateway serves, as method and path pattern (`/api/jobs/{id}`), in the
    /// order they were declared (`HEAD` is answered wherever `GET` is), and whether each takes
    /// `Idempotency-Key` (docs/openapi.yaml says so of the same routes).
    let routeList: [(method: HTTPMethod, path: String, idempotent: Bool)]

    /// - Parameters:
    ///   - httpClient: the upstream client (sharing the server's loops, ideally).
    ///   - observers: told of every finished request, after the access log.
    package convenience init(
        configuration: GatewayConfiguration, httpClient: HTTPClient, logger: Logger,
        rateLimiter: (any RateLimiter)? = nil, clock: @escaping @Sendable () -> Instant = { .now },
        observers: [any RequestObserver] = [], version: String = TextGatewayVersion.current
    ) {
        self.init(
            configuration: configuration,
            upstreams: Self.upstreams(configuration: configuration, httpClient: httpClient), logger: logger,
            rateLimiter: rateLimiter, clock: clock, observers: observers, version: version)
    }

    /// A gateway over one ``ChatUpstream`` (tests run it in-process against a fake), as the
    /// configuration's first upstream.
    convenience init(
        configuration: GatewayConfiguration, upstream: (any ChatUpstream)?, logger: Logger,
        rateLimiter: (any RateLimiter)? = nil, clock: @escaping @Sendable () -> Instant = { .now },
        observers: [any RequestObserver] = [], version: String = TextGatewayVersion.current
    ) {
        self.init(
            configuration: configuration, upstreams: upstream.map { [(configuration.effectiveUpstreams[0], $0)] } ?? [],
            logger: logger,
            rateLimiter: rateLimiter, clock: clock, observers: observers, version: version)
    }

    /// A gateway over its upstreams in fallback order, each any ``ChatUpstream``.
    ///
    /// With a `store`, the gateway keeps a ledger row per request, serves `/api/usage` and
    /// `/api/history`, accepts the store's tokens, and starts each caller's daily quota at
    /// `tokensChargedToday` (user id → tokens the store counted today). With an `httpClient`
    /// (the server's), its services fetch key sets and revocation lists.
    init(
        configuration: GatewayConfiguration, upstreams: [(settings: UpstreamSettings, endpoint: any ChatUpstream)],
        logger: Logger,
        rateLimiter: (any RateLimiter)? = nil, clock: @escaping @Sendable () -> Instant = { .now },
        observers: [any RequestObserver] = [], version: String = TextGatewayVersion.current,
        registry: MetricsRegistry = MetricsRegistry(), store: GatewayStore? = nil,
        tokensChargedToday: [String: Int] = [:], spent: (day: [Spending], month: [Spending]) = ([], []),
        redis: RedisClient? = nil, httpClient: HTTPClient? = nil
    ) {
        self.configuration = configuration
        self.logger = logger
        let parts = GatewayParts(
            configuration: configuration, upstreams: upstreams, logger: logger, clock: clock, registry: registry,
            store: store, redis: redis, httpClient: httpClient)
        let authentication = AuthenticationFeature(parts)
        let limits = LimitsFeature(
            parts, rateLimiter: rateLimiter, tokensChargedToday: tokensChargedToday, spent: spent)
        let idempotency = IdempotencyFeature(parts)
        let admission = CallerFront(
            authentication: authentication, limits: limits, requiresTokens: configuration.requiresTokens)
        let attestation = AttestationFeature(parts, limiter: limits.limiter)
        let tracing = TracingFeature(parts, version: version)
        // The routes in the order the gateway declares them, the services in the order they start.
        let features: [any GatewayFeature] = [
            tracing, limits, idempotency,
            HealthFeature(version: version),
            ProcessFeature(parts, admission: admission, idempotency: idempotency),
            OpenAIFeature(parts: parts, admission: admission, idempotency: idempotency),
            MetricsFeature(parts: parts),
            JobsFeature(
                parts, admission: admission, idempotency: idempotency, limiter: limits.limiter,
                budgets: limits.budgetPolicy(.process), tracer: tracing.tracer),
            UsageFeature(parts, admission: admission, budgets: limits.budgetPolicy(.process)),
            HistoryFeature(parts: parts, admission: admission, idempotency: idempotency),
            attestation,
            AdminConsoleFeature(parts: parts, budgets: limits.budgetPolicy(.process)),
            // Last, just before the server: the first requests find the key set in force.
            authentication,
        ]
        let routes = features.flatMap(\.routes)
        services = features.flatMap(\.services)
        metrics = parts.metrics
        streams = parts.streams
        keyFile = authentication.keyFile
        androidRevocations = attestation.androidRevocations
        routeList = routes.map { route in
            (route.method, route.path, route.middleware.contains { $0 is IdempotencyMiddleware })
        }
        let finisher = RequestFinisher(
            metrics: metrics, metricsEnabled: configuration.metricsEnabled, logger: logger,
            clock: clock,
            observers: observers, ledger: store?.recorder, idempotency: idempotency.metrics,
            tracer: tracing.tracer, prices: configuration.prices
        )
        pipeline = Pipeline(
            routes: routes, groups: [.api, .openAI], finisher: finisher, logger: logger,
            errorLanguage: configuration.errorLanguage,
            strictLedger: store?.recorder.strict == true ? store?.recorder : nil, tracer: tracing.tracer
        )
    }

    /// The Lua every Redis connection loads at connect: the shared limiter's and cache's.
    static let redisScripts: [RedisScript] =
        RedisRateLimiter.scripts + SharedResponseCache.scripts + RedisBudgetKeeper.scripts

    /// The upstreams the configuration names, in order; one without an API key is left out.
    static func upstreams(configuration: GatewayConfiguration, httpClient: HTTPClient) -> [(
        settings: UpstreamSettings, endpoint: any ChatUpstream
    )] {
        configuration.effectiveUpstreams.compactMap { upstream in
            upstream.apiKey.map { key in
                (
                    upstream,
                    ChatClient(
                        httpClient: httpClient, baseURL: upstream.baseURL, apiKey: key,
                        timeout: configuration.upstreamTimeout, caFile: upstream.caFile
                    )
                )
            }
        }
    }

    /// The server settings this gateway needs: address, body limit, JSON protocol errors.
    package func serverConfiguration() -> ServerConfiguration {
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
    package func respond(to request: HTTPRequest) async -> HTTPResponse {
        await pipeline.respond(to: request)
    }

    /// Ends every stream in flight with an `error` event (`shutting_down`), for the end of a
    /// shutdown's grace period.
    package func endStreams() {
        streams.endAll()
    }
}

/// The version `--version` and `/api/health` report.
package enum TextGatewayVersion {
    package static let current = "0.1.0"
}
