import EventLoop
import Store
import Telemetry

/// `Idempotency-Key` (docs/api.md, "Retries"): the keys' service, kept in the store (on
/// SQLite, in this process's memory with a filter of the kept ones) or, without a store, in
/// memory; its purge and the filter's rebuild are its services, and its middleware goes last on
/// the routes that take a key.
struct IdempotencyFeature: GatewayFeature {
    private let configuration: GatewayConfiguration
    let service: IdempotencyService
    let metrics: IdempotencyMetrics
    let services: [any Service]

    init(_ parts: GatewayParts) {
        let configuration = parts.configuration
        let store = parts.store
        self.configuration = configuration
        // Without a store, the keys are this instance's own, in memory.
        let idempotencyRecords: any IdempotencyRepository = store?.backend ?? MemoryIdempotencyRecords()
        let idempotencyMetrics = IdempotencyMetrics(registry: parts.registry)
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
            metrics: idempotencyMetrics, faults: store?.faults, logger: parts.logger, clock: parts.clock
        )
        service = idempotency
        metrics = idempotencyMetrics
        // Every minute, whatever keeps the records: an answer kept for the retry window alone
        // is gone from the store within a minute of its expiry, not at the hourly retention.
        var services: [any Service] = [
            PeriodicService(
                name: "idempotency_purge", interval: configuration.idempotencyPurgeInterval, immediately: false
            ) {
                await idempotency.purge()
            }
        ]
        if store?.backend is SQLiteStore {
            services.append(
                PeriodicService(name: "idempotency_filter", interval: .seconds(3600), immediately: true) {
                    await idempotency.rebuildKeptKeys()
                })
        }
        self.services = services
    }

    /// The middleware of a route that takes `Idempotency-Key`, last in its chain: after the
    /// limits, so a retry still counts as a request.
    func middleware(_ route: IdempotencyMiddleware.Route) -> IdempotencyMiddleware {
        IdempotencyMiddleware(
            service: service, route: route,
            // A job's answer is its id; the others' are the answer's text.
            timeToLive: route == .jobs
                ? configuration.idempotencyTimeToLive
                : configuration.idempotencyAnswerTimeToLive,
            clients: configuration.clientAddressKey)
    }
}
