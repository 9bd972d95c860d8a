import Access
import EventLoop
import Store
import Telemetry

/// The store as the running gateway uses it: the backend (SQLite or Postgres), the one ledger writer,
/// the store's caller tokens, the faults counter, and the services that keep it (the
/// writer, the token watcher, retention), with the metrics they report.
final class GatewayStore: Sendable {
    typealias Backend = StoreBackend

    let backend: any Backend
    let writer: LedgerWriter
    let tokens: StoreTokens
    /// App Attest's device sessions, when `APP_ATTEST_APP_IDS` lets devices register.
    let devices: DeviceSessions?
    let faults: StoreFaults
    let recorder: LedgerRecorder
    /// Started after the loops and before the HTTP server, stopped in reverse: the server's
    /// drain hands its last rows to a writer that is still running.
    let services: [any Service]

    /// How often a running gateway looks for tokens made or revoked by the command line.
    static let tokenPollInterval: Duration = .seconds(1)
    static let retentionInterval: Duration = .seconds(3600)
    /// How often the write-ahead log is copied back into the database (the writer's commits never do it).
    static let checkpointInterval: Duration = .seconds(1)

    init(
        backend: any Backend, configuration: GatewayConfiguration, registry: MetricsRegistry, logger: Logger,
        clock: @escaping @Sendable () -> Instant,
        writerConfiguration: LedgerWriter.Configuration = LedgerWriter.Configuration()
    ) {
        self.backend = backend
        let faults = StoreFaults(registry: registry, logger: logger)
        self.faults = faults
        let batchRows = registry.histogram(
            "textgateway_ledger_batch_rows", help: "Rows per ledger commit.",
            buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
        ).labels()
        let commitSeconds = registry.histogram(
            "textgateway_ledger_commit_seconds", help: "Time one ledger commit took."
        ).labels()
        let writer = LedgerWriter(store: backend, configuration: writerConfiguration) { event in
            switch event {
            case .committed(let rows, let seconds):
                batchRows.observe(Double(rows))
                commitSeconds.observe(seconds)
            case .commitFailed(let error, _):
                faults.record(error, operation: .ledger)
            case .dropped(let rows, let reason):
                faults.dropped(rows: rows, reason: reason)
            }
        }
        self.writer = writer
        registry.gaugeFunction("textgateway_ledger_queue_depth", help: "Ledger rows waiting to be committed.") {
            Double(writer.queueDepth)
        }
        registry.counterFunction("textgateway_ledger_rows_committed_total", help: "Ledger rows committed to the store.")
        {
            Double(writer.statistics.committed)
        }
        registry.counterFunction(
            "textgateway_ledger_rows_dropped_total",
            help:
                "Ledger rows given up on (a full queue while the store failed, a row the store refused, or the stop's "
                + "deadline)."
        ) {
            Double(writer.statistics.dropped)
        }
        let tokens = StoreTokens(repository: backend)
        self.tokens = tokens
        registry.gaugeFunction("textgateway_store_tokens", help: "Caller tokens from the store in use now.") {
            Double(tokens.count)
        }
        recorder = LedgerRecorder(
            writer: writer, strict: configuration.ledgerDurability == .strict,
            storesResults: configuration.historyStoresResults, clock: clock, prices: configuration.prices)
        let devices = configuration.appAttest.map { DeviceSessions(repository: backend, plan: $0.plan) }
        self.devices = devices
        // Device revocations are polled with the tokens: a revoked device's sessions stop
        // on every instance within one poll.
        let watcher = PeriodicService(name: "store_token_watcher", interval: Self.tokenPollInterval, immediately: false)
        {
            do throws(StoreError) {
                try await tokens.refresh()
            } catch {
                faults.record(error, operation: .tokens)
            }
            guard let devices else { return }
            do throws(StoreError) {
                try await devices.refresh()
            } catch {
                faults.record(error, operation: .devices)
            }
        }
        let historyDays = Int64(configuration.historyRetentionDays)
        let usageDays = Int64(configuration.usageRetentionDays)
        let retention = PeriodicService(name: "store_retention", interval: Self.retentionInterval, immediately: true) {
            let now = clock()
            let nowMilliseconds = Int64(now.secondsSinceEpoch * 1000)
            do throws(StoreError) {
                let purged = try await backend.purge(
                    historyBeforeMilliseconds: nowMilliseconds - historyDays * 86_400_000,
                    usageBeforeDay: now.utcDay - usageDays + 1
                )
                let expired = try await backend.purgeExpiredChallengesAndSessions(nowMilliseconds: nowMilliseconds)
                // Idempotency records have their own purge, every minute (IdempotencyService).
                if purged.history > 0 || purged.usageDays > 0 || expired.challenges > 0 || expired.sessions > 0 {
                    logger.info(
                        "store_purged",
                        [
                            ("history_rows", .int(purged.history)), ("usage_days", .int(purged.usageDays)),
                            ("attest_challenges", .int(expired.challenges)),
                            ("device_sessions", .int(expired.sessions)),
                        ]
                    )
                }
            } catch {
                faults.record(error, operation: .purge)
            }
        }
        let checkpoints = PeriodicService(
            name: "store_checkpoint", interval: Self.checkpointInterval, immediately: false
        ) {
            do throws(StoreError) {
                _ = try await backend.checkpoint()
            } catch {
                faults.record(error, operation: .checkpoint)
            }
        }
        services = [writer, watcher, retention, checkpoints]
    }

    /// Loads the store's tokens before the first request (a failure stops the start).
    func prepare() async throws(StoreError) {
        try await tokens.refresh()
        try await devices?.refresh()
    }
}
