import Access
import Crypto
import EventLoop
import Redis
import Telemetry

/// Devices that prove they are a genuine app (`APP_ATTEST_*`, `ANDROID_ATTEST_*`): the shared
/// challenge, App Attest's and Android's registration and session routes, each limited per
/// client address (`APP_ATTEST_REQUESTS_PER_MINUTE`) whatever `RATE_LIMITS` says, since they
/// spend CPU before anyone is known. Google's revocation list and Apple's risk metric are its
/// services: after the upstream client, whose stop then ends a refresh in flight, and before
/// the server, so the first registrations find the list read.
struct AttestationFeature: GatewayFeature {
    private let parts: GatewayParts
    private let limiter: (any RateLimiter)?
    /// Google's revocation list for Android attestations, when Android devices register.
    let androidRevocations: AndroidRevocationSource?
    /// Apple's risk metric for new iPhones, when `APP_ATTEST_RISK_*` is set.
    private let risk: AppAttestRiskChecker?

    init(_ parts: GatewayParts, limiter: (any RateLimiter)?) {
        self.parts = parts
        self.limiter = limiter
        guard let settings = parts.configuration.appAttest, let store = parts.store, store.devices != nil else {
            androidRevocations = nil
            risk = nil
            return
        }
        let clock = parts.clock
        if let risk = settings.risk, let key = try? PrivateKey(pem: risk.privateKeyPEM) {
            self.risk = AppAttestRiskChecker(
                settings: risk, key: key, repository: store.backend,
                extraRoot: settings.extraRoot.flatMap { try? X509Certificate(pem: $0.pem) }, registry: parts.registry,
                logger: parts.logger, clock: clock)
        } else {
            risk = nil
        }
        if let android = settings.android {
            androidRevocations = AndroidRevocationSource(
                file: android.revocationFile, url: android.revocationURL,
                refreshInterval: android.revocationRefresh,
                registry: parts.registry, logger: parts.logger, wallClock: { clock().secondsSinceEpoch })
        } else {
            androidRevocations = nil
        }
        if let client = parts.httpClient {
            androidRevocations?.attach(client: client)
            risk?.attach(client: client)
        }
    }

    var services: [any Service] {
        var services: [any Service] = []
        if let androidRevocations { services.append(androidRevocations) }
        if let risk { services.append(risk) }
        return services
    }

    var routes: [Route] {
        guard let settings = parts.configuration.appAttest, let store = parts.store, let sessions = store.devices
        else { return [] }
        return Self.routes(
            settings: settings, store: store, sessions: sessions, limiter: limiter, redis: parts.redis,
            registry: parts.registry, logger: parts.logger, clock: parts.clock,
            clients: parts.configuration.clientAddressKey, revocations: androidRevocations, risk: risk
        )
    }

    private static func routes(
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
}
