import Synchronization

#if canImport(Glibc)
    import CEventLoop
    import Glibc
#endif

/// Writes lines of bytes to one file descriptor from a background thread of its own, in
/// batches, so that no caller ever waits for the descriptor.
///
/// Any thread may ``append(_:)`` a line: it is copied into a buffer under a lock and the call
/// returns; no system call is made under that lock. The writer thread takes the whole buffer,
/// writes it outside the lock (looping on short writes, retrying `EINTR`, waiting for
/// `POLLOUT` on `EAGAIN` when the descriptor is non-blocking) and comes back for more, so
/// lines that arrive while it writes go out together in the next batch. A line is never split
/// between batches: this writer's lines never interleave with each other.
///
/// Memory is bounded: while the descriptor is stalled, lines that would take the waiting
/// buffer past `bufferLimit` bytes are dropped and counted in ``droppedLineCount`` (the batch
/// being written is held beside it, so at most about twice the limit is in use). A write
/// error other than `EINTR`/`EAGAIN` (`EPIPE`, `EBADF`, …) drops the rest of that batch,
/// counts its lines, and the writer carries on with the next.
///
/// Writes are plain `write(2)`, which cannot suppress `SIGPIPE`: a process that writes to a
/// pipe through this type must ignore `SIGPIPE` (the server does so at start), or a reader
/// going away kills it.
///
/// The descriptor stays the caller's and is never closed here. The thread keeps the writer
/// alive until ``shutdown(timeout:)``.
package final class BatchedWriter: Sendable {
    private struct State {
        /// Lines not yet taken by the writer thread.
        var pending: [UInt8] = []
        /// Bytes accepted by `append` since the start.
        var acceptedBytes = 0
        /// Bytes the writer thread is done with (written, or dropped on an error).
        var finishedBytes = 0
        var droppedLines = 0
        /// The writer thread waits for work: the next `append` must wake it.
        var sleeping = false
        /// The writer thread lets lines gather before it writes: an `append` that fills a
        /// batch must wake it.
        var lingering = false
        /// Callers of `flush` waiting now: the writer writes at once.
        var flushRequests = 0
        var stopping = false
        var exited = false
        var thread: pthread_t?
    }

    private let fd: CInt
    private let bufferLimit: Int
    private let batchInterval: Duration
    /// A batch this large is written without waiting out the interval.
    private static let batchBytes = 64 << 10
    private let state = Mutex(State())
    /// Wakes the writer for work, and `flush`/`shutdown` callers for its progress.
    private let signal = ProgressSignal()

    /// Starts a writer thread for `fileDescriptor`, which must stay open until
    /// ``shutdown(timeout:)`` returns. Lines that would take the waiting buffer past
    /// `bufferLimit` bytes are dropped. Once a line arrives, the writer waits up to
    /// `batchInterval` for more before it writes (at once for a full batch, a `flush` or a
    /// shutdown): one wake-up and one `write` for many lines, not one of each per line.
    package init(fileDescriptor: CInt, bufferLimit: Int = 8 << 20, batchInterval: Duration = .milliseconds(20)) {
        fd = fileDescriptor
        self.bufferLimit = bufferLimit
        self.batchInterval = batchInterval
        let thread = DetachedThread.start { [self] in self.run() }
        state.withLock { $0.thread = thread }
    }

    /// How many lines were dropped so far: appended while the buffer was full or after
    /// ``shutdown(timeout:)`` began, or lost to a write error.
    package var droppedLineCount: Int { state.withLock { $0.droppedLines } }

    /// Queues one line (a newline-terminated run of bytes) for writing and returns at once.
    /// Safe from any thread; the line is dropped and counted when the buffer is full.
    package func append(_ line: some Collection<UInt8>) {
        let wake = state.withLock { state -> Bool in
            guard !state.stopping, state.pending.count + line.count <= bufferLimit else {
                state.droppedLines += 1
                return false
            }
            state.pending.append(contentsOf: line)
            state.acceptedBytes += line.count
            // Only an idle writer needs waking, or one letting a batch gather that is now full;
            // a busy one comes back for the buffer by itself.
            let wake = state.sleeping || (state.lingering && state.pending.count >= Self.batchBytes)
            state.sleeping = false
            return wake
        }
        if wake { signal.broadcast() }
    }

    /// Waits until every line appended before the call has been written (or dropped on a
    /// write error), for at most `timeout`, so a dead descriptor cannot hang the caller.
    /// Returns false when the time ran out first.
    @discardableResult
    package func flush(timeout: Duration = .seconds(2)) -> Bool {
        flush(until: MonotonicInstant.now().advanced(by: timeout))
    }

    /// Flushes for at most `timeout`, then stops the writer thread and joins it. Lines appended
    /// later are dropped. A thread still stuck in a blocking write when the time runs out is
    /// left to finish on its own (detached). Returns true when everything was written and the
    /// thread has ended; later calls return at once.
    @discardableResult
    package func shutdown(timeout: Duration = .seconds(2)) -> Bool {
        let deadline = MonotonicInstant.now().advanced(by: timeout)
        let flushed = flush(until: deadline)
        let thread = state.withLock { state -> pthread_t? in
            state.stopping = true
            defer { state.thread = nil }
            return state.thread
        }
        guard let thread else { return flushed }
        signal.broadcast()
        if signal.wait(until: deadline, for: { state.withLock { $0.exited } }) {
            pthread_join(thread, nil)
            return flushed
        }
        pthread_detach(thread)
        return false
    }

    private func flush(until deadline: MonotonicInstant) -> Bool {
        let target = state.withLock { state -> Int in
            state.flushRequests += 1
            return state.acceptedBytes
        }
        signal.broadcast()
        defer { state.withLock { $0.flushRequests -= 1 } }
        return signal.wait(until: deadline, for: { state.withLock { $0.finishedBytes >= target } })
    }

    // MARK: - The writer thread

    private func run() {
        CEventLoop_setThreadName("batched-writer")
        var batch: [UInt8] = []
        while true {
            var stop = false
            // Work has come: let more gather for a while, unless someone waits for it.
            let gathered = signal.wait(until: nil) {
                state.withLock { state in
                    if !state.pending.isEmpty || state.stopping || state.flushRequests > 0 { return true }
                    state.sleeping = true
                    return false
                }
            }
            if gathered, batchInterval > .zero {
                state.withLock { $0.lingering = true }
                _ = signal.wait(until: MonotonicInstant.now().advanced(by: batchInterval)) {
                    state.withLock { $0.stopping || $0.flushRequests > 0 || $0.pending.count >= Self.batchBytes }
                }
                state.withLock { $0.lingering = false }
            }
            signal.wait(until: nil) {
                state.withLock { state in
                    if !state.pending.isEmpty {
                        // Swapping keeps both buffers' capacity for the next rounds.
                        swap(&batch, &state.pending)
                        return true
                    }
                    if state.stopping {
                        state.exited = true
                        stop = true
                        return true
                    }
                    state.sleeping = true
                    return false
                }
            }
            if stop {
                signal.broadcast()
                return
            }
            let dropped = write(batch)
            state.withLock { state in
                state.finishedBytes += batch.count
                state.droppedLines += dropped
            }
            signal.broadcast()
            // A batch left over from a stall would otherwise hold its memory for good.
            if batch.capacity > 1 << 16 { batch = [] } else { batch.removeAll(keepingCapacity: true) }
        }
    }

    /// Writes all of `batch`; returns how many of its lines could not be written.
    private func write(_ batch: [UInt8]) -> Int {
        var offset = 0
        while offset < batch.count {
            let result = batch.withUnsafeBytes { bytes in
                Result { () throws(IOError) in
                    try syscall(blocking: false, "write") {
                        Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                    }
                }
            }
            switch result {
            case .success(.processed(let count)) where count > 0:
                offset += count
            case .success(.wouldBlock) where waitUntilWritable():
                continue
            case .success, .failure:
                return Self.lineCount(batch[offset...])
            }
        }
        return 0
    }

    /// Waits for a non-blocking descriptor to take more; false once the writer is stopping,
    /// when what the descriptor does not take at once is dropped.
    private func waitUntilWritable() -> Bool {
        while !state.withLock({ $0.stopping }) {
            var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            // Bounded, so that `shutdown` is noticed while the descriptor stays full.
            guard let ready = try? syscall("poll", { poll(&entry, 1, 100) }) else { return false }
            // Readiness, an error or a hang-up: the next write tells which.
            if ready > 0 { return true }
        }
        return false
    }

    /// The lines in `bytes`, counting an unterminated tail as one.
    private static func lineCount(_ bytes: ArraySlice<UInt8>) -> Int {
        let newlines = bytes.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
        return newlines + (bytes.last.map { $0 == 0x0A ? 0 : 1 } ?? 0)
    }
}

/// A condition variable on the monotonic clock: waits for a condition kept elsewhere (under
/// its own lock), with an optional deadline.
// @unchecked Sendable: the pthread mutex and condition variable are made for use from any
// thread; the pointers are set once in init and freed in deinit, when no thread uses them.
private final class ProgressSignal: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Wakes every waiter to look at its condition again. Call after changing what it reads.
    func broadcast() {
        pthread_mutex_lock(mutex)
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Waits until `ready` returns true or `deadline` (nil: none) passes; returns `ready`'s
    /// last answer. `ready` is asked under this signal's mutex, so a `broadcast` after the
    /// state it reads changed cannot be missed.
    @discardableResult
    func wait(until deadline: MonotonicInstant?, for ready: () -> Bool) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !ready() {
            guard let deadline else {
                pthread_cond_wait(condition, mutex)
                continue
            }
            guard MonotonicInstant.now() < deadline else { return false }
            var time = timespec(
                tv_sec: Int(deadline.nanoseconds / 1_000_000_000),
                tv_nsec: Int(deadline.nanoseconds % 1_000_000_000)
            )
            pthread_cond_timedwait(condition, mutex, &time)
        }
        return true
    }
}
