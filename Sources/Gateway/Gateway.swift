public import Access
import Crypto
import EventLoop
import HTTP1
public import HTTPClient
public import HTTPServer
import JSON
import Jobs
import Redis
import Store
public import Telemetry
import TextTasks
import Upstream

/// The product, composed once at start: the routes of docs/api.md (`/api/health`,
/// `/api/process`, `/v1/models`, `/v1/chat/completions`, `/metrics`) with their middleware,
/// behind one ``Pipeline`` whose finished hook sees every request end.
public final class Gateway: Sendable {
    public let configuration: GatewayConfiguration
    public let logger: Logger
    let metrics: GatewayMetrics
    /// The verifier of sign-in JWTs, when `JWT_*` configure them.
    let jwt: JWTVerifier?
    let jwtMetrics: JWTMetrics?
    private let pipeline: Pipeline
    /// The upstreams behind `/api/process` and `/v1`; nil when none has a key.
    let pool: UpstreamPool?
    private let streams = StreamRegistry()
    /// What runs beside the gateway while it serves (the shared limiter's lease renewal),
    /// started after Redis and stopped before it.
    let services: [any Service]
    /// The job runner and its pollers: started after the upstream client and stopped before
    /// it, so that a stop aborts the jobs' calls and gives their leases back.
    let jobServices: [any Service]
    /// This instance's job runner, when there is a store and an upstream.
    let jobRunner: JobRunner?
    /// Google's revocation list for Android attestations, when Android devices register.
    let androidRevocations: AndroidRevocationSource?
    /// Apple's risk metric for new iPhones, when `APP_ATTEST_RISK_*` is set.
    let appAttestRisk: AppAttestRiskChecker?
    /// The routes this gateway serves, as method and path pattern (`/api/jobs/{id}`), in the
    /// order they were declared (`HEAD` is answered wherever `GET` is), and whether each takes
    /// `Idempotency-Key` (docs/openapi.yaml says so of the same routes).
    let routeList: [(method: HTTPMethod, path: String, idempotent: Bool)]

    /// - Parameters:
    ///   - httpClient: the upstream client (sharing the server's loops, ideally).
    ///   - observers: told of every finished request, after the access log.
    public convenience init(
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
    /// `tokensChargedToday` (user id → tokens the store counted today).
    init(
        configuration: GatewayConfiguration, upstreams: [(settings: UpstreamSettings, endpoint: any ChatUpstream)],
        logger: Logger,
        rateLimiter: (any RateLimiter)? = nil, clock: @escaping @Sendable () -> Instant = { .now },
        observers: [any RequestObserver] = [], version: String = TextGatewayVersion.current,
        registry: MetricsRegistry = MetricsRegistry(), store: GatewayStore? = nil,
        tokensChargedToday: [String: Int] = [:],
        redis: RedisClient? = nil
    ) {
        self.configuration = configuration
        self.logger = logger
        var tokenKeys: [(String, String)] = []
        for upstream in configuration.effectiveUpstreams {
            for task in TextTask.allCases {
                if let model = upstream.model(for: task) { tokenKeys.append((task.rawValue, model)) }
            }
            for (alias, _) in configuration.effectiveModelAliases {
                if let model = upstream.model(forAlias: alias) { tokenKeys.append(("chat", model)) }
            }
        }
        let metrics = GatewayMetrics(registry: registry, tokenKeys: tokenKeys)
        self.metrics = metrics
        let jwt = configuration.jwt?.makeVerifier()
        let jwtMetrics = jwt.map { JWTMetrics(registry: registry, verifier: $0) }
        self.jwt = jwt
        self.jwtMetrics = jwtMetrics
        var limiter: (any RateLimiter)?
        var services: [any Service] = []
        if let redis { SharedRateLimiter.registerUpGauge(registry, client: redis) }
        if configuration.rateLimitsEnabled {
            if let rateLimiter {
                limiter = rateLimiter
            } else {
                let local = InMemoryRateLimiter(leaseTimeToLive: configuration.leaseTimeToLive)
                let now = clock()
                for (userID, tokens) in tokensChargedToday {
                    local.seed(tokensUsed: tokens, key: RateLimitMiddleware.key(userID: userID), now: now)
                }
                limiter = local
                if let redis {
                    let shared = RedisRateLimiter(
                        client: redis,
                        leaseTimeToLive: RedisRateLimiter.leaseTimeToLive(
                            upstreamTimeout: configuration.upstreamTimeout))
                    let limits = SharedRateLimiter(
                        client: redis, shared: shared, local: local, mode: configuration.redisFailureMode,
                        registry: registry, logger: logger
                    )
                    limiter = limits
                    services.append(limits.renewalService())
                }
            }
        }
        let pool =
            upstreams.isEmpty
            ? nil
            : UpstreamPool(
                members: upstreams, policy: configuration.upstreamPolicy, deadline: configuration.upstreamTimeout,
                metrics: UpstreamMetrics(registry: registry), logger: logger
            )
        self.pool = pool
        let cache: (any AnswerCache)? = configuration.cacheTimeToLive.map { timeToLive in
            let local = ResponseCache(
                timeToLive: timeToLive, capacity: configuration.cacheMaxEntries, clock: configuration.cacheClock)
            guard configuration.cacheBackend == .redis, let redis else { return local }
            return SharedResponseCache(
                redis: redis, local: local,
                lockTimeToLive: SharedResponseCache.lockTimeToLive(upstreamTimeout: configuration.upstreamTimeout),
                waitLimit: configuration.upstreamTimeout, registry: registry
            )
        }
        // Without a store, the keys are this instance's own, in memory.
        let idempotencyRecords: any IdempotencyRepository = store?.backend ?? MemoryIdempotencyRecords()
        let idempotencyMetrics = IdempotencyMetrics(registry: registry)
        let idempotency = IdempotencyService(
            records: idempotencyRecords, batched: store?.backend is SQLiteStore,
            keptKeys: (store?.backend as? SQLiteStore).map { sqlite in
                { @Sendable now, add async throws(StoreError) in
                    try await sqlite.forEachKeptIdempotencyKey(nowMilliseconds: now, add)
                }
            },
            settings: IdempotencyService.Settings(
                lease: max(configuration.upstreamTimeout, configuration.streamTotalTimeout) + .seconds(60)
            ),
            metrics: idempotencyMetrics, faults: store?.faults, logger: logger, clock: clock
        )
        // Every minute, whatever keeps the records: an answer kept for the retry window alone
        // is gone from the store within a minute of its expiry, not at the hourly retention.
        services.append(
            PeriodicService(
                name: "idempotency_purge", interval: configuration.idempotencyPurgeInterval, immediately: false
            ) {
                await idempotency.purge()
            })
        if store?.backend is SQLiteStore {
            services.append(
                PeriodicService(name: "idempotency_filter", interval: .seconds(3600), immediately: true) {
                    await idempotency.rebuildKeptKeys()
                })
        }
        self.services = services
        func idempotent(_ route: IdempotencyMiddleware.Route) -> IdempotencyMiddleware {
            IdempotencyMiddleware(
                service: idempotency, route: route,
                // A job's answer is its id; the others' are the answer's text.
                timeToLive: route == .jobs
                    ? configuration.idempotencyTimeToLive
                    : configuration.idempotencyAnswerTimeToLive,
                clients: configuration.clientAddressKey)
        }
        // A concern the configuration turns off is no layer at all.
        // Authentication is always a layer: even a gateway that knows no credential must
        // refuse one in its own formats rather than serve it as a guest.
        func authentication(required: Bool, placeholderGuests: Bool = false) -> AuthMiddleware {
            var middleware = AuthMiddleware(
                tokens: configuration.tokens, storeTokens: store?.tokens, jwt: jwt,
                jwtMetrics: configuration.metricsEnabled ? jwtMetrics : nil,
                required: required, placeholderGuests: placeholderGuests, clock: clock
            )
            middleware.devices = store?.devices
            middleware.devicesOnly = configuration.appAttest?.requirement == .all
            middleware.faults = store?.faults
            return middleware
        }
        func limits(_ cost: RequestCost) -> [any Middleware] {
            guard let limiter else { return [] }
            return [
                RateLimitMiddleware(
                    limiter: limiter, plans: configuration.plans, clients: configuration.clientAddressKey,
                    maxTokens: configuration.maxTokens,
                    cost: cost, clock: clock
                )
            ]
        }
        let admission: [any Middleware] = [authentication(required: configuration.requiresTokens)] + limits(.process)
        let openAIAdmission: [any Middleware] = [
            authentication(required: configuration.requiresTokens, placeholderGuests: true)
        ]
        let chatAdmission =
            openAIAdmission
            + limits(.chat(maximumMessages: configuration.maxMessages, maximumChoices: configuration.maxChoices))
        // Routes that take a body read it only as it was sent.
        let bodied = admission + [ContentEncodingMiddleware()]
        var routes = [
            Route(method: .GET, path: "/api/health", middleware: [], handler: HealthRoute(version: version)),
            Route(
                method: .POST, path: "/api/process", middleware: bodied + [idempotent(.process)],
                handler: ProcessRoute(
                    pool: pool, configuration: configuration, cache: cache, metrics: metrics, streams: streams,
                    logger: logger
                )),
            Route(
                method: .GET, path: "/v1/models", middleware: openAIAdmission + limits(.none),
                handler: ModelsRoute(aliases: configuration.effectiveModelAliases)),
            Route(
                method: .POST, path: "/v1/chat/completions",
                middleware: chatAdmission + [ContentEncodingMiddleware(), idempotent(.chat)],
                handler: ChatCompletionsRoute(
                    pool: pool, configuration: configuration, streams: streams, logger: logger
                )),
            Route(
                method: .GET, path: "/metrics", middleware: [],
                handler: MetricsRoute(registry: metrics.registry, token: configuration.metricsToken)),
        ]
        var jobServices: [any Service] = []
        var jobRunner: JobRunner?
        if let store, let pool {
            let jobMetrics = JobMetrics(registry: registry)
            let events = JobEvents()
            let plans = configuration.plans
            let runner = JobRunner(
                JobRunner.Dependencies(
                    store: store.backend,
                    answering: TaskAnswerer(
                        pool: pool, bodies: ProcessBodies(configuration: configuration),
                        maxTokens: configuration.maxTokens, logger: logger, recorder: store.recorder),
                    settings: configuration.jobs, metrics: jobMetrics, events: events, faults: store.faults,
                    logger: logger, clock: clock,
                    charge: { [limiter] job, tokens in
                        guard let limiter, tokens > 0 else { return }
                        let plan = plans.plan(
                            for: job.ownerID.map { Caller(userID: $0, plan: job.plan ?? PlanCatalog.defaultName) })
                        try? await limiter.charge(key: job.callerKey, plan: plan, tokens: tokens, now: clock())
                    }
                ))
            jobRunner = runner
            let backend = store.backend
            let faults = store.faults
            let retention = configuration.jobs.retention
            jobServices = [
                runner,
                PeriodicService(name: "job_statistics", interval: .seconds(5), immediately: true) {
                    do throws(StoreError) {
                        jobMetrics.publish(try await backend.jobStatistics())
                    } catch {
                        faults.record(error, operation: .jobs)
                    }
                },
                PeriodicService(name: "job_retention", interval: .seconds(600), immediately: true) {
                    let cutoff = Int64(clock().secondsSinceEpoch * 1000) - Int64(retention / .milliseconds(1))
                    do throws(StoreError) {
                        let purged = try await backend.purgeJobs(endedBeforeMilliseconds: cutoff)
                        if purged > 0 { logger.info("jobs_purged", [("jobs", .int(purged))]) }
                    } catch {
                        faults.record(error, operation: .purge)
                    }
                },
            ]
            let jobs = JobRoutes(
                runner: runner, pool: pool, streams: streams, heartbeat: configuration.heartbeatInterval,
                clients: configuration.clientAddressKey)
            // Submitting is a request like /api/process (limits included); reading and
            // cancelling a job is outside the limits, as reading history is.
            let reading: [any Middleware] = [authentication(required: configuration.requiresTokens)]
            let item = JobRoute(jobs: jobs)
            routes += [
                Route(
                    method: .POST, path: "/api/jobs", middleware: bodied + [idempotent(.jobs)],
                    handler: SubmitJobRoute(jobs: jobs)),
                Route(method: .GET, path: "/api/jobs/{id}", middleware: reading, handler: item),
                Route(method: .DELETE, path: "/api/jobs/{id}", middleware: reading, handler: item),
                Route(
                    method: .GET, path: "/api/jobs/{id}/events", middleware: reading,
                    handler: JobEventsRoute(jobs: jobs)),
            ]
        } else if store != nil {
            // No upstream key: a job could never run. Submitting says so, as /api/process does.
            routes.append(
                Route(
                    method: .POST, path: "/api/jobs", middleware: bodied,
                    handler: UnconfiguredJobsRoute(settings: configuration.jobs)))
        }
        self.jobServices = jobServices
        self.jobRunner = jobRunner
        if let store {
            // A caller's own rows: identified callers only, whatever AUTH_REQUIRED says, and
            // outside the limits (a caller over its quota can still see why).
            let own: [any Middleware] = [authentication(required: true)]
            let history = HistoryRoute(
                history: store.backend, cursors: HistoryCursorSeal(key: store.backend.historyCursorKey),
                idempotency: idempotency, faults: store.faults
            )
            let item = HistoryItemRoute(history: store.backend, idempotency: idempotency, faults: store.faults)
            routes += [
                Route(
                    method: .GET, path: "/api/usage", middleware: own,
                    handler: UsageRoute(
                        usage: store.backend, plans: configuration.plans, faults: store.faults, clock: clock
                    )),
                Route(method: .GET, path: "/api/history", middleware: own, handler: history),
                Route(method: .DELETE, path: "/api/history", middleware: own, handler: history),
                Route(method: .GET, path: "/api/history/{id}", middleware: own, handler: item),
                Route(method: .DELETE, path: "/api/history/{id}", middleware: own, handler: item),
            ]
        }
        var androidRevocations: AndroidRevocationSource?
        var appAttestRisk: AppAttestRiskChecker?
        if let settings = configuration.appAttest, let store, let sessions = store.devices {
            if let risk = settings.risk, let key = try? PrivateKey(pem: risk.privateKeyPEM) {
                appAttestRisk = AppAttestRiskChecker(
                    settings: risk, key: key, repository: store.backend,
                    extraRoot: settings.extraRoot.flatMap { try? X509Certificate(pem: $0.pem) }, registry: registry,
                    logger: logger, clock: clock)
            }
            if let android = settings.android {
                androidRevocations = AndroidRevocationSource(
                    file: android.revocationFile, url: android.revocationURL,
                    refreshInterval: android.revocationRefresh,
                    registry: registry, logger: logger, wallClock: { clock().secondsSinceEpoch })
            }
            routes += Self.attestRoutes(
                settings: settings, store: store, sessions: sessions, limiter: limiter, redis: redis,
                registry: registry, logger: logger, clock: clock,
                clients: configuration.clientAddressKey, revocations: androidRevocations, risk: appAttestRisk
            )
        }
        self.androidRevocations = androidRevocations
        self.appAttestRisk = appAttestRisk
        if let adminToken = configuration.adminToken {
            let access = AdminAccess(
                token: adminToken, lockout: AdminLockout(failures: configuration.adminFailuresPerMinute),
                clients: configuration.clientAddressKey, clock: clock)
            routes += Self.adminRoutes(
                api: AdminAPI(
                    store: store?.backend, faults: store?.faults, pool: pool, plans: configuration.plans,
                    language: configuration.errorLanguage, clock: clock),
                access: access, language: configuration.errorLanguage)
        }
        routeList = routes.map { route in
            (route.method, route.path, route.middleware.contains { $0 is IdempotencyMiddleware })
        }
        let finisher = RequestFinisher(
            metrics: metrics, metricsEnabled: configuration.metricsEnabled, logger: logger,
            clock: clock,
            observers: observers, ledger: store?.recorder, idempotency: idempotencyMetrics
        )
        pipeline = Pipeline(
            routes: routes, groups: [.api, .openAI], finisher: finisher, logger: logger,
            errorLanguage: configuration.errorLanguage,
            strictLedger: store?.recorder.strict == true ? store?.recorder : nil
        )
    }

    /// The operator's console (`ADMIN_TOKEN`): its page, open, and its API behind the admin
    /// token, outside every caller's limits (no rate limiter, no ledger row).
    private static func adminRoutes(api: AdminAPI, access: AdminAccess, language: ErrorLanguage?) -> [Route] {
        let locked: [any Middleware] = [access]
        func call(_ method: HTTPMethod, _ path: String, _ endpoint: AdminAPI.Endpoint) -> Route {
            Route(
                method: method, path: "/api/admin/" + path, middleware: locked,
                handler: AdminRoute(api: api, endpoint: endpoint))
        }
        func asset(_ path: String, _ asset: ConsolePageRoute.Asset) -> Route {
            Route(method: .GET, path: path, middleware: [], handler: ConsolePageRoute(asset: asset, language: language))
        }
        return [
            asset("/admin", .page), asset("/admin/console.css", .style), asset("/admin/console.js", .script),
            call(.GET, "summary", .summary), call(.GET, "series", .series), call(.GET, "callers", .callers),
            call(.GET, "upstreams", .upstreams), call(.GET, "failures", .failures), call(.GET, "jobs", .jobs),
            call(.GET, "tokens", .tokens), call(.POST, "tokens", .tokens), call(.DELETE, "tokens/{id}", .token),
            call(.GET, "plans", .plans),
        ]
    }

    /// The device routes (App Attest's, Android's, the shared challenge), each limited per
    /// client address (`APP_ATTEST_REQUESTS_PER_MINUTE`) whatever `RATE_LIMITS` says: they
    /// spend CPU before anyone is known.
    private static func attestRoutes(
        settings: AppAttestSettings, store: GatewayStore, sessions: DeviceSessions, limiter: (any RateLimiter)?,
        redis: RedisClient?,
        registry: MetricsRegistry, logger: Logger, clock: @escaping @Sendable () -> Instant,
        clients: ClientAddressKey, revocations: AndroidRevocationSource?, risk: AppAttestRiskChecker?
    ) -> [Route] {
        let challenges: any AttestChallenges =
            redis.map { RedisAttestChallenges(client: $0) } ?? StoreAttestChallenges(repository: store.backend)
        let plan = Plan(
            name: "attest", requestsPerMinute: settings.requestsPerMinute, concurrentRequests: nil, tokensPerDay: nil)
        let limits = RateLimitMiddleware(
            limiter: limiter ?? InMemoryRateLimiter(), plans: PlanCatalog(), clients: clients,
            maxTokens: 0, cost: .none,
            perAddress: plan, clock: clock
        )
        let middleware: [any Middleware] = [limits, ContentEncodingMiddleware()]
        let trust: X509TrustStore
        do {
            trust = try AppAttestVerifier.trustStore(extraRootPEM: settings.extraRoot?.pem)
        } catch {
            // The configuration read both certificates already; this cannot happen with a build that passed its tests.
            logger.error("app_attest_unavailable", [("reason", .string("\(error)"))])
            return []
        }
        let service = AppAttestService(
            settings: settings,
            verifier: AppAttestVerifier(appIDs: settings.appIDs, environments: settings.environment, trust: trust),
            repository: store.backend, challenges: challenges,
            sessions: sessions, faults: store.faults, registry: registry, clock: clock, risk: risk
        )
        var routes = [
            Route(
                method: .POST, path: "/api/attest/challenge", middleware: middleware,
                handler: AttestChallengeRoute(service: service))
        ]
        if !settings.appIDs.isEmpty {
            routes += [
                Route(
                    method: .POST, path: "/api/attest/register", middleware: middleware,
                    handler: AttestRegisterRoute(service: service, clients: clients)),
                Route(
                    method: .POST, path: "/api/attest/session", middleware: middleware,
                    handler: AttestSessionRoute(service: service)),
            ]
        }
        if let android = settings.android, let revocations {
            let extraRoots = android.extraRoot.flatMap { try? X509Certificate(pem: $0.pem) }.map { [$0] } ?? []
            let androidService = AndroidAttestService(
                settings: settings,
                verifier: AndroidAttestationVerifier(policy: android.policy, extraRoots: extraRoots),
                revocations: revocations, repository: store.backend, challenges: challenges, sessions: sessions,
                faults: store.faults, registry: registry, clock: clock)
            routes += [
                Route(
                    method: .POST, path: "/api/attest/android/register", middleware: middleware,
                    handler: AndroidRegisterRoute(service: androidService, clients: clients)),
                Route(
                    method: .POST, path: "/api/attest/android/session", middleware: middleware,
                    handler: AndroidSessionRoute(service: androidService)),
            ]
        }
        return routes
    }

    /// The Lua every Redis connection loads at connect: the shared limiter's and cache's.
    static let redisScripts: [RedisScript] = RedisRateLimiter.scripts + SharedResponseCache.scripts

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
