import Store
import Synchronization

/// The idempotency records of a gateway without a store (`DATABASE_URL=off`): one instance's
/// memory, with the same rules as the store's table, bounded by ``capacity`` keys and
/// ``byteBudget`` bytes of kept answers: beyond either, the kept answers nearest their expiry
/// go first (a retry of theirs is answered afresh); a new key when every one held is still
/// running is refused (`503`) rather than run without a record.
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

    private struct Rows {
        var byKey: [Key: Row] = [:]
        var bytes = 0
    }

    let capacity: Int
    let byteBudget: Int
    private let state = Mutex(Rows())

    init(capacity: Int = 100_000, byteBudget: Int = 256 << 20) {
        self.capacity = capacity
        self.byteBudget = byteBudget
    }

    private static func size(_ answer: StoredAnswer?) -> Int {
        guard let answer else { return 0 }
        return answer.body.count + (answer.text?.utf8.count ?? 0) + answer.contentType.utf8.count + 64
    }

    func beginIdempotent(_ start: IdempotencyStart, nowMilliseconds now: Int64) async throws(StoreError) -> IdempotencyBegin {
        try state.withLock { (state: inout Rows) throws(StoreError) -> IdempotencyBegin in
            let key = Key(scope: start.scope, key: start.key)
            if let row = state.byKey[key] {
                let live = row.answer != nil ? (row.expiresAt ?? 0) > now : row.leaseUntil > now
                if live {
                    guard row.fingerprint == start.fingerprint else { return .mismatch }
                    if let answer = row.answer { return .completed(requestID: row.requestID, answer: answer) }
                    return .inProgress(requestID: row.requestID, owner: row.owner)
                }
                state.bytes -= Self.size(row.answer)
            } else if state.byKey.count >= capacity {
                Self.shed(&state, keys: capacity - max(1, capacity / 10), now: now)
                guard state.byKey.count < capacity else {
                    throw StoreError(.full, message: "idempotency records: \(capacity) keys held, all running")
                }
            }
            state.byKey[key] = Row(
                fingerprint: start.fingerprint, requestID: start.requestID, owner: start.owner, leaseUntil: start.leaseUntilMilliseconds,
                expiresAt: nil, answer: nil
            )
            return .started
        }
    }

    func completeIdempotent(scope: String, key: String, owner: String, answer: StoredAnswer, expiresAtMilliseconds: Int64) async throws(StoreError) -> Bool {
        state.withLock { state in
            let key = Key(scope: scope, key: key)
            guard var row = state.byKey[key], row.answer == nil, row.owner == owner else { return false }
            row.answer = answer
            row.expiresAt = expiresAtMilliseconds
            state.byKey[key] = row
            state.bytes += Self.size(answer)
            if state.bytes > byteBudget { Self.shed(&state, bytes: byteBudget * 3 / 4) }
            return true
        }
    }

    /// Drops dead rows, then the kept answers nearest their expiry, until at most `keys` rows
    /// and `bytes` bytes of answers remain (or only running rows do). Sorting is O(n log n),
    /// and then a tenth of the room is free: it runs once per many new keys.
    private static func shed(_ state: inout Rows, keys: Int = .max, bytes: Int = .max, now: Int64 = .min) {
        state.byKey = state.byKey.filter { _, row in row.answer != nil ? (row.expiresAt ?? 0) > now : row.leaseUntil > now }
        state.bytes = state.byKey.values.reduce(0) { $0 + size($1.answer) }
        guard state.byKey.count > keys || state.bytes > bytes else { return }
        let kept = state.byKey.filter { $0.value.answer != nil }.sorted { ($0.value.expiresAt ?? 0) < ($1.value.expiresAt ?? 0) }
        for (key, row) in kept where state.byKey.count > keys || state.bytes > bytes {
            state.byKey[key] = nil
            state.bytes -= size(row.answer)
        }
    }

    func releaseIdempotent(scope: String, key: String, owner: String) async throws(StoreError) {
        state.withLock { state in
            let key = Key(scope: scope, key: key)
            guard let row = state.byKey[key], row.answer == nil, row.owner == owner else { return }
            state.byKey[key] = nil
        }
    }

    func noteIdempotentReplay(scope: String, key: String) async throws(StoreError) {
        state.withLock { state in
            let key = Key(scope: scope, key: key)
            guard state.byKey[key]?.answer != nil else { return }
            state.byKey[key]?.answer?.replays += 1
        }
    }

    func purgeExpiredIdempotent(nowMilliseconds now: Int64) async throws(StoreError) -> Int {
        state.withLock { state in
            let before = state.byKey.count
            state.byKey = state.byKey.filter { _, row in row.answer != nil ? (row.expiresAt ?? 0) > now : row.leaseUntil > now }
            state.bytes = state.byKey.values.reduce(0) { $0 + Self.size($1.answer) }
            return before - state.byKey.count
        }
    }
}
