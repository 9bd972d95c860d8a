import Access
import EventLoop
import Jobs
import Store
import Telemetry

/// Jobs (`/api/jobs`): long texts answered in pieces by this instance's job runner, which
/// with its statistics and retention pollers are the feature's services (after the upstream
/// client, so that a stop aborts the jobs' calls and gives their leases back while it runs).
/// A gateway with a store and no upstream key only says that a job could never run.
struct JobsFeature: GatewayFeature {
    private let parts: GatewayParts
    private let admission: CallerFront
    private let idempotency: IdempotencyFeature
    /// This instance's job runner, when there is a store and an upstream.
    private let runner: JobRunner?
    let services: [any Service]

    init(
        _ parts: GatewayParts, admission: CallerFront, idempotency: IdempotencyFeature, limiter: (any RateLimiter)?,
        budgets: BudgetMiddleware? = nil, tracer: RequestTracer? = nil
    ) {
        self.parts = parts
        self.admission = admission
        self.idempotency = idempotency
        guard let store = parts.store, let pool = parts.pool else {
            runner = nil
            services = []
            return
        }
        let configuration = parts.configuration
        let logger = parts.logger
        let clock = parts.clock
        let jobMetrics = JobMetrics(registry: parts.registry)
        let events = JobEvents()
        let plans = configuration.plans
        let runner = JobRunner(
            JobRunner.Dependencies(
                store: store.backend,
                answering: TaskAnswerer(
                    pool: pool, bodies: ProcessBodies(configuration: configuration),
                    maxTokens: configuration.maxTokens, logger: logger, recorder: store.recorder,
                    budgets: budgets.map { JobBudgets(policy: $0, logger: logger) }, prices: configuration.prices,
                    tracer: tracer, clock: clock),
                settings: configuration.jobs, metrics: jobMetrics, events: events, faults: store.faults,
                logger: logger, clock: clock,
                charge: { [limiter] job, tokens in
                    guard let limiter, tokens > 0 else { return }
                    let plan = plans.plan(
                        for: job.ownerID.map { Caller(userID: $0, plan: job.plan ?? PlanCatalog.defaultName) })
                    try? await limiter.charge(key: job.callerKey, plan: plan, tokens: tokens, now: clock())
                }
            ))
        self.runner = runner
        let backend = store.backend
        let faults = store.faults
        let retention = configuration.jobs.retention
        services = [
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
    }

    var routes: [Route] {
        let configuration = parts.configuration
        guard let runner, let pool = parts.pool else {
            guard parts.store != nil else { return [] }
            // No upstream key: a job could never run. Submitting says so, as /api/process does.
            return [
                Route(
                    method: .POST, path: "/api/jobs", middleware: admission.answer,
                    handler: UnconfiguredJobsRoute(settings: configuration.jobs))
            ]
        }
        let jobs = JobRoutes(
            runner: runner, pool: pool, streams: parts.streams, heartbeat: configuration.heartbeatInterval,
            clients: configuration.clientAddressKey)
        // Submitting is a request like /api/process (limits included); reading and
        // cancelling a job is outside the limits, as reading history is.
        let reading: [any Middleware] = [admission.caller(required: configuration.requiresTokens)]
        let item = JobRoute(jobs: jobs)
        return [
            Route(
                method: .POST, path: "/api/jobs", middleware: admission.jobSubmission + [idempotency.middleware(.jobs)],
                handler: SubmitJobRoute(jobs: jobs)),
            Route(method: .GET, path: "/api/jobs/{id}", middleware: reading, handler: item),
            Route(method: .DELETE, path: "/api/jobs/{id}", middleware: reading, handler: item),
            Route(
                method: .GET, path: "/api/jobs/{id}/events", middleware: reading,
                handler: JobEventsRoute(jobs: jobs)),
        ]
    }
}
