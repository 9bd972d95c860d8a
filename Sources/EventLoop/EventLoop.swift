import Synchronization

#if canImport(Glibc)
    import CEventLoop
    import Glibc
#endif

/// One thread running an epoll selector, timers and a queue of work.
///
/// File descriptors registered with a loop, its timers and every object it drives are
/// touched only on the loop's thread. Other threads reach the loop through ``execute(_:)``,
/// which puts work on a locked queue and wakes the loop through an `eventfd`. Work the loop
/// gives itself goes on a queue of its own, without a lock, and runs right after the event
/// handler that gave it, before the next event's.
///
/// The loop is also a `TaskExecutor`: a task started with `Task(executorPreference: loop)`
/// runs its non-isolated code on the loop thread, so a request handler and the connection
/// that owns it never change thread.
///
/// With ``LoopPolling``, a loop whose events come quickly polls for them for a short,
/// adaptive window (``PollWindow``) before it sleeps, while the machine leaves it a CPU.
/// The thread-specific slot ``EventLoop/current`` reads, made once.
private let currentLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

public final class EventLoop: @unchecked Sendable {
    // Sendable because every mutable field below is either guarded by `inbox`'s mutex or
    // touched only on the loop thread (`registrations`, `timers`, `stopRequested`); the
    // loop-only entry points check `inEventLoop` first.

    private enum Work {
        case closure(@Sendable () -> Void)
        case job(UnownedJob)
    }

    private struct Inbox: ~Copyable {
        var work: [Work] = []
        var wakePending = false
    }

    private struct Registration {
        let id: UInt32
        var interest: SelectorInterest
        let handler: any Selectable
    }

    /// A short name for logs and the thread name, e.g. `loop-0`.
    public let name: String
    private let epollFD: CInt
    private let wakeFD: CInt
    private let inbox = Mutex(Inbox())
    private let threadID = Atomic<UInt>(0)
    private let finished = Mutex(false)
    // The load of the last finished window (thousandths), when that window ended, and whether
    // the loop is in `epoll_wait`: written by the loop, read by any thread through `recentLoad`.
    private let windowLoad = Atomic<Int>(0)
    private let windowEnded = Atomic<UInt64>(0)
    private let waiting = Atomic<Bool>(false)

    /// Work the loop gave itself (a task an event's handler resumed, say), without a lock: run
    /// right after the handler of each event, so an answer does not wait for every other event
    /// of the wake-up to be handled first. Loop thread only.
    private var ownWork: [Work] = []
    private var registrations: [CInt: Registration] = [:]
    private var nextRegistrationID: UInt32 = 1
    private var timers = TimerQueue()
    private var stopRequested = false
    private var thread: pthread_t?
    private let polling: LoopPolling?

    private static let wakeToken: UInt64 = UInt64.max

    /// Creates a loop. It does nothing until ``start()``. With `polling`, it polls for events
    /// before it sleeps when they have been coming quickly.
    public init(name: String, polling: LoopPolling? = nil) throws(IOError) {
        self.name = name
        self.polling = polling
        epollFD = try syscall("epoll_create1") { epoll_create1(CInt(EPOLL_CLOEXEC)) }
        do {
            wakeFD = try syscall("eventfd") { eventfd(0, CInt(EFD_NONBLOCK) | CInt(EFD_CLOEXEC)) }
        } catch {
            Glibc.close(epollFD)
            throw error
        }
        var event = epoll_event()
        event.events = CEventLoop_EPOLLIN
        event.data.u64 = Self.wakeToken
        _ = try? syscall("epoll_ctl") { epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event) }
    }

    deinit {
        Glibc.close(wakeFD)
        Glibc.close(epollFD)
    }

    /// The loop whose thread this is, or nil off every loop's thread: work that must leave
    /// its task (a task of its own, not cancelled with it) can stay on the same thread with
    /// `Task(executorPreference: EventLoop.current)`.
    public static var current: EventLoop? {
        pthread_getspecific(currentLoopKey).map { Unmanaged<EventLoop>.fromOpaque($0).takeUnretainedValue() }
    }

    /// True on this loop's own thread.
    @inline(__always)
    public var inEventLoop: Bool {
        let id = threadID.load(ordering: .relaxed)
        return id != 0 && pthread_equal(pthread_self(), pthread_t(id)) != 0
    }

    /// How long a load window lasts: the loop measures its load over windows of at least this.
    public static let loadWindow: Duration = .milliseconds(100)

    /// How busy the loop has been lately, in thousandths of the time: the share of its last
    /// ``loadWindow`` or more spent working rather than waiting in `epoll_wait`. A loop that
    /// has not ended an iteration for two windows counts as idle while it waits and as fully
    /// busy while it works. Read from any thread.
    public var recentLoad: Int {
        let ended = windowEnded.load(ordering: .acquiring)
        let now = MonotonicInstant.now().nanoseconds
        if now > ended, now - ended > 2 * Self.loadWindow.nanosecondsClamped {
            return waiting.load(ordering: .relaxed) ? 0 : 1000
        }
        return windowLoad.load(ordering: .relaxed)
    }

    // MARK: - Starting and stopping

    /// Starts the loop's thread.
    public func start() {
        thread = DetachedThread.start { [self] in self.run() }
    }

    /// Asks the loop to stop after the work already queued and waits for its thread to end.
    /// Must not be called on the loop itself.
    public func stopAndJoin() {
        precondition(!inEventLoop, "stopAndJoin() called on the loop it stops")
        execute { [self] in self.stopRequested = true }
        if let thread {
            pthread_join(thread, nil)
            self.thread = nil
        }
    }

    // MARK: - Work from any thread

    /// Runs `work` on the loop thread, soon. Safe from any thread. Called on the loop itself
    /// (an event's handler resuming a task, say), `work` runs as soon as the handler, timer or
    /// work that called it returns, before the loop's next event; from another thread, after
    /// the events of the loop's next wake-up.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        push(.closure(work))
    }

    private func push(_ work: Work) {
        if inEventLoop {
            ownWork.append(work)
            return
        }
        let needsWake = inbox.withLock { inbox -> Bool in
            inbox.work.append(work)
            if inbox.wakePending { return false }
            inbox.wakePending = true
            return true
        }
        if needsWake {
            var one: UInt64 = 1
            _ = Glibc.write(wakeFD, &one, 8)
        }
    }

    // MARK: - Loop-only API

    /// Watches `fd` for `interest` and reports readiness to `handler`. Loop thread only.
    public func register(_ fd: CInt, interest: SelectorInterest, handler: any Selectable) throws(IOError) {
        assertInEventLoop()
        let id = nextRegistrationID
        nextRegistrationID = nextRegistrationID == UInt32.max ? 1 : nextRegistrationID + 1
        var event = epoll_event()
        event.events = interest.rawValue
        event.data.u64 = UInt64(UInt32(bitPattern: fd)) | (UInt64(id) << 32)
        _ = try syscall("epoll_ctl(ADD)") { epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) }
        registrations[fd] = Registration(id: id, interest: interest, handler: handler)
    }

    /// Changes what `fd` is watched for. Loop thread only.
    public func reregister(_ fd: CInt, interest: SelectorInterest) throws(IOError) {
        assertInEventLoop()
        guard var registration = registrations[fd], registration.interest != interest else { return }
        var event = epoll_event()
        event.events = interest.rawValue
        event.data.u64 = UInt64(UInt32(bitPattern: fd)) | (UInt64(registration.id) << 32)
        _ = try syscall("epoll_ctl(MOD)") { epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event) }
        registration.interest = interest
        registrations[fd] = registration
    }

    /// Stops watching `fd`. A descriptor already closed by someone else is tolerated. Loop thread only.
    public func deregister(_ fd: CInt) {
        assertInEventLoop()
        guard registrations.removeValue(forKey: fd) != nil else { return }
        var event = epoll_event()
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event) // EBADF / ENOENT: already gone, nothing to undo
    }

    /// Runs `callback` on the loop at `deadline`. Loop thread only.
    @discardableResult
    public func scheduleTimer(at deadline: MonotonicInstant, _ callback: @escaping () -> Void) -> TimerID {
        assertInEventLoop()
        return timers.schedule(at: deadline, callback)
    }

    /// Cancels a timer that has not fired yet. Loop thread only.
    public func cancelTimer(_ timer: TimerID) {
        assertInEventLoop()
        timers.cancel(timer)
    }

    /// The number of registered file descriptors (for tests and metrics). Loop thread only.
    public var registrationCount: Int {
        assertInEventLoop()
        return registrations.count
    }

    @inline(__always)
    private func assertInEventLoop() {
        assert(inEventLoop, "loop-confined API used off the loop thread")
    }

    // MARK: - The loop

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        // Unretained: the loop outlives its thread (stopAndJoin waits for the thread).
        pthread_setspecific(currentLoopKey, Unmanaged.passUnretained(self).toOpaque())
        defer { pthread_setspecific(currentLoopKey, nil) }
        CEventLoop_setThreadName(String(name.prefix(15)))
        let capacity: CInt = 1024
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: Int(capacity))
        defer { events.deallocate() }
        var batch: [Work] = []
        let window = Self.loadWindow.nanosecondsClamped
        var windowStart = MonotonicInstant.now()
        var windowBusy: UInt64 = 0
        windowEnded.store(windowStart.nanoseconds, ordering: .releasing)
        /// Publishes the load window and starts the next once it has lasted long enough.
        func endLoadWindowIfDue(at now: MonotonicInstant) {
            let elapsed = windowStart.nanoseconds(until: now)
            guard elapsed >= window else { return }
            windowLoad.store(Int(min(windowBusy, elapsed) * 1000 / elapsed), ordering: .relaxed)
            windowEnded.store(now.nanoseconds, ordering: .releasing)
            windowStart = now
            windowBusy = 0
        }
        var pollWindow = PollWindow(limit: polling?.limit.nanosecondsClamped ?? 0)
        while !stopRequested {
            let timeout = nextTimeoutMilliseconds()
            waiting.store(true, ordering: .relaxed)
            let count: CInt
            let woke: MonotonicInstant
            if let polling, timeout != 0 {
                (count, woke) = waitPolling(events, capacity, window: &pollWindow, polling: polling)
            } else {
                count = epoll_wait(epollFD, events, capacity, timeout)
                woke = .now()
            }
            waiting.store(false, ordering: .relaxed)
            // A long wait ends the window, so the work that follows starts a fresh one.
            endLoadWindowIfDue(at: woke)
            if count > 0 {
                for index in 0..<Int(count) {
                    let data = events[index].data.u64
                    if data == Self.wakeToken {
                        var value: UInt64 = 0
                        _ = Glibc.read(wakeFD, &value, 8)
                        continue
                    }
                    let fd = CInt(bitPattern: UInt32(truncatingIfNeeded: data))
                    let id = UInt32(truncatingIfNeeded: data >> 32)
                    guard let registration = registrations[fd], registration.id == id else { continue }
                    registration.handler.selectorEvents(SelectorEvents(rawValue: events[index].events))
                    if !ownWork.isEmpty { runOwnWork(&batch) }
                }
            }
            if timers.count > 0 {
                for callback in timers.takeExpired(now: .now()) { callback() }
            }
            if !ownWork.isEmpty { runOwnWork(&batch) }
            inbox.withLock { inbox in
                swap(&batch, &inbox.work)
                inbox.wakePending = false
            }
            for work in batch { run(work) }
            batch.removeAll(keepingCapacity: true)
            if !ownWork.isEmpty { runOwnWork(&batch) }
            let done = MonotonicInstant.now()
            windowBusy += woke.nanoseconds(until: done)
            endLoadWindowIfDue(at: done)
        }
        threadID.store(0, ordering: .releasing)
    }

    /// Runs the work the loop has given itself so far; what that work adds runs at the next call.
    private func runOwnWork(_ batch: inout [Work]) {
        swap(&batch, &ownWork)
        for work in batch { run(work) }
        batch.removeAll(keepingCapacity: true)
    }

    @inline(__always)
    private func run(_ work: Work) {
        switch work {
        case .closure(let closure): closure()
        case .job(let job): job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    /// Waits for events as `epoll_wait` would with the next timeout (not 0), polling first for
    /// the window when it is open and the machine leaves a CPU, then adapts the window. Returns
    /// the event count and when the wait ended.
    private func waitPolling(
        _ events: UnsafeMutablePointer<epoll_event>, _ capacity: CInt, window: inout PollWindow, polling: LoopPolling
    ) -> (count: CInt, woke: MonotonicInstant) {
        let start = MonotonicInstant.now()
        var count: CInt = 0
        if window.current > 0, polling.beginPolling(load: windowLoad.load(ordering: .relaxed)) {
            // Poll no longer than the window, nor past the next timer.
            var pollEnd = start.nanoseconds + window.current
            if let deadline = timers.earliestDeadline() { pollEnd = min(pollEnd, deadline.nanoseconds) }
            var now = start
            repeat {
                count = epoll_wait(epollFD, events, capacity, 0)
                now = .now()
            } while count == 0 && now.nanoseconds < pollEnd
            polling.endPolling(nanoseconds: start.nanoseconds(until: now), caughtEvent: count > 0)
        }
        if count == 0 {
            count = epoll_wait(epollFD, events, capacity, nextTimeoutMilliseconds())
        }
        let woke = MonotonicInstant.now()
        window.record(waited: start.nanoseconds(until: woke))
        return (count, woke)
    }

    private func nextTimeoutMilliseconds() -> CInt {
        if !ownWork.isEmpty { return 0 }
        let hasWork = inbox.withLock { !$0.work.isEmpty }
        if hasWork { return 0 }
        guard let deadline = timers.earliestDeadline() else { return -1 }
        let nanos = MonotonicInstant.now().nanoseconds(until: deadline)
        if nanos == 0 { return 0 }
        return CInt(min((nanos + 999_999) / 1_000_000, 60_000))
    }
}

extension EventLoop: TaskExecutor {
    public func enqueue(_ job: consuming ExecutorJob) {
        push(.job(UnownedJob(job)))
    }
}

extension EventLoop: CustomStringConvertible {
    public var description: String { "EventLoop(\(name))" }
}
