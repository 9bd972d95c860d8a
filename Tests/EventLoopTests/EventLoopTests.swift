import EventLoop
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Event loop")
struct EventLoopTests {
    @Test("runs work submitted from other threads on its own thread, in order")
    func executeOrder() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let seen = Mutex<[Int]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            for index in 0..<1000 {
                loop.execute {
                    precondition(loop.inEventLoop)
                    seen.withLock { $0.append(index) }
                    if index == 999 { continuation.resume() }
                }
            }
        }
        #expect(seen.withLock { $0 } == Array(0..<1000))
        #expect(!loop.inEventLoop)
    }

    @Test("fires timers in deadline order and skips cancelled ones")
    func timers() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let fired = Mutex<[Int]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                let now = MonotonicInstant.now()
                loop.scheduleTimer(at: now.advanced(by: .milliseconds(30))) { fired.withLock { $0.append(3) } }
                loop.scheduleTimer(at: now.advanced(by: .milliseconds(10))) { fired.withLock { $0.append(1) } }
                let cancelled = loop.scheduleTimer(at: now.advanced(by: .milliseconds(20))) {
                    fired.withLock { $0.append(2) }
                }
                loop.cancelTimer(cancelled)
                loop.scheduleTimer(at: now.advanced(by: .milliseconds(40))) { continuation.resume() }
            }
        }
        #expect(fired.withLock { $0 } == [1, 3])
    }

    @Test("reports a high load after working through a window and a low one after waiting")
    func recentLoad() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        // Read on the loop, in the iteration right after the work or the wait: read from
        // another thread later, the figure would already describe the time in between. A second
        // of work: the window may also hold the wait for this work to reach the loop, which a
        // machine with every core busy stretches to tens of milliseconds.
        let afterWork = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            loop.execute {
                let end = MonotonicInstant.now().advanced(by: .milliseconds(1000))
                while MonotonicInstant.now() < end {}
                loop.scheduleTimer(at: .now()) { continuation.resume(returning: loop.recentLoad) }
            }
        }
        #expect(afterWork >= 900)
        let afterWait = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            loop.execute {
                loop.scheduleTimer(at: MonotonicInstant.now().advanced(by: .milliseconds(300))) {
                    continuation.resume(returning: loop.recentLoad)
                }
            }
        }
        #expect(afterWait <= 100, "300 ms spent waiting for a timer counted as work")
    }

    @Test("runs tasks that prefer it as their executor on its thread")
    func taskExecutor() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let onLoop = await Task(executorPreference: loop) { () async -> Bool in
            // A real suspension, resumed by a timer: the task must come back to the loop.
            try? await Task.sleep(for: .milliseconds(5))
            return loop.inEventLoop
        }.value
        #expect(onLoop)
    }

    @Test("reports a readable descriptor to its handler")
    func readiness() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        var fds: [CInt] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer {
            close(fds[0])
            close(fds[1])
        }
        let reader = fds[0]
        let got = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            loop.execute {
                let handler = OneShot(fd: reader, loop: loop) { continuation.resume(returning: true) }
                try? loop.register(reader, interest: .read, handler: handler)
            }
            _ = write(fds[1], "x", 1)
        }
        #expect(got)
    }

    @Test("work a handler gives its own loop runs before the next descriptor's handler")
    func ownWorkFollowsItsEvent() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let pairs: [[CInt]] = (0..<3).map { _ in
            var fds: [CInt] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            _ = write(fds[1], "x", 1) // readable before it is registered: one wake-up reports all
            return fds
        }
        defer {
            for fds in pairs {
                close(fds[0])
                close(fds[1])
            }
        }
        let log = Mutex<[String]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                for (index, fds) in pairs.enumerated() {
                    let handler = OneShot(fd: fds[0], loop: loop) {
                        log.withLock { $0.append("event \(index)") }
                        loop.execute {
                            let count = log.withLock { log in
                                log.append("work \(index)")
                                return log.count
                            }
                            if count == 2 * pairs.count { continuation.resume() }
                        }
                    }
                    try? loop.register(fds[0], interest: .read, handler: handler)
                }
            }
        }
        let entries = log.withLock { $0 }
        #expect(entries.count == 6)
        for index in stride(from: 0, to: entries.count - 1, by: 2) {
            #expect(entries[index + 1] == "work " + entries[index].dropFirst("event ".count), "\(entries)")
        }
    }
}

private final class OneShot: Selectable {
    let fd: CInt
    let loop: EventLoop
    let done: () -> Void
    init(fd: CInt, loop: EventLoop, done: @escaping () -> Void) {
        self.fd = fd
        self.loop = loop
        self.done = done
    }
    func selectorEvents(_ events: SelectorEvents) {
        loop.deregister(fd)
        done()
    }
}
