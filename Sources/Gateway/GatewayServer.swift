import Access
public import EventLoop
public import HTTPClient
public import HTTPServer
import Postgres
import Redis
public import Store
public import Telemetry
import TextTasks

#if canImport(Glibc)
    import Glibc
#endif

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
        let loops = configuration.loopCount > 0 ? configuration.loopCount : EventLoopGroup.processorCount
        let pollLimit = configuration.loopPollLimit(cpuQuota: EventLoopGroup.cgroupQuotaCPUs())
        let polling = pollLimit > .zero ? LoopPolling(limit: pollLimit, idleCPU: IdleCPU()) : nil
        let group = try EventLoopGroup(loopCount: loops, namePrefix: "loop", polling: polling)
        // The store next (a Postgres client runs on the loops): a store that cannot be used
        // stops the start before anything listens.
        let opened: OpenedStore?
        do {
            opened = try await openStore(
                configuration: configuration, group: group, registry: registry, logger: logger, clock: clock)
        } catch {
            await group.shutdownGracefully()
            throw error
        }
        var clientConfiguration = HTTPClientConfiguration()
        let descriptors = DescriptorBudget(
            limit: Socket.raiseOpenFileLimit(), loops: loops,
            connectionsPerCurlHandle: clientConfiguration.transfersPerCurlHandle
        )
        clientConfiguration.timeout = configuration.upstreamTimeout
        clientConfiguration.connectTimeout = configuration.upstreamConnectTimeout
        clientConfiguration.maxConnections = descriptors.cap(configuration.upstreamMaxConnections)
        clientConfiguration.idleConnectionTimeout = configuration.upstreamIdleTimeout
        let httpClient: HTTPClient
        do {
            httpClient = try HTTPClient(configuration: clientConfiguration, group: group)
        } catch {
            await opened?.closer.stop(deadline: .now())
            await group.shutdownGracefully()
            throw error
        }
        // One connection per loop: a request's Redis calls stay on its loop's thread.
        let redis = configuration.redis.map {
            RedisClient(configuration: $0, group: group, scripts: Gateway.redisScripts)
        }
        let gateway = Gateway(
            configuration: configuration,
            upstreams: Gateway.upstreams(configuration: configuration, httpClient: httpClient), logger: logger,
            clock: clock, observers: observers,
            registry: registry, store: opened?.store, tokensChargedToday: opened?.chargedToday ?? [:], redis: redis,
            httpClient: httpClient
        )
        var serverConfiguration = gateway.serverConfiguration()
        serverConfiguration.maxConnections = descriptors.cap(serverConfiguration.maxConnections)
        let server: HTTPServer
        do {
            server = try HTTPServer(configuration: serverConfiguration, group: group) { await gateway.respond(to: $0) }
        } catch {
            await httpClient.shutdown()
            await opened?.closer.stop(deadline: .now())
            await group.shutdownGracefully()
            throw error
        }
        // Started in this order, stopped in reverse: the loops, the store (closed after its
        // writer has committed the last rows), its writer and pollers, Redis and the upstream
        // client (stopped after what calls them: the last requests' leases are given back), the
        // gateway's services, the server (whose drain hands the writer its last rows).
        var list: [any Service] = [EventLoopGroupService(group: group)]
        if let opened { list += [opened.closer] + opened.store.services }
        if let redis { list.append(redis) }
        list.append(HTTPClientService(client: httpClient))
        list += gateway.services
        list.append(GatewayHTTPService(server: server, gateway: gateway))
        let services = ServiceGroup(
            services: list,
            gracefulShutdownTimeout: configuration.shutdownGrace + .seconds(5),
            log: { event, service in
                logger.log(
                    event == "stop_overran" ? .warning : .debug, "service_\(event)", [("service", .string(service))])
            }
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
            "textgateway_loop_polled_wakeups_total",
            help: "Event-loop waits that ended on an event found while polling, without sleeping."
        ) { Double(polling?.polledWakeupCount ?? 0) }
        gateway.metrics.registry.counterFunction(
            "textgateway_loop_polling_seconds_total",
            help: "Time the event loops spent polling for events before sleeping."
        ) { Double(polling?.idleCPU.polledNanoseconds ?? 0) / 1e9 }
        logger.info(
            "started",
            [
                ("version", .string(TextGatewayVersion.current)),
                ("environment", .string(environmentName)),
                ("address", .string(address.description)),
                ("access", .string(configuration.access)),
                ("loops", .int(loops)),
                ("loop_poll_us", .int(Int(pollLimit / .microseconds(1)))),
                ("upstream", .string(configuration.baseURL)),
                ("store", .string(configuration.database.logDescription)),
                ("ledger_durability", .string(configuration.ledgerDurability.rawValue)),
                ("jwt", .string(configuration.jwt?.logDescription ?? "off")),
                ("redis", .string(configuration.redis?.description ?? "off")),
                ("cache", .string(configuration.cacheTimeToLive == nil ? "off" : configuration.cacheBackend.rawValue)),
                (
                    "app_attest",
                    .string(
                        configuration.appAttest.flatMap { settings in
                            settings.appIDs.isEmpty
                                ? nil : "\(settings.environment.rawValue),required=\(settings.requirement.rawValue)"
                        } ?? "off")
                ),
                (
                    "android_attest",
                    .string(
                        configuration.appAttest.flatMap { settings in
                            settings.android.map { android in
                                "apps=\(android.policy.apps.count),required=\(settings.requirement.rawValue)"
                                    + ",unlocked=\(android.policy.requireLockedBootloader ? "refused" : "allowed")"
                            }
                        } ?? "off")
                ),
            ])
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
        return GatewayServer(gateway: gateway, server: server, httpClient: httpClient, services: services)
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

extension GatewayServer {
    /// The opened store, what closes it, and what it counted today (to start the quotas).
    struct OpenedStore {
        let store: GatewayStore
        let closer: StoreCloser
        let chargedToday: [String: Int]
    }

    /// How long a start waits for a Postgres server to answer (the client reconnecting
    /// meanwhile) before it fails: long enough for a server starting beside the gateway.
    static let postgresStartTimeout: Duration = .seconds(10)

    /// Opens, checks and migrates the store `DATABASE_URL` names; nil when it is `off`.
    /// Throws ``StoreStartError`` (naming the file or server) when the store cannot serve: a
    /// Postgres server that does not answer within ``postgresStartTimeout`` included.
    static func openStore(
        configuration: GatewayConfiguration, group: EventLoopGroup, registry: MetricsRegistry, logger: Logger,
        clock: @escaping @Sendable () -> Instant
    ) async throws -> OpenedStore? {
        let backend: any StoreBackend
        let closer: StoreCloser
        switch configuration.database {
        case .off:
            return nil
        case .sqlite(let path):
            let pool = try BlockingPool(threadCount: 2, name: "store")
            let sqlite: SQLiteStore
            do {
                sqlite = try await SQLiteStore.open(path: path, pool: pool)
            } catch {
                await pool.shutdown()
                throw StoreStartError(error: error)
            }
            backend = sqlite
            closer = StoreCloser { _ in
                await sqlite.close()
                await pool.shutdown()
            }
        case .postgres(let postgres):
            // Started here rather than as a service: the store is migrated before the start
            // goes on. The closer stops it after the writer's last commit.
            let client = PostgresClient(configuration: postgres, group: group, name: "store_postgres")
            try await client.start()
            do {
                backend = try await PostgresStore.open(client: client, startTimeout: postgresStartTimeout)
            } catch {
                await client.stop(deadline: .now())
                throw StoreStartError(error: error)
            }
            closer = StoreCloser { deadline in await client.stop(deadline: deadline) }
        }
        let store = GatewayStore(
            backend: backend, configuration: configuration, registry: registry, logger: logger, clock: clock)
        do throws(StoreError) {
            try await store.prepare()
            let charged = try await backend.tokensCharged(onDay: clock().utcDay)
            return OpenedStore(store: store, closer: closer, chargedToday: charged)
        } catch {
            await closer.stop(deadline: .now())
            throw StoreStartError(error: error)
        }
    }
}

/// The store could not be opened, checked or migrated: the start stops (exit 2).
public struct StoreStartError: Error, CustomStringConvertible {
    public let error: StoreError
    public var description: String { "the store cannot be used: \(error)" }
}

/// Closes the store and its threads or its Postgres client, after the writer stopped.
struct StoreCloser: Service {
    let close: @Sendable (MonotonicInstant) async -> Void
    var name: String { "store" }
    func start() async throws {}
    func stop(deadline: MonotonicInstant) async { await close(deadline) }
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
        await server.shutdown(
            gracePeriod: gateway.configuration.shutdownGrace,
            whenGraceEnds: {
                gateway.endStreams()
            })
    }
}

/// `text-gateway healthcheck`: one GET of /api/health on loopback.
public enum Healthcheck {
    public static func run(port: Int) async -> Bool {
        guard let client = try? HTTPClient() else { return false }
        let request = HTTPClientRequest(
            url: "http://127.0.0.1:\(port)/api/health", timeout: .seconds(3), connectTimeout: .seconds(2))
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
