public import EventLoop
public import HTTPClient
public import HTTPServer
import Redis
public import Telemetry
import TextTasks

/// The running gateway: one group of event loops shared by the HTTP server and the upstream
/// client (a request and its upstream call stay on one loop), the gateway's routes, and an
/// orderly stop.
public final class GatewayServer: Sendable {
    public let gateway: Gateway
    public let server: HTTPServer
    public let httpClient: HTTPClient
    private let services: ServiceGroup

    private init(gateway: Gateway, server: HTTPServer, httpClient: HTTPClient, services: ServiceGroup) {
        self.gateway = gateway
        self.server = server
        self.httpClient = httpClient
        self.services = services
    }

    /// The address the server listens on.
    public var address: SocketAddress? { server.localAddress }

    /// Starts loops, client and server, and logs the start (loudly when the key or model is missing).
    public static func start(
        configuration: GatewayConfiguration, logger: Logger, environmentName: String = "development",
        clock: @escaping @Sendable () -> Instant = { .now }, observers: [any RequestObserver] = []
    ) async throws -> GatewayServer {
        // libcurl before the loops' threads (a no-op when main did it already).
        guard HTTPClient.initializeGlobally() else { throw HTTPClientError(.invalidRequest, "curl_global_init failed") }
        let registry = MetricsRegistry()
        let loops = try ServerLoops(configuration: configuration)
        let store = StoreService(
            configuration: configuration, group: loops.group, registry: registry, logger: logger, clock: clock)
        // One connection per loop: a request's Redis calls stay on its loop's thread.
        let redis = configuration.redis.map {
            RedisClient(configuration: $0, group: loops.group, scripts: Gateway.redisScripts)
        }
        let client = UpstreamClientService(configuration: configuration, loops: loops)
        let served = StartedValue<GatewayHTTPService>()
        // Started in this order, stopped in reverse: the loops; the store (closed after its
        // writer has committed the last rows), its writer and pollers; Redis and the upstream
        // client (stopped after what calls them: the last requests' leases are given back); the
        // gateway's services; the server (whose drain hands the writer its last rows).
        let services = ServiceGroup(
            stages: [
                // The store first (a Postgres client runs on the loops): a store that cannot be
                // used stops the start before anything listens.
                { [EventLoopGroupService(group: loops.group)] + (store.map { [$0] } ?? []) },
                { (store?.opened.store.services ?? []) + (redis.map { [$0] } ?? []) + [client] },
                {
                    let gateway = Gateway(
                        configuration: configuration,
                        upstreams: Gateway.upstreams(configuration: configuration, httpClient: client.client),
                        logger: logger, clock: clock, observers: observers, registry: registry,
                        store: store?.opened.store, tokensChargedToday: store?.opened.chargedToday ?? [:],
                        redis: redis, httpClient: client.client)
                    let http = try GatewayHTTPService(gateway: gateway, loops: loops)
                    served.set(http)
                    return gateway.services + [http]
                },
            ],
            gracefulShutdownTimeout: configuration.shutdownGrace + .seconds(5),
            log: { event, service in
                logger.log(
                    event == "stop_overran" ? .warning : .debug, "service_\(event)", [("service", .string(service))])
            }
        )
        try await services.start()
        let http = served.value
        let address = http.address
        let descriptors = loops.descriptors
        registerMetrics(registry, server: http.server, polling: loops.polling)
        logger.info(
            "started",
            StartedLine.fields(
                configuration: configuration, environmentName: environmentName, address: address, loops: loops))
        if let root = configuration.appAttest?.android?.extraRoot {
            logger.warning(
                "android_attest_test_root",
                [
                    ("file", .string(root.path)),
                    (
                        "effect",
                        .string(
                            "phones attested under this root register as if Google had attested them: for tests only")
                    ),
                ])
        }
        if let root = configuration.appAttest?.extraRoot {
            logger.warning(
                "app_attest_test_root",
                [
                    ("file", .string(root.path)),
                    (
                        "effect",
                        .string(
                            "devices attested under this root register as if Apple had attested them: for tests only")
                    ),
                ])
        }
        if descriptors.cap(configuration.upstreamMaxConnections) < configuration.upstreamMaxConnections {
            logger.warning(
                "descriptor_limit",
                [
                    ("open_file_limit", .int(descriptors.limit)),
                    ("client_connections", .int(descriptors.perSide)),
                    ("upstream_connections", .int(descriptors.perSide)),
                    (
                        "effect",
                        .string("requests beyond these wait; raise the hard open-file limit (ulimit -n) to hold more")
                    ),
                ])
        }
        // Loopback too: a local proxy, a container's published port or an SSH tunnel makes a
        // loopback address reachable from elsewhere.
        if !configuration.requiresTokens {
            logger.warning(
                "open_gateway",
                [
                    ("address", .string(address.description)),
                    (
                        "effect",
                        .string(
                            "no credential is needed (no GATEWAY_TOKENS, GATEWAY_TOKENS_FILE or JWT_* key, or "
                                + "AUTH_REQUIRED=off): anyone who can reach this address spends the upstream key"
                        )
                    ),
                ])
        }
        if configuration.apiKey == nil {
            logger.error(
                "not_configured",
                [
                    ("missing", .string("DARVAREH_API_KEY")),
                    ("effect", .string("/api/process answers 500 not_configured")),
                ])
        }
        for task in TextTask.allCases where configuration.model(for: task) == nil {
            logger.error(
                "not_configured",
                [
                    ("missing", .string("DARVAREH_MODEL_ID")), ("task", .string(task.rawValue)),
                    ("effect", .string("/api/process answers 500 not_configured")),
                ])
        }
        return GatewayServer(gateway: http.gateway, server: http.server, httpClient: client.client, services: services)
    }

    /// The server's own metrics: its connections, and its loops' polling.
    private static func registerMetrics(_ registry: MetricsRegistry, server: HTTPServer, polling: LoopPolling?) {
        registry.gaugeFunction("textgateway_open_connections", help: "Client connections open now.") {
            Double(server.openConnectionCount)
        }
        registry.counterFunction(
            "textgateway_loop_polled_wakeups_total",
            help: "Event-loop waits that ended on an event found while polling, without sleeping."
        ) { Double(polling?.polledWakeupCount ?? 0) }
        registry.counterFunction(
            "textgateway_loop_polling_seconds_total",
            help: "Time the event loops spent polling for events before sleeping."
        ) { Double(polling?.idleCPU.polledNanoseconds ?? 0) / 1e9 }
    }

    /// Reads `JWT_JWKS_FILE` again (SIGHUP), whether or not it looks changed.
    public func reloadKeys() {
        gateway.keyFile?.reload(force: true)
    }

    /// Stops the services in reverse order of start: the server stops accepting, lets
    /// requests in flight finish within the configured grace period (then ends streams with
    /// a last event) and closes every connection; then the client and the loops stop.
    public func stop() async {
        await services.stop()
    }
}
