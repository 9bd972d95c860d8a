import Synchronization

#if canImport(Glibc)
    import CEventLoop
    import Glibc
#endif

/// A few threads of its own for blocking work (SQLite calls, files), which must never run on
/// an event loop nor hold one of Swift's shared threads.
///
/// Work waits in one FIFO queue; an idle thread sleeps in a blocking `read` of an `eventfd`
/// in semaphore mode, which counts one token per queued job (and one per thread to stop).
///
/// Cancelling the task that awaits ``run(_:)`` neither removes its work from the queue nor
/// interrupts it: the work runs to the end and the task gets its result.
package final class BlockingPool: Sendable {
    /// A short name for logs; the threads are named `<name>-<index>`.
    package let name: String
    /// How many threads run the work.
    package let threadCount: Int
    private let core: Core
    // Emptied once joined, so a second shutdown does not join again.
    private let threads: Mutex<[pthread_t]>

    /// Starts `threadCount` threads (at least one).
    package init(threadCount: Int, name: String) throws(IOError) {
        self.name = name
        self.threadCount = max(1, threadCount)
        let core = try Core()
        self.core = core
        var threads: [pthread_t] = []
        for index in 0..<self.threadCount {
            let threadName = String("\(name)-\(index)".prefix(15))
            threads.append(
                DetachedThread.start {
                    CEventLoop_setThreadName(threadName)
                    core.serve()
                })
        }
        self.threads = Mutex(threads)
    }

    deinit {
        // Never shut down: let the threads finish the queue and end on their own.
        core.stopAccepting(wakeThreads: threadCount)
        threads.withLock { threads in
            for thread in threads { pthread_detach(thread) }
        }
    }

    /// Runs `work` on one of the pool's threads, after the work queued before it, and returns
    /// its result or throws its error. Throws ``BlockingPoolError/shutDown`` without running
    /// `work` once ``shutdown()`` has been called.
    package func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            let queued = core.enqueue {
                continuation.resume(returning: Result { try work() })
            }
            if !queued { continuation.resume(returning: .failure(BlockingPoolError.shutDown)) }
        }
        return try result.get()
    }

    /// Work waiting for a thread (for tests).
    var queuedCount: Int { core.queuedCount }

    /// False once ``shutdown()`` has begun (for tests).
    var isAcceptingWork: Bool { core.isAccepting }

    /// Refuses new work, lets the threads finish what is queued, then waits for them to end
    /// (on a thread of its own, see ``DetachedThread/run(_:)``). A second call waits for the
    /// first and does nothing more. Not from the pool's own work.
    package func shutdown() async {
        core.stopAccepting(wakeThreads: threadCount)
        await DetachedThread.run { [self] in
            // Held while joining, so a concurrent second call returns only once all have ended.
            self.threads.withLock { threads in
                for thread in threads { pthread_join(thread, nil) }
                threads = []
            }
        }
    }
}

/// Why ``BlockingPool/run(_:)`` did not run the work.
package struct BlockingPoolError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case shutDown
    }

    private let code: Code

    private init(_ code: Code) { self.code = code }

    /// The pool was shut down before the work was submitted.
    package static let shutDown = BlockingPoolError(.shutDown)

    package var description: String {
        switch code {
        case .shutDown: "the blocking pool is shut down"
        }
    }
}

/// The queue and the `eventfd` the threads sleep on; the threads hold it, not the pool, so a
/// pool nobody shut down can still be released.
private final class Core: Sendable {
    typealias Job = @Sendable () -> Void

    private struct Queue: ~Copyable {
        // Taken slots are nil until the front is compacted away.
        var jobs: [Job?] = []
        var head = 0
        var accepting = true

        mutating func push(_ job: @escaping Job) {
            jobs.append(job)
        }

        mutating func pop() -> Job? {
            guard head < jobs.count else { return nil }
            let job = jobs[head].take()
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024 && head * 2 >= jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            return job
        }
    }

    private enum Next {
        case run(Job)
        case exit
        case wait
    }

    private let queue = Mutex(Queue())
    private let wakeFD: CInt

    init() throws(IOError) {
        wakeFD = try syscall("eventfd") { eventfd(0, CInt(EFD_SEMAPHORE) | CInt(EFD_CLOEXEC)) }
    }

    deinit {
        Socket.close(wakeFD)
    }

    var queuedCount: Int { queue.withLock { $0.jobs.count - $0.head } }

    var isAccepting: Bool { queue.withLock { $0.accepting } }

    /// Queues `job` and wakes one thread; false once the pool no longer accepts work.
    func enqueue(_ job: @escaping Job) -> Bool {
        let queued = queue.withLock { queue -> Bool in
            guard queue.accepting else { return false }
            queue.push(job)
            return true
        }
        // The token follows the job, so a thread that takes a token always finds work or the stop.
        if queued { post(1) }
        return queued
    }

    /// Refuses new work and gives each thread a token to stop on once the queue is empty.
    func stopAccepting(wakeThreads count: Int) {
        let first = queue.withLock { queue -> Bool in
            defer { queue.accepting = false }
            return queue.accepting
        }
        if first { post(UInt64(count)) }
    }

    /// A thread's life: take a token, run the next job, or end once the queue is empty and closed.
    func serve() {
        while true {
            var token: UInt64 = 0
            do {
                _ = try syscall("read") { read(wakeFD, &token, 8) }
            } catch {
                preconditionFailure("blocking pool: \(error)")
            }
            let next = queue.withLock { queue -> Next in
                if let job = queue.pop() { return .run(job) }
                return queue.accepting ? .wait : .exit
            }
            switch next {
            case .run(let job): job()
            case .exit: return
            case .wait: continue
            }
        }
    }

    private func post(_ tokens: UInt64) {
        var value = tokens
        do {
            _ = try syscall("write") { write(wakeFD, &value, 8) }
        } catch {
            preconditionFailure("blocking pool: \(error)")
        }
    }
}
