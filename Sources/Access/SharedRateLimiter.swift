package import EventLoop
package import Redis
import Synchronization
package import Telemetry

/// The limiter of a gateway with `REDIS_URL`: decisions in Redis (``RedisRateLimiter``),
/// shared by every instance, and what happens when Redis cannot answer
/// (`REDIS_FAILURE_MODE`):
///
/// - `local`: the request is decided by this instance's ``InMemoryRateLimiter``, at once
///   when no connection is up, after at most one timeout otherwise. One line is logged when
///   Redis goes away (`redis_unavailable`) and one when it answers again (`redis_available`);
///   every decision after that is Redis's again. A lease is finished by the limiter that took it.
/// - `closed`: the call throws, and the request is answered `503 upstream_busy`.
///
/// Counted in `textgateway_rate_limit_decisions_total{backend}` and
/// `textgateway_redis_errors_total{kind}`.
package final class SharedRateLimiter: RateLimiter {
    let shared: RedisRateLimiter
    let local: InMemoryRateLimiter
    private let client: RedisClient
    private let mode: RedisFailureMode
    private let logger: Logger
    private let available = Atomic<Bool>(true)
    private let redisDecisions: Counter
    private let localDecisions: Counter
    private let errors: CounterFamily

    package init(
        client: RedisClient, shared: RedisRateLimiter, local: InMemoryRateLimiter, mode: RedisFailureMode,
        registry: MetricsRegistry, logger: Logger
    ) {
        self.client = client
        self.shared = shared
        self.local = local
        self.mode = mode
        self.logger = logger
        let decisions = registry.counter(
            "textgateway_rate_limit_decisions_total",
            help: "Rate-limit decisions, by the limiter that made them (redis, or local while Redis is away).",
            labels: ["backend"]
        )
        redisDecisions = decisions.labels("redis")
        localDecisions = decisions.labels("local")
        errors = Self.errors(registry)
    }

    /// `textgateway_redis_errors_total{kind}`: Redis calls that failed, by the error's kind.
    static func errors(_ registry: MetricsRegistry) -> CounterFamily {
        registry.counter("textgateway_redis_errors_total", help: "Redis calls that failed, by kind.", labels: ["kind"])
    }

    /// `textgateway_redis_up`: 1 while every loop's connection to Redis is up. A request is
    /// decided on its own loop's connection, so with one of them down some decisions are
    /// this instance's own: that is not "up".
    package static func registerUpGauge(_ registry: MetricsRegistry, client: RedisClient) {
        registry.gaugeFunction(
            "textgateway_redis_up", help: "1 while every one of this instance's connections to Redis is up, else 0."
        ) {
            client.isUp ? 1 : 0
        }
    }

    /// Renews this instance's leases in Redis a few times per time to live, so one failed
    /// renewal loses none.
    package func renewalService() -> any Service {
        let (shared, client) = (self.shared, self.client)
        return LeaseService(
            shared: shared, client: client,
            renewal: PeriodicService(
                name: "rate_limit_leases", interval: shared.leaseTimeToLive / 3, immediately: false
            ) { [self] in
                guard shared.liveLeaseCount > 0, client.connectedCount > 0 else { return }
                do throws(RedisError) {
                    try await shared.renewLeases()
                } catch {
                    _ = try? failed(error)
                }
            })
    }

    package func acquire(key: String, plan: Plan, now: Instant) async throws -> RateDecision {
        try await acquire(key: key, plan: plan, reservingTokens: 0, now: now)
    }

    package func acquire(key: String, plan: Plan, reservingTokens: Int, now: Instant) async throws -> RateDecision {
        guard !plan.isUnlimited else { return .allowed(RateLease(key: key, id: 0), nil) }
        if client.connectedCount > 0 {
            do {
                let decision = try await shared.acquire(
                    key: key, plan: plan, reservingTokens: reservingTokens, now: now)
                answered()
                redisDecisions.increment()
                return decision
            } catch let error as RedisError {
                try failed(error)
            }
        } else {
            try unreachable(RedisError(.connectionFailed, "not connected"))
        }
        localDecisions.increment()
        return await local.acquire(key: key, plan: plan, reservingTokens: reservingTokens, now: now)
    }

    /// In Redis while it answers, so every instance counts it; else this instance's own count.
    package func charge(key: String, plan: Plan, tokens: Int, now: Instant) async throws {
        if client.connectedCount > 0 {
            do {
                try await shared.charge(key: key, plan: plan, tokens: tokens, now: now)
                answered()
                return
            } catch let error as RedisError {
                errors.labels(Self.kind(error.code)).increment()
            }
        }
        await local.record(tokens: tokens, key: key, plan: plan, now: now)
    }

    package func finish(lease: RateLease, plan: Plan, tokens: Int, now: Instant) async throws -> RateStatus? {
        guard lease.origin == .shared else {
            return await local.finish(lease: lease, plan: plan, tokens: tokens, now: now)
        }
        // Off the request's path: the answer reports the status its acquire gave (the window
        // and the day as they stood, its own reservation counted).
        let errors = self.errors
        shared.settle(lease: lease, plan: plan, tokens: tokens) { error in
            errors.labels(Self.kind(error.code)).increment()
        }
        return nil
    }

    /// Counts a failed call and, in `closed` mode, throws it on; a call the request's own
    /// cancellation ended says nothing about Redis.
    private func failed(_ error: RedisError) throws {
        if error.code == .cancelled { throw CancellationError() }
        errors.labels(Self.kind(error.code)).increment()
        switch error.code {
        case .server, .protocol: if mode == .closed { throw error }
        default: try unreachable(error)
        }
    }

    /// Redis cannot be reached: said once, and thrown in `closed` mode.
    private func unreachable(_ error: RedisError) throws {
        if available.exchange(false, ordering: .relaxed) {
            logger.warning(
                "redis_unavailable",
                [
                    ("reason", .string(Self.kind(error.code))), ("failure_mode", .string(mode.rawValue)),
                    (
                        "effect",
                        .string(
                            mode == .local
                                ? "rate limits are this instance's own until Redis is back"
                                : "requests are refused with 503 until Redis is back")
                    ),
                ])
        }
        if mode == .closed { throw error }
    }

    /// Redis answered: said once after it was away.
    private func answered() {
        guard !available.load(ordering: .relaxed), !available.exchange(true, ordering: .relaxed) else { return }
        logger.info("redis_available", [("failure_mode", .string(mode.rawValue))])
    }

    static func kind(_ code: RedisError.Code) -> String {
        switch code {
        case .connectionFailed: "connection_failed"
        case .connectionClosed: "connection_closed"
        case .timeout: "timeout"
        case .server: "server"
        case .protocol: "protocol"
        case .cancelled: "cancelled"
        case .invalidConfiguration: "invalid_configuration"
        case .shutdown: "shutdown"
        }
    }
}

/// The lease renewal, and at the stop (after the HTTP server's, before the Redis client's)
/// the last requests' settlements sent before Redis goes: otherwise their leases would hold
/// their slots until they expire.
private struct LeaseService: Service {
    let shared: RedisRateLimiter
    let client: RedisClient
    let renewal: any Service

    var name: String { renewal.name }

    func start() async throws { try await renewal.start() }

    func stop(deadline: MonotonicInstant) async {
        await renewal.stop(deadline: deadline)
        // A second at most, and only while Redis answers: with Redis away the leases expire
        // by themselves, and a stop must not wait for them.
        let end = min(deadline, MonotonicInstant.now().advanced(by: .seconds(1)))
        while shared.pendingSettlements > 0 && client.connectedCount > 0 && MonotonicInstant.now() < end {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}
