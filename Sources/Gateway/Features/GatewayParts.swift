import HTTPClient
import Redis
import Telemetry
import TextTasks
import Upstream

/// What the gateway's features share: the configuration, the request metrics, the upstreams,
/// the store, Redis, the streams in flight and the clock.
struct GatewayParts: Sendable {
    let configuration: GatewayConfiguration
    let logger: Logger
    let clock: @Sendable () -> Instant
    let registry: MetricsRegistry
    let metrics: GatewayMetrics
    /// The upstreams behind `/api/process`, `/v1` and the jobs; nil when none has a key.
    let pool: UpstreamPool?
    let store: GatewayStore?
    let redis: RedisClient?
    /// The upstream client, when the gateway runs in a server: key sets and revocation lists
    /// are fetched with it.
    let httpClient: HTTPClient?
    /// The streams in flight, ended with a last event when a shutdown's grace period ends.
    let streams = StreamRegistry()

    init(
        configuration: GatewayConfiguration, upstreams: [(settings: UpstreamSettings, endpoint: any ChatUpstream)],
        logger: Logger, clock: @escaping @Sendable () -> Instant, registry: MetricsRegistry, store: GatewayStore?,
        redis: RedisClient?, httpClient: HTTPClient?
    ) {
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        self.registry = registry
        self.store = store
        self.redis = redis
        self.httpClient = httpClient
        var tokenKeys: [(String, String)] = []
        for upstream in configuration.effectiveUpstreams {
            for task in TextTask.allCases {
                if let model = upstream.model(for: task) { tokenKeys.append((task.rawValue, model)) }
            }
            for (alias, _) in configuration.effectiveModelAliases {
                if let model = upstream.model(forAlias: alias) { tokenKeys.append(("chat", model)) }
            }
        }
        metrics = GatewayMetrics(registry: registry, tokenKeys: tokenKeys)
        pool =
            upstreams.isEmpty
            ? nil
            : UpstreamPool(
                members: upstreams, policy: configuration.upstreamPolicy, deadline: configuration.upstreamTimeout,
                metrics: UpstreamMetrics(registry: registry), logger: logger
            )
    }
}
