import Synchronization
import Testing

@testable import EventLoop

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Idle CPU time of the CPUs the process may use")
struct IdleCPUTests {
    private static let stat = """
        cpu  4705 356 584 3699 23 0 11 0 0 0
        cpu0 2352 178 292 1849 11 0 5 0 0 0
        cpu1 2353 178 292 1000 2 0 6 0 0 0
        cpu2 0 0 0 850 10 0 0 0 0 0
        intr 1 2 3 4 5 6 7
        """

    @Test("reads idle and I/O-wait ticks of the CPUs in the mask, or of the all-CPU line without one")
    func parse() {
        let text = ArraySlice(Self.stat.utf8)
        #expect(IdleCPU.idleTicks(in: text, cpus: nil) == 3722)
        #expect(IdleCPU.idleTicks(in: text, cpus: [true, true, true]) == 1860 + 1002 + 860)
        #expect(IdleCPU.idleTicks(in: text, cpus: [false, true]) == 1002, "only CPU 1")
        #expect(
            IdleCPU.idleTicks(in: text, cpus: [true, false, true, true]) == 1860 + 860, "a CPU not listed adds nothing")
        #expect(IdleCPU.idleTicks(in: text, cpus: [false, false, false, false, true]) == nil, "no line for the mask")
        for bad in [
            "", "cpu  1 2 3", "intr 1 2 3 4 5 6", "cpu  1 2 3 x 5 6", "cpu  1 2 3 -4 5 6", "cpu0 1 2 3 4 5 6\n",
        ] {
            #expect(IdleCPU.idleTicks(in: ArraySlice(bad.utf8), cpus: nil) == nil, "\(bad)")
        }
        #expect(
            IdleCPU.idleTicks(in: ArraySlice("cpu0 1 2 3 x 5 6\n".utf8), cpus: [true]) == nil,
            "a malformed line counted")
    }

    @Test("answers for the interval between its last two reads, reading at most every 250 ms, polling counted as idle")
    func intervals() {
        let idle = Mutex<UInt64?>(1_000_000_000)
        let reads = Atomic(0)
        let sampler = IdleCPU(read: {
            reads.add(1, ordering: .relaxed)
            return idle.withLock { $0 }
        })
        let start = MonotonicInstant.now()
        func at(_ milliseconds: Int) -> MonotonicInstant { start.advanced(by: .milliseconds(milliseconds)) }
        func add(milliseconds: UInt64) { idle.withLock { $0 = $0.map { $0 + milliseconds * 1_000_000 } } }
        #expect(sampler.idleCPUs(now: at(0)) == nil, "one read: no interval yet")
        add(milliseconds: 500) // half a CPU-second idle …
        #expect(sampler.idleCPUs(now: at(100)) == nil, "too soon for another read")
        #expect(reads.load(ordering: .relaxed) == 1)
        #expect(sampler.idleCPUs(now: at(500)) == 1000) // … in half a second: one CPU idle
        #expect(sampler.idleCPUs(now: at(600)) == 1000, "the last interval's figure, without a read")
        #expect(reads.load(ordering: .relaxed) == 2)
        add(milliseconds: 100)
        sampler.recordPolling(nanoseconds: 150_000_000) // a loop polled for 150 ms of the next 500
        #expect(sampler.idleCPUs(now: at(1000)) == 500, "100 ms idle and 150 ms polling in 500 ms")
        add(milliseconds: 1000) // one CPU-second idle in 2 s …
        #expect(sampler.idleCPUs(now: at(3000)) == nil, "an interval over a second says little about now")
        add(milliseconds: 125) // … an eighth in a quarter of a second
        #expect(sampler.idleCPUs(now: at(3250)) == 500)
        idle.withLock { $0 = nil }
        #expect(sampler.idleCPUs(now: at(3600)) == nil, "an unreadable file")
    }

    @Test("reads this machine's /proc/stat for the CPUs it may use")
    func live() async throws {
        #expect(IdleCPU.readProcStat() != nil)
        // The sampler measures an interval, so one has to pass. A sleep of 300 ms can take over a
        // second while the suites run in parallel: then the interval is too long to answer for,
        // and the test tries again.
        var idle: Int?
        for _ in 0..<10 where idle == nil {
            let sampler = IdleCPU()
            _ = sampler.idleCPUs()
            try await Task.sleep(for: .milliseconds(300))
            idle = sampler.idleCPUs()
        }
        let measured = try #require(idle)
        #expect(measured >= 0 && measured <= 1000 * Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) + 100)
    }
}

@Suite("Polling for events before sleeping")
struct LoopPollingTests {
    @Test("the window opens and doubles on short waits, holds when a wait ends in it, halves and closes on long ones")
    func window() {
        var window = PollWindow(limit: 100_000)
        let steps: [(waited: UInt64, after: UInt64)] = [
            (200_000, 0), // long, closed: stays closed
            (50_000, 10_000), // short: opens
            (50_000, 20_000), (50_000, 40_000), (50_000, 80_000),
            (50_000, 80_000), // ended within the window: holds
            (90_000, 100_000), // short, beyond the window: doubles, up to the limit
            (100_000, 100_000),
            (150_000, 50_000), // longer than the limit: halves
            (150_000, 25_000), (150_000, 12_500),
            (150_000, 0), // below the start: closes
            (5_000, 10_000),
        ]
        for (index, step) in steps.enumerated() {
            window.record(waited: step.waited)
            #expect(window.current == step.after, "step \(index): waited \(step.waited)")
        }
        var off = PollWindow(limit: 0)
        off.record(waited: 1)
        #expect(off.current == 0, "a limit of 0 never opens")
    }

    @Test("a loop polls when idle CPU and its own work cover a CPU for each polling loop and 0.3 more")
    func leavesCPU() {
        let cases: [(idle: Int, load: Int, loops: Int, polls: Bool)] = [
            (1000, 500, 1, true), // one CPU idle, the loop half busy
            (1000, 0, 1, false), // only one idle CPU: nothing spare for the rest of the machine
            (1300, 0, 1, true),
            (100, 800, 1, false), // the other CPU busy with an upstream and a load generator
            (700, 500, 1, false),
            (800, 500, 1, true),
            (1500, 500, 2, false), // a second polling loop needs a second CPU
            (2000, 300, 2, true),
        ]
        for item in cases {
            #expect(
                LoopPolling.leavesCPU(idle: item.idle, load: item.load, pollingLoops: item.loops) == item.polls,
                "\(item)")
        }
        let polling = LoopPolling(limit: .microseconds(100), idleCPU: IdleCPU(read: { nil }), idleCPUs: { 1300 })
        #expect(polling.beginPolling(load: 0))
        #expect(!polling.beginPolling(load: 800), "with one loop polling, a second needs a second CPU")
        polling.endPolling(nanoseconds: 1000, caughtEvent: true)
        #expect(polling.beginPolling(load: 0), "the first loop stopped polling")
        polling.endPolling(nanoseconds: 1000, caughtEvent: false)
        #expect(polling.polledWakeupCount == 1)
        let unknown = LoopPolling(limit: .microseconds(100), idleCPU: IdleCPU(read: { nil }))
        #expect(!unknown.beginPolling(load: 1000), "no idle reading: no polling")
    }

    @Test("a loop whose events come quickly catches them by polling, and answers every one")
    func pollsQuickEvents() async throws {
        let polling = LoopPolling(limit: .microseconds(500), idleCPU: IdleCPU(read: { nil }), idleCPUs: { 2000 })
        let result = try await Self.onOwnThread { try exchange(polling: polling, stopOnceCaught: true) }
        #expect(result.answered)
        #expect(polling.polledWakeupCount > 0)
        #expect(result.timerFired, "timers fire while the loop polls")
    }

    @Test("a loop does not poll when the machine leaves no CPU, or when its waits are long")
    func sleepsOtherwise() async throws {
        let busy = LoopPolling(limit: .microseconds(500), idleCPU: IdleCPU(read: { nil }), idleCPUs: { 0 })
        #expect(try await Self.onOwnThread { try exchange(polling: busy, rounds: 2000) }.answered)
        #expect(busy.polledWakeupCount == 0)
        let slow = LoopPolling(limit: .microseconds(500), idleCPU: IdleCPU(read: { nil }), idleCPUs: { 2000 })
        let paced = try await Self.onOwnThread { try exchange(polling: slow, rounds: 40, pause: .milliseconds(2)) }
        #expect(paced.answered)
        #expect(slow.polledWakeupCount == 0, "every wait lasted over 2 ms: the window never opened")
    }

    /// Runs `body` on a thread of its own: the exchange blocks in poll(2) and usleep, which on a
    /// thread of the tests' shared pool would hold up every other test meanwhile.
    private static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await DetachedThread.run { () throws(any Error) -> T in try body() }
    }

    /// Sends one byte at a time to an echo handler on a polling loop and reads it back, up to
    /// `rounds` times (or until a wait ended by polling, with `stopOnceCaught`), pausing
    /// `pause` between rounds. A timer is set 20 ms ahead at the start.
    private func exchange(
        polling: LoopPolling, rounds: Int = 20_000, pause: Duration = .zero, stopOnceCaught: Bool = false
    ) throws -> (answered: Bool, timerFired: Bool) {
        let group = try EventLoopGroup(loopCount: 1, polling: polling)
        defer { group.shutdown() }
        let loop = group.loops[0]
        var fds: [CInt] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer {
            close(fds[0])
            close(fds[1])
        }
        let served = fds[0]
        let timerFired = Atomic(false)
        let registered = Atomic(false)
        loop.execute {
            let echo = Echo(fd: served)
            try? loop.register(served, interest: .read, handler: echo)
            loop.scheduleTimer(at: .now().advanced(by: .milliseconds(20))) {
                timerFired.store(true, ordering: .relaxed)
            }
            registered.store(true, ordering: .releasing)
        }
        let deadline = MonotonicInstant.now().advanced(by: .seconds(20))
        // Polls: the loop registers on its own thread.
        while !registered.load(ordering: .acquiring) && MonotonicInstant.now() < deadline { usleep(100) }
        var answered = true
        for round in 0..<rounds {
            var byte = UInt8(truncatingIfNeeded: round)
            guard write(fds[1], &byte, 1) == 1 else {
                answered = false
                break
            }
            var pollFD = pollfd(fd: fds[1], events: Int16(POLLIN), revents: 0)
            var back: UInt8 = 0
            guard poll(&pollFD, 1, 5000) == 1, read(fds[1], &back, 1) == 1, back == byte else {
                answered = false
                break
            }
            if stopOnceCaught && polling.polledWakeupCount > 0 && round >= 100 { break }
            // The events' pace: long waits between them keep the window closed.
            if pause > .zero { usleep(UInt32(pause.nanosecondsClamped / 1000)) }
        }
        // Polls for the timer set 20 ms ahead.
        while !timerFired.load(ordering: .relaxed) && MonotonicInstant.now() < deadline { usleep(1000) }
        return (answered, timerFired.load(ordering: .relaxed))
    }
}

/// Writes back what it reads.
private final class Echo: Selectable {
    let fd: CInt
    init(fd: CInt) { self.fd = fd }
    func selectorEvents(_ events: SelectorEvents) {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, 64) }
        if count > 0 { _ = buffer.withUnsafeBytes { write(fd, $0.baseAddress, count) } }
    }
}
