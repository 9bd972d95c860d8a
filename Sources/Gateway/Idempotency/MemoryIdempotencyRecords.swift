import Store
import Synchronization

/// The idempotency records of a gateway without a store (`DATABASE_URL=off`): one instance's
/// memory, with the same rules as the store's table, bounded by the purge and by
/// ``capacity`` (a new key beyond it is refused, `503`, rather than grow memory or run
/// without a record).
final class MemoryIdempotencyRecords: IdempotencyRepository {
    private struct Row {
        var fingerprint: [UInt8]
        var requestID: String
        var owner: String
        var leaseUntil: Int64
        var expiresAt: Int64?
        var answer: StoredAnswer?
    }

    private struct Key: Hashable {
        let scope: String
        let key: String
    }

    let capacity: Int
    private let rows = Mutex<[Key: Row]>([:])

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    func beginIdempotent(_ start: IdempotencyStart, nowMilliseconds now: Int64) async throws(StoreError) -> IdempotencyBegin {
        try rows.withLock { (rows: inout [Key: Row]) throws(StoreError) -> IdempotencyBegin in
            let key = Key(scope: start.scope, key: start.key)
            if let row = rows[key] {
                let live = row.answer != nil ? (row.expiresAt ?? 0) > now : row.leaseUntil > now
                if live {
                    guard row.fingerprint == start.fingerprint else { return .mismatch }
                    if let answer = row.answer { return .completed(requestID: row.requestID, answer: answer) }
                    return .inProgress(requestID: row.requestID, owner: row.owner)
                }
            } else if rows.count >= capacity {
                throw StoreError(.full, message: "idempotency records: \(capacity) keys held")
            }
            rows[key] = Row(
                fingerprint: start.fingerprint, requestID: start.requestID, owner: start.owner, leaseUntil: start.leaseUntilMilliseconds,
                expiresAt: nil, answer: nil
            )
            return .started
        }
    }

    func completeIdempotent(scope: String, key: String, owner: String, answer: StoredAnswer, expiresAtMilliseconds: Int64) async throws(StoreError) -> Bool {
        rows.withLock { rows in
            let key = Key(scope: scope, key: key)
            guard var row = rows[key], row.answer == nil, row.owner == owner else { return false }
            row.answer = answer
            row.expiresAt = expiresAtMilliseconds
            rows[key] = row
            return true
        }
    }

    func releaseIdempotent(scope: String, key: String, owner: String) async throws(StoreError) {
        rows.withLock { rows in
            let key = Key(scope: scope, key: key)
            guard let row = rows[key], row.answer == nil, row.owner == owner else { return }
            rows[key] = nil
        }
    }

    func noteIdempotentReplay(scope: String, key: String) async throws(StoreError) {
        rows.withLock { rows in
            let key = Key(scope: scope, key: key)
            guard rows[key]?.answer != nil else { return }
            rows[key]?.answer?.replays += 1
        }
    }

    func purgeExpiredIdempotent(nowMilliseconds now: Int64) async throws(StoreError) -> Int {
        rows.withLock { rows in
            let before = rows.count
            rows = rows.filter { _, row in row.answer != nil ? (row.expiresAt ?? 0) > now : row.leaseUntil > now }
            return before - rows.count
        }
    }
}
