#if canImport(Glibc)
import Glibc
#endif
public import EventLoop
public import HTTPClient
public import HTTPServer

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
        let loops = configuration.loopCount > 0 ? configuration.loopCount : EventLoopGroup.processorCount
        let pollLimit = configuration.loopPollLimit(cpuQuota: EventLoopGroup.cgroupQuotaCPUs())
        let polling = pollLimit > .zero ? LoopPolling(limit: pollLimit, idleCPU: IdleCPU()) : nil
        let group = try EventLoopGroup(loopCount: loops, namePrefix: "loop", polling: polling)
        var clientConfiguration = HTTPClientConfiguration()
        let descriptors = DescriptorBudget(
            limit: Socket.raiseOpenFileLimit(), loops: loops, connectionsPerCurlHandle: clientConfiguration.transfersPerCurlHandle
        )
        clientConfiguration.timeout = configuration.upstreamTimeout
        clientConfiguration.connectTimeout = configuration.upstreamConnectTimeout
        clientConfiguration.maxConnections = descriptors.cap(configuration.upstreamMaxConnections)
        clientConfiguration.idleConnectionTimeout = configuration.upstreamIdleTimeout
        let httpClient: HTTPClient
        do {
            httpClient = try HTTPClient(configuration: clientConfiguration, group: group)
        } catch {
            await group.shutdownGracefully()
            throw error
        }
        let gateway = Gateway(configuration: configuration, httpClient: httpClient, logger: logger, clock: clock, observers: observers)
        var serverConfiguration = gateway.serverConfiguration()
        serverConfiguration.maxConnections = descriptors.cap(serverConfiguration.maxConnections)
        let server: HTTPServer
        do {
            server = try HTTPServer(configuration: serverConfiguration, group: group) { await gateway.respond(to: $0) }
        } catch {
            await httpClient.shutdown()
            await group.shutdownGracefully()
            throw error
        }
        // Started in this order, stopped in reverse: the loops, the upstream client, the server.
        let services = ServiceGroup(
            services: [EventLoopGroupService(group: group), HTTPClientService(client: httpClient), GatewayHTTPService(server: server, gateway: gateway)],
            gracefulShutdownTimeout: configuration.shutdownGrace + .seconds(5),
            log: { event, service in logger.log(event == "stop_overran" ? .warning : .debug, "service_\(event)", [("service", .string(service))]) }
        )
        try await services.start()
        guard let address = server.localAddress else {
            await services.stop()
            throw IOError(errnoCode: EADDRNOTAVAIL, reason: "listen")
        }
        let open = server
        gateway.metrics.registry.gaugeFunction("textgateway_open_connections", help: "Client connections open now.") {
            Double(open.openConnectionCount)
        }
        gateway.metrics.registry.counterFunction(
            "textgateway_loop_polled_wakeups_total", help: "Event-loop waits that ended on an event found while polling, without sleeping."
        ) { Double(polling?.polledWakeupCount ?? 0) }
        gateway.metrics.registry.counterFunction(
            "textgateway_loop_polling_seconds_total", help: "Time the event loops spent polling for events before sleeping."
        ) { Double(polling?.idleCPU.polledNanoseconds ?? 0) / 1e9 }
        logger.info("started", [
            ("version", .string(TextGatewayVersion.current)),
            ("environment", .string(environmentName)),
            ("address", .string(address.description)),
            ("loops", .int(loops)),
            ("loop_poll_us", .int(Int(pollLimit / .microseconds(1)))),
            ("upstream", .string(configuration.baseURL)),
        ])
        if descriptors.cap(configuration.upstreamMaxConnections) < configuration.upstreamMaxConnections {
            logger.warning("descriptor_limit", [
                ("open_file_limit", .int(descriptors.limit)),
                ("client_connections", .int(descriptors.perSide)), ("upstream_connections", .int(descriptors.perSide)),
                ("effect", .string("requests beyond these wait; raise the hard open-file limit (ulimit -n) to hold more")),
            ])
        }
        let loopback = configuration.host == "localhost" || configuration.host.hasPrefix("127.") || configuration.host == "::1"
        if configuration.tokens == nil && !loopback {
            logger.warning("open_gateway", [("address", .string(configuration.host)),
                                            ("effect", .string("no GATEWAY_TOKENS: anyone who reaches this address can spend the upstream key"))])
        }
        if configuration.apiKey == nil {
            logger.error("not_configured", [("missing", .string("DARVAREH_API_KEY")), ("effect", .string("/api/process answers 500 not_configured"))])
        }
        for task in TextTask.allCases where configuration.model(for: task) == nil {
            logger.error("not_configured", [("missing", .string("DARVAREH_MODEL_ID")), ("task", .string(task.rawValue)),
                                            ("effect", .string("/api/process answers 500 not_configured"))])
        }
        return GatewayServer(gateway: gateway, server: server, httpClient: httpClient, services: services)
    }

    /// Stops the services in reverse order of start: the server stops accepting, lets
    /// requests in flight finish within the configured grace period (then ends streams with
    /// a last event) and closes every connection; then the client and the loops stop.
    public func stop() async {
        await services.stop()
    }
}

/// The upstream client as a service: nothing to start (it runs on the loops), stopped
/// after the server so no request loses its upstream call.
struct HTTPClientService: Service {
    let client: HTTPClient
    var name: String { "upstream_client" }
    func start() async throws {}
    func stop(deadline: MonotonicInstant) async { await client.shutdown() }
}

/// The gateway's HTTP server as a service: it starts listening, and stops with the
/// gateway's drain (the grace period, then a last event on every stream).
struct GatewayHTTPService: Service {
    let server: HTTPServer
    let gateway: Gateway
    var name: String { "http_server" }

    func start() async throws {
        try await server.start()
    }

    func stop(deadline: MonotonicInstant) async {
        let gateway = self.gateway
        await server.shutdown(gracePeriod: gateway.configuration.shutdownGrace, whenGraceEnds: {
            gateway.endStreams()
        })
    }
}

/// `text-gateway healthcheck`: one GET of /api/health on loopback.
public enum Healthcheck {
    public static func run(port: Int) async -> Bool {
        guard let client = try? HTTPClient() else { return false }
        let request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/api/health", timeout: .seconds(3), connectTimeout: .seconds(2))
        let healthy = (try? await client.send(request))?.status == 200
        await client.shutdown()
        return healthy
    }
}

/// Every request in flight holds two descriptors: the caller's connection and its upstream
/// one. When the open-file limit cannot hold both caps, each side gets half of what the limit
/// leaves after a reserve (listener, epoll, eventfds, logs) and the upstream side's curl
/// handles (two descriptors each, their wake-up socket pair: one handle per
/// `transfersPerCurlHandle` connections, plus one per loop for rounding), so a burst waits
/// for free connections instead of failing for want of a descriptor.
struct DescriptorBudget: Equatable {
    static let reserve = 64
    let limit: Int
    let perSide: Int

    init(limit: Int, loops: Int, connectionsPerCurlHandle: Int) {
        self.limit = limit
        guard limit > 0 else {
            perSide = Int.max
            return
        }
        // 2·S + reserve + 2·(S / perHandle + loops) ≤ limit, solved for S.
        let perHandle = max(1, connectionsPerCurlHandle)
        let usable = limit - Self.reserve - 2 * loops
        perSide = max(16, usable * perHandle / (2 * perHandle + 2))
    }

    func cap(_ configured: Int) -> Int { min(configured, perSide) }
}
