import Store
import Synchronization

/// The idempotency records of a gateway without a store (`DATABASE_URL=off`): one instance's
/// memory, with the same rules as the store's table, bounded by ``capacity`` keys and
/// ``byteBudget`` bytes of kept answers: beyond either, the oldest kept answers go first (a
/// retry of theirs is answered afresh); a new key when every one held is still running is
/// refused (`503`) rather than run without a record.
///
/// Kept answers are also queued in the order they were kept, which with one time to live is
/// the order they expire in: making room pops the queue's head, never sorts.
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
        /// Kept answers, oldest first from `head`: an entry whose row has gone or changed
        /// since is skipped.
        var kept: [(key: Key, expiresAt: Int64)] = []
        var head = 0

        /// Drops the oldest kept answer still held; false when none is left.
        mutating func dropOldest() -> Bool {
            while head < kept.count {
                let (key, expiresAt) = kept[head]
                head += 1
                if let row = byKey[key], row.answer != nil, row.expiresAt == expiresAt {
                    byKey[key] = nil
                    bytes -= MemoryIdempotencyRecords.size(row.answer)
                    compact()
                    return true
                }
            }
            compact()
            return false
        }

        /// Forgets the queue's popped and stale entries once they are most of it.
        mutating func compact(force: Bool = false) {
            guard force || (head > 1024 && head * 2 > kept.count) else { return }
            let rows = byKey
            kept = kept[head...].filter { entry in
                rows[entry.key].map { $0.answer != nil && $0.expiresAt == entry.expiresAt } ?? false
            }
            head = 0
        }
    }

    let capacity: Int
    let byteBudget: Int
    private let state = Mutex(Rows())

    init(capacity: Int = 100_000, byteBudget: Int = 256 << 20) {
        self.capacity = capacity
        self.byteBudget = byteBudget
    }

    fileprivate static func size(_ answer: StoredAnswer?) -> Int {
        guard let answer else { return 0 }
        return answer.body.count + (answer.text?.utf8.count ?? 0) + answer.contentType.utf8.count + 64
    }

    private static func live(_ row: Row, at now: Int64) -> Bool {
        row.answer != nil ? (row.expiresAt ?? 0) > now : row.leaseUntil > now
    }

    func beginIdempotent(_ start: IdempotencyStart, nowMilliseconds now: Int64) async throws(StoreError)
        -> IdempotencyBegin
    {
        try state.withLock { (state: inout Rows) throws(StoreError) -> IdempotencyBegin in
            let key = Key(scope: start.scope, key: start.key)
            if let row = state.byKey[key] {
                if Self.live(row, at: now) {
                    guard row.fingerprint == start.fingerprint else { return .mismatch }
                    if let answer = row.answer { return .completed(requestID: row.requestID, answer: answer) }
                    return .inProgress(requestID: row.requestID, owner: row.owner)
                }
                state.bytes -= Self.size(row.answer)
            } else {
                while state.byKey.count >= capacity, state.dropOldest() {}
                guard state.byKey.count < capacity else {
                    throw StoreError(.full, message: "idempotency records: \(capacity) keys held, all running")
                }
            }
            state.byKey[key] = Row(
                fingerprint: start.fingerprint, requestID: start.requestID, owner: start.owner,
                leaseUntil: start.leaseUntilMilliseconds,
                expiresAt: nil, answer: nil
            )
            return .started
        }
    }

    func completeIdempotent(
        scope: String, key: String, owner: String, answer: StoredAnswer, expiresAtMilliseconds: Int64
    ) async throws(StoreError) -> Bool {
        state.withLock { state in
            let key = Key(scope: scope, key: key)
            guard var row = state.byKey[key], row.answer == nil, row.owner == owner else { return false }
            row.answer = answer
            row.expiresAt = expiresAtMilliseconds
            state.byKey[key] = row
            state.bytes += Self.size(answer)
            state.kept.append((key, expiresAtMilliseconds))
            while state.bytes > byteBudget, state.dropOldest() {}
            return true
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
            state.byKey = state.byKey.filter { Self.live($0.value, at: now) }
            state.bytes = state.byKey.values.reduce(0) { $0 + Self.size($1.answer) }
            state.compact(force: true)
            return before - state.byKey.count
        }
    }

    func deleteKeptIdempotent(scopes: [String], requestID: String?) async throws(StoreError) -> Int {
        let scopes = Set(scopes)
        return state.withLock { state in
            let doomed = state.byKey.filter { key, row in
                row.answer != nil && scopes.contains(key.scope) && (requestID == nil || row.requestID == requestID)
            }
            for (key, row) in doomed {
                state.byKey[key] = nil
                state.bytes -= Self.size(row.answer)
            }
            // Their entries in the queue of kept answers are stale now, skipped when reached.
            return doomed.count
        }
    }
}
