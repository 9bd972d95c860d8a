import EventLoop
import Synchronization
package import Telemetry

/// Store errors while the gateway runs: each one counted in
/// `textgateway_store_errors_total{operation}`, and logged at most once a minute per
/// operation (with how many were not logged), so a failing disk cannot flood the log.
package final class StoreFaults: Sendable {
    package enum Operation: String, Sendable, CaseIterable {
        case ledger
        case read
        case delete
        case tokens
        case purge
        case checkpoint
        case jobs
        case devices
        case idempotency
    }

    private let counters: [Operation: Counter]
    private let logger: Logger
    private let interval: Duration
    /// When each kind of line was last logged, and how many were held back since.
    private let lastLogged = Mutex<[String: (at: MonotonicInstant, suppressed: Int)]>([:])

    package init(registry: MetricsRegistry, logger: Logger, interval: Duration = .seconds(60)) {
        let family = registry.counter(
            "textgateway_store_errors_total", help: "Store operations that failed, by operation.", labels: ["operation"]
        )
        var counters: [Operation: Counter] = [:]
        for operation in Operation.allCases { counters[operation] = family.labels(operation.rawValue) }
        self.counters = counters
        self.logger = logger
        self.interval = interval
    }

    package func record(_ error: StoreError, operation: Operation) {
        counters[operation]?.increment()
        guard let suppressed = mayLog(operation.rawValue) else { return }
        logger.error(
            "store_error",
            [
                ("operation", .string(operation.rawValue)), ("reason", .string(error.description)),
                ("not_logged_since_last", .int(suppressed)),
            ])
    }

    /// Ledger rows the writer gave up on (counted by the writer itself).
    package func dropped(rows: Int, reason: LedgerWriter.DropReason) {
        guard let suppressed = mayLog("dropped." + reason.rawValue) else { return }
        logger.error(
            "ledger_rows_dropped",
            [
                ("rows", .int(rows)), ("reason", .string(reason.rawValue)), ("not_logged_since_last", .int(suppressed)),
            ])
    }

    /// Nil when a line of this kind was logged less than an interval ago (it is then held
    /// back and counted); else how many were held back since the last one.
    private func mayLog(_ kind: String) -> Int? {
        let now = MonotonicInstant.now()
        return lastLogged.withLock { logged -> Int? in
            if let last = logged[kind], now < last.at.advanced(by: interval) {
                logged[kind] = (last.at, last.suppressed + 1)
                return nil
            }
            let suppressed = logged[kind]?.suppressed ?? 0
            logged[kind] = (now, 0)
            return suppressed
        }
    }
}
