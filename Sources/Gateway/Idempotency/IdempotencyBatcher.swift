import EventLoop
import Store
import Synchronization
import Telemetry

/// Gathers the idempotency writes of requests running at once into one call of the records:
/// on SQLite one transaction, so a keyed request's begin and its kept answer each cost a
/// share of a commit rather than a commit. One batch is written at a time; writes that come
/// meanwhile wait for the next, so under load batches grow and commits stay few.
final class IdempotencyBatcher: Sendable {
    /// Told a write's result, on the task that wrote its batch: a continuation to resume, or
    /// work to do there (a write no request waits for).
    private typealias Waiter = @Sendable (Result<IdempotencyWritten, StoreError>) -> Void

    private struct State {
        var pending: [(write: IdempotencyWrite, waiter: Waiter)] = []
        var draining = false
    }

    /// The most writes in one transaction: a bound on how long one commit holds the writer.
    static let maximumBatch = 256

    private let records: any IdempotencyRepository
    private let clock: @Sendable () -> Instant
    private let state = Mutex(State())

    init(records: any IdempotencyRepository, clock: @escaping @Sendable () -> Instant) {
        self.records = records
        self.clock = clock
    }

    /// `write`'s result, once the batch it joined is committed.
    func write(_ write: IdempotencyWrite) async throws(StoreError) -> IdempotencyWritten {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<IdempotencyWritten, StoreError>, Never>) in
            submit(write) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Queues `write`; `then` runs with its result once its batch is committed (briefly: it
    /// runs on the task that writes the batches).
    func submit(_ write: IdempotencyWrite, then: @escaping @Sendable (Result<IdempotencyWritten, StoreError>) -> Void) {
        let drains = state.withLock { state -> Bool in
            state.pending.append((write, then))
            guard !state.draining else { return false }
            state.draining = true
            return true
        }
        // On this loop when there is one: no wake-up of another thread to start a batch.
        if drains { Task(executorPreference: EventLoop.current) { await self.drain() } }
    }

    private func drain() async {
        while true {
            let batch = state.withLock { state -> [(write: IdempotencyWrite, waiter: Waiter)] in
                guard !state.pending.isEmpty else {
                    state.draining = false
                    return []
                }
                let batch = Array(state.pending.prefix(Self.maximumBatch))
                state.pending.removeFirst(batch.count)
                return batch
            }
            guard !batch.isEmpty else { return }
            let now = Int64((clock().secondsSinceEpoch * 1000).rounded(.down))
            do throws(StoreError) {
                let results = try await records.applyIdempotent(batch.map(\.write), nowMilliseconds: now)
                for (index, item) in batch.enumerated() {
                    item.waiter(
                        index < results.count
                            ? .success(results[index])
                            : .failure(StoreError(.other, message: "idempotency batch: a write without its result")))
                }
            } catch {
                for item in batch { item.waiter(.failure(error)) }
            }
        }
    }
}
