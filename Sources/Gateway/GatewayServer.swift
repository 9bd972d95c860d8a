package import EventLoop
package import HTTPClient
package import HTTPServer
import Redis
package import Telemetry

/// The running gateway: one group of event loops shared by the HTTP server and the upstream
/// client (a request and its upstream call stay on one loop), the gateway's routes, and an
/// orderly stop.
package final class GatewayServer: Sendable {
    package let gateway: Gateway
    package let server: HTTPServer
    package let httpClient: HTTPClient
    private let services: ServiceGroup

    private init(gateway: Gateway, server: HTTPServer, httpClient: HTTPClient, services: ServiceGroup) {
        self.gateway = gateway
        self.server = server
        self.httpClient = httpClient
        self.services = services
    }

    /// The address the server listens on.
    package var address: SocketAddress? { server.localAddress }

    /// Starts loops, client and server, and logs the start (loudly when the key or model is missing).
    package static func start(
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
                        spent: (store?.opened.spentToday ?? [], store?.opened.spentThisMonth ?? []),
                        redis: redis, httpClient: client.client)
                    let http = try GatewayHTTPService(gateway: gateway, loops: loops)
                    served.set(http)
                    // Last, so stopped first: gives back what a burst of requests left in the heap.
                    let memory = MemoryReturner.forGateway(gateway, client: client.client)
                    return gateway.services + [http, memory.service()]
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
        registerMetrics(registry, server: http.server, polling: loops.polling)
        logger.info(
            "started",
            StartedLine.fields(
                configuration: configuration, environmentName: environmentName, address: http.address, loops: loops))
        for warning in StartupWarnings.of(configuration, address: http.address, descriptors: loops.descriptors) {
            warning.log(to: logger)
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
    package func reloadKeys() {
        gateway.keyFile?.reload(force: true)
    }

    /// Stops the services in reverse order of start: the server stops accepting, lets
    /// requests in flight finish within the configured grace period (then ends streams with
    /// a last event) and closes every connection; then the client and the loops stop.
    package func stop() async {
        await services.stop()
    }
}
