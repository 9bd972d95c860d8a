import Synchronization
import Telemetry

/// Wrong admin tokens counted per client address: after `failures` of them within a minute
/// of the first, every admin call from that address is refused for a minute, the right token
/// included, so a guess made during the lockout tells nothing. Each instance counts on its own:
/// with the admin token as strong as its start requires, the lockout only slows a guesser down.
///
/// Memory is bounded: at most ``capacity`` addresses are tracked. Past it the idle ones go
/// (no lockout, no failure within the minute), and if none is, the count that started
/// earliest (a lockout only when every address is locked out).
final class AdminLockout: Sendable {
    private struct Record {
        /// When the minute this address's failures are counted in began.
        var windowStart: Double
        var failures: Int
        /// Until when the address is refused, when it is.
        var lockedUntil: Double?
    }

    /// How long failures are counted, and how long a lockout lasts.
    static let period: Double = 60
    /// The most addresses tracked by default.
    static let defaultCapacity = 10_000

    /// Wrong tokens an address may send within a minute before it is locked out.
    let failures: Int
    let capacity: Int
    private let records = Mutex<[String: Record]>([:])

    init(failures: Int, capacity: Int = AdminLockout.defaultCapacity) {
        self.failures = max(1, failures)
        self.capacity = max(1, capacity)
    }

    /// Whole seconds until `address` may call again, at least 1; nil when it is not locked out.
    func retryAfter(_ address: String, now: Instant) -> Int? {
        let time = now.secondsSinceEpoch
        return records.withLock { records in
            guard let until = records[address]?.lockedUntil else { return nil }
            guard until > time else {
                records[address] = nil
                return nil
            }
            return max(1, Int((until - time).rounded(.up)))
        }
    }

    /// Counts a wrong token from `address`; the one that reaches the limit starts the lockout.
    func failed(_ address: String, now: Instant) {
        let time = now.secondsSinceEpoch
        records.withLock { records in
            var record = records[address] ?? Record(windowStart: time, failures: 0)
            // Locked already (by a call that ended first): nothing more to count.
            if let until = record.lockedUntil, until > time { return }
            // A clock stepped back restarts the count rather than stretching it.
            if time - record.windowStart >= Self.period || time < record.windowStart || record.lockedUntil != nil {
                record = Record(windowStart: time, failures: 0)
            }
            record.failures += 1
            if record.failures >= failures {
                record.lockedUntil = time + Self.period
            }
            if records[address] == nil, records.count >= capacity { makeRoom(&records, now: time) }
            records[address] = record
        }
    }

    /// The right token from `address`: its count starts again.
    func succeeded(_ address: String) {
        records.withLock { records in
            if records[address]?.lockedUntil == nil { records[address] = nil }
        }
    }

    /// How many addresses are tracked now.
    var count: Int { records.withLock { $0.count } }

    private func makeRoom(_ records: inout [String: Record], now: Double) {
        records = records.filter { _, record in
            if let until = record.lockedUntil { return until > now }
            return now - record.windowStart < Self.period
        }
        guard records.count >= capacity else { return }
        // A lockout is kept over a count that has not reached one, while there is such a count.
        let counting = records.filter { $0.value.lockedUntil == nil }
        let oldest = (counting.isEmpty ? records : counting).min { $0.value.windowStart < $1.value.windowStart }
        if let oldest { records[oldest.key] = nil }
    }
}
