/// `POST /api/process`, the product's own route, with the response cache in front of its
/// upstream calls (`CACHE_*`: in this process, or shared in Redis).
struct ProcessFeature: GatewayFeature {
    private let parts: GatewayParts
    private let admission: CallerFront
    private let idempotency: IdempotencyFeature
    private let cache: (any AnswerCache)?

    init(_ parts: GatewayParts, admission: CallerFront, idempotency: IdempotencyFeature) {
        self.parts = parts
        self.admission = admission
        self.idempotency = idempotency
        let configuration = parts.configuration
        cache = configuration.cacheTimeToLive.map { timeToLive in
            let local = ResponseCache(
                timeToLive: timeToLive, capacity: configuration.cacheMaxEntries, clock: configuration.cacheClock)
            guard configuration.cacheBackend == .redis, let redis = parts.redis else { return local }
            return SharedResponseCache(
                redis: redis, local: local,
                lockTimeToLive: SharedResponseCache.lockTimeToLive(upstreamTimeout: configuration.upstreamTimeout),
                waitLimit: configuration.upstreamTimeout, registry: parts.registry
            )
        }
    }

    var routes: [Route] {
        [
            Route(
                method: .POST, path: "/api/process", middleware: admission.answer + [idempotency.middleware(.process)],
                handler: ProcessRoute(
                    pool: parts.pool, configuration: parts.configuration, cache: cache, metrics: parts.metrics,
                    streams: parts.streams, logger: parts.logger
                ))
        ]
    }
}
