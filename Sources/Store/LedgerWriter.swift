package import EventLoop
import Synchronization

/// The one writer of the ledger: finished requests go into a bounded queue, and one task
/// commits them in batches (group commit), so no request ever waits
/// for the disk unless it asks to (``submitAndWait(_:)``, `LEDGER_DURABILITY=strict`).
///
/// - **Batches.** A batch is whatever is queued, up to ``Configuration/maximumBatch`` rows.
///   Unless a caller waits for its commit, the writer lets rows gather for
///   ``Configuration/batchInterval`` after the first one arrives: one transaction then
///   carries many rows, and a process killed outright loses at most that interval's rows.
///   A row someone waits for is committed at once, with whatever came meanwhile.
/// - **A full queue** holds its rows: a submitter waits for room while the store takes rows
///   (the answer was already sent; only the connection's next request waits). While the
///   store is failing, nothing would make room, so a row that finds the queue full is
///   dropped — counted in ``Statistics/dropped`` and reported, never silently.
/// - **Failures.** A batch that fails stays at the head of the queue and is retried after a
///   backoff (doubling up to ``Configuration/maximumRetryDelay``); a failure that would
///   repeat forever (a constraint) is retried row by row, and only the row that still fails
///   is dropped and counted.
/// - **Stop** commits everything queued, within the deadline; what is still queued then
///   (a store that keeps failing) is dropped, counted and reported.
package final class LedgerWriter: Service {
    package struct Configuration: Sendable {
        /// How long rows may gather before a batch is committed.
        package var batchInterval: Duration = .milliseconds(10)
        /// The most rows one transaction carries.
        package var maximumBatch = 500
        /// The most rows the queue holds.
        package var capacity = 100_000
        /// The first pause after a failed commit; each further failure doubles it.
        package var initialRetryDelay: Duration = .milliseconds(50)
        package var maximumRetryDelay: Duration = .seconds(5)

        package init() {}
    }

    /// What the writer tells its owner (metrics, the log).
    package enum Event: Sendable {
        /// A batch committed: its rows and how long the transaction took.
        case committed(rows: Int, seconds: Double)
        /// A commit failed; its rows stay queued (unless the error can only repeat).
        case commitFailed(StoreError, rows: Int)
        /// Rows given up on: the queue was full while the store failed, a row failed on its
        /// own, or the stop's deadline passed.
        case dropped(rows: Int, reason: DropReason)
    }

    package enum DropReason: String, Sendable {
        case queueFull = "queue_full"
        case rejected
        case shutdown
    }

    /// Counts since the writer was made.
    package struct Statistics: Sendable, Equatable {
        package var committed = 0
        package var dropped = 0
        package var failedCommits = 0
        package var batches = 0
    }

    package var name: String { "ledger_writer" }

    private let store: any LedgerStore
    private let configuration: Configuration
    private let report: @Sendable (Event) -> Void
    private let state: Mutex<State>

    package init(
        store: any LedgerStore, configuration: Configuration = Configuration(),
        report: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.store = store
        var configuration = configuration
        configuration.maximumBatch = max(1, configuration.maximumBatch)
        configuration.capacity = max(configuration.maximumBatch, configuration.capacity)
        self.configuration = configuration
        self.report = report
        state = Mutex(State())
    }

    // MARK: Submitting

    /// Queues `row` for the next batch. Waits only when the queue is full and the store is
    /// taking rows; drops (and counts) the row when the queue is full and the store is failing.
    package func submit(_ row: LedgerRow) async {
        _ = await enqueue(row, waitForCommit: false)
    }

    /// Queues `row` and returns once its batch is committed (true) or its commit failed or
    /// it was dropped (false; a row whose commit failed stays queued and is retried).
    package func submitAndWait(_ row: LedgerRow) async -> Bool {
        await enqueue(row, waitForCommit: true)
    }

    /// Rows waiting to be committed now.
    package var queueDepth: Int { state.withLock { $0.count } }

    package var statistics: Statistics { state.withLock { $0.statistics } }

    /// Returns once every row queued before the call has been committed or given up on (tests, tools).
    package func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wake = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                if state.count == 0 && !state.committing {
                    continuation.resume()
                    return nil
                }
                state.flushWaiters.append((state.nextTicket - 1, continuation))
                return state.takeDrainWaiter()
            }
            wake?.resume(returning: true)
        }
    }

    private func enqueue(_ row: LedgerRow, waitForCommit: Bool) async -> Bool {
        while true {
            let admission = state.withLock { state -> Admission in
                if state.phase == .stopped { return .drop }
                if state.count >= configuration.capacity { return state.failing ? .drop : .wait }
                return .queued(state.append(row, waitingForCommit: waitForCommit), state.takeDrainWaiter())
            }
            switch admission {
            case .queued(let ticket, let wake):
                wake?.resume(returning: true)
                guard waitForCommit else { return true }
                return await withCheckedContinuation { continuation in
                    let resolved = state.withLock { state -> Bool? in
                        if let result = state.settled.removeValue(forKey: ticket) { return result }
                        state.commitWaiters[ticket] = continuation
                        return nil
                    }
                    if let resolved { continuation.resume(returning: resolved) }
                }
            case .wait:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let go = state.withLock { state -> Bool in
                        if state.count < configuration.capacity || state.failing || state.phase == .stopped {
                            return true
                        }
                        state.roomWaiters.append(continuation)
                        return false
                    }
                    if go { continuation.resume() }
                }
            case .drop:
                state.withLock { $0.statistics.dropped += 1 }
                report(.dropped(rows: 1, reason: .queueFull))
                return false
            }
        }
    }

    private enum Admission {
        case queued(UInt64, CheckedContinuation<Bool, Never>?)
        case wait
        case drop
    }

    // MARK: Running

    package func start() async throws {
        let alreadyRunning = state.withLock { state -> Bool in
            guard state.phase == .idle else { return true }
            state.phase = .running
            return false
        }
        guard !alreadyRunning else { return }
        let task = Task { await self.drain() }
        state.withLock { $0.task = task }
    }

    /// Commits what is queued, until `deadline`; then drops what is left.
    package func stop(deadline: MonotonicInstant) async {
        let (task, wake) = state.withLock { state -> (Task<Void, Never>?, CheckedContinuation<Bool, Never>?) in
            if state.phase == .running { state.phase = .stopping }
            state.deadline = deadline
            return (state.task, state.takeDrainWaiter())
        }
        wake?.resume(returning: true)
        await task?.value
        state.withLock { $0.phase = .stopped }
    }

    private func drain() async {
        var retryDelay = configuration.initialRetryDelay
        batches: while true {
            guard let next = await nextBatch() else { break }
            let (rows, lastTicket) = next
            let start = MonotonicInstant.now()
            let outcome: Result<Void, StoreError>
            do throws(StoreError) {
                try await store.append(rows)
                outcome = .success(())
            } catch {
                outcome = .failure(error)
            }
            switch outcome {
            case .success:
                retryDelay = configuration.initialRetryDelay
                let seconds = Double(start.nanoseconds(until: .now())) / 1e9
                finish(rows: rows.count, through: lastTicket, committed: true)
                report(.committed(rows: rows.count, seconds: seconds))
            case .failure(let error):
                report(.commitFailed(error, rows: rows.count))
                state.withLock {
                    $0.statistics.failedCommits += 1
                    $0.failing = true
                    $0.committing = false
                    $0.release(waitersThrough: lastTicket, result: false)
                }
                resumeRoomWaiters()
                if !error.isTransient {
                    await commitOneByOne(rows.count)
                } else if await pauseOrGiveUp(retryDelay) {
                    break batches
                } else {
                    retryDelay = min(retryDelay * 2, configuration.maximumRetryDelay)
                }
            }
        }
        let (left, flushers) = state.withLock { state -> (Int, [CheckedContinuation<Void, Never>]) in
            let left = state.count
            state.statistics.dropped += left
            state.removeFirst(left)
            state.release(waitersThrough: .max, result: false)
            state.phase = .stopped
            return (left, state.takeAllFlushWaiters())
        }
        for flusher in flushers { flusher.resume() }
        resumeRoomWaiters()
        if left > 0 { report(.dropped(rows: left, reason: .shutdown)) }
    }

    /// The next batch (its rows and the ticket of its last row), or nil when the writer should end.
    private func nextBatch() async -> ([LedgerRow], UInt64)? {
        while true {
            let ready = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let resume = state.withLock { state -> Bool? in
                    if state.count > 0 { return true }
                    if state.phase != .running { return false }
                    state.drainWaiter = continuation
                    return nil
                }
                if let resume { continuation.resume(returning: resume) }
            }
            guard ready else { return nil }
            // Let rows gather, unless someone waits for a commit or the writer is stopping.
            let gather = state.withLock { state in
                state.phase == .running && !state.hasCommitWaiter && state.count < configuration.maximumBatch
                    && !state.failing
            }
            if gather { try? await Task.sleep(for: configuration.batchInterval) }
            let batch = state.withLock { state -> ([LedgerRow], UInt64)? in
                guard state.count > 0 else { return nil }
                state.committing = true
                return state.peek(configuration.maximumBatch)
            }
            if let batch { return batch }
        }
    }

    /// After a failure that repeats: each row alone; the ones that still fail are dropped.
    private func commitOneByOne(_ count: Int) async {
        for _ in 0..<count {
            guard
                let (rows, ticket) = state.withLock({ state -> ([LedgerRow], UInt64)? in
                    guard state.count > 0 else { return nil }
                    state.committing = true
                    return state.peek(1)
                })
            else { return }
            do {
                try await store.append(rows)
                finish(rows: 1, through: ticket, committed: true)
            } catch {
                finish(rows: 1, through: ticket, committed: false)
                report(.dropped(rows: 1, reason: .rejected))
            }
        }
    }

    /// Waits `delay` before the next attempt; true when the stop's deadline leaves no time for one.
    private func pauseOrGiveUp(_ delay: Duration) async -> Bool {
        let deadline = state.withLock { $0.phase == .running ? nil : $0.deadline }
        if let deadline {
            let left = Duration.nanoseconds(Int64(clamping: MonotonicInstant.now().nanoseconds(until: deadline)))
            if left <= .milliseconds(1) { return true }
            try? await Task.sleep(for: min(delay, left))
            return false
        }
        try? await Task.sleep(for: delay)
        return false
    }

    /// Removes the batch's rows from the queue and tells whoever waits for them.
    private func finish(rows: Int, through ticket: UInt64, committed: Bool) {
        let flushers = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.removeFirst(rows)
            state.committing = false
            if committed {
                state.statistics.committed += rows
                state.statistics.batches += 1
                state.failing = false
            } else {
                state.statistics.dropped += rows
            }
            state.release(waitersThrough: ticket, result: committed)
            return state.takeFlushWaiters(through: ticket)
        }
        for flusher in flushers { flusher.resume() }
        resumeRoomWaiters()
    }

    private func resumeRoomWaiters() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            let room = configuration.capacity - state.count
            guard room > 0 || state.failing || state.phase == .stopped else { return [] }
            let count =
                state.failing || state.phase == .stopped ? state.roomWaiters.count : min(room, state.roomWaiters.count)
            let woken = Array(state.roomWaiters.prefix(count))
            state.roomWaiters.removeFirst(count)
            return woken
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: State

    private enum Phase {
        case idle
        case running
        case stopping
        case stopped
    }

    /// Everything the mutex guards: the queue (an array read from `head`, compacted now and
    /// then) and who waits for what. Tickets number rows in order of arrival.
    private struct State {
        var phase = Phase.idle
        var task: Task<Void, Never>?
        var deadline: MonotonicInstant?
        private var rows: [LedgerRow] = []
        private var tickets: [UInt64] = []
        private var head = 0
        var nextTicket: UInt64 = 1
        var committing = false
        var failing = false
        var statistics = Statistics()
        var drainWaiter: CheckedContinuation<Bool, Never>?
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
        var commitWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        /// Results for waiters that had not yet parked their continuation.
        var settled: [UInt64: Bool] = [:]
        private var waitedTickets: Set<UInt64> = []
        var flushWaiters: [(UInt64, CheckedContinuation<Void, Never>)] = []

        var count: Int { rows.count - head }
        var hasCommitWaiter: Bool { !waitedTickets.isEmpty }

        mutating func append(_ row: LedgerRow, waitingForCommit: Bool) -> UInt64 {
            let ticket = nextTicket
            nextTicket += 1
            rows.append(row)
            tickets.append(ticket)
            if waitingForCommit { waitedTickets.insert(ticket) }
            return ticket
        }

        func peek(_ limit: Int) -> ([LedgerRow], UInt64) {
            let end = head + min(limit, count)
            return (Array(rows[head..<end]), tickets[end - 1])
        }

        mutating func removeFirst(_ n: Int) {
            head += min(n, count)
            if head == rows.count {
                rows.removeAll(keepingCapacity: true)
                tickets.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1_024 && head * 2 >= rows.count {
                rows.removeFirst(head)
                tickets.removeFirst(head)
                head = 0
            }
        }

        /// Tells each commit waiter up to `ticket` its result.
        mutating func release(waitersThrough ticket: UInt64, result: Bool) {
            guard !waitedTickets.isEmpty else { return }
            for waited in waitedTickets where waited <= ticket {
                waitedTickets.remove(waited)
                if let waiter = commitWaiters.removeValue(forKey: waited) {
                    waiter.resume(returning: result)
                } else {
                    settled[waited] = result
                }
            }
        }

        mutating func takeDrainWaiter() -> CheckedContinuation<Bool, Never>? {
            defer { drainWaiter = nil }
            return drainWaiter
        }

        mutating func takeFlushWaiters(through ticket: UInt64) -> [CheckedContinuation<Void, Never>] {
            let empty = count == 0
            let done = flushWaiters.filter { $0.0 <= ticket || empty }
            flushWaiters.removeAll { $0.0 <= ticket || empty }
            return done.map(\.1)
        }

        mutating func takeAllFlushWaiters() -> [CheckedContinuation<Void, Never>] {
            defer { flushWaiters.removeAll() }
            return flushWaiters.map(\.1)
        }
    }
}
