import Synchronization
import TestSupport
import Testing

@testable import EventLoop

/// What the mock services did, in order.
private actor Recorder {
    private(set) var events: [String] = []
    private(set) var deadlines: [String: MonotonicInstant] = [:]

    func record(_ event: String) { events.append(event) }
    func record(deadline: MonotonicInstant, for name: String) { deadlines[name] = deadline }
}

/// A gate a service waits at until the test opens it.
private final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    var waiterCount: Int { state.withLock { $0.waiters.count } }

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state -> Bool in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

private struct StartFailed: Error, Equatable {}

private struct MockService: Service {
    enum Behaviour {
        case normal
        case failsToStart
        case startWaits(Gate)
        case stopWaits(Gate)
        case stopTakes(Duration)
    }

    let name: String
    let recorder: Recorder
    var behaviour = Behaviour.normal

    func start() async throws {
        switch behaviour {
        case .failsToStart: throw StartFailed()
        case .startWaits(let gate): await gate.wait()
        default: break
        }
        await recorder.record("start \(name)")
    }

    func stop(deadline: MonotonicInstant) async {
        await recorder.record(deadline: deadline, for: name)
        switch behaviour {
        case .stopWaits(let gate): await gate.wait()
        // A service whose stop takes that long.
        case .stopTakes(let duration): try? await Task.sleep(for: duration)
        default: break
        }
        await recorder.record("stop \(name)")
    }
}

/// The group's log lines, in order.
private final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    func log(_ event: String, _ service: String) { lines.withLock { $0.append("\(event) \(service)") } }
}

@Suite("Service group")
struct ServiceGroupTests {
    private let recorder = Recorder()
    private let lines = LogLines()

    private func group(_ services: [MockService], timeout: Duration = .seconds(5)) -> ServiceGroup {
        ServiceGroup(services: services, gracefulShutdownTimeout: timeout, log: { [lines] in lines.log($0, $1) })
    }

    private func service(_ name: String, _ behaviour: MockService.Behaviour = .normal) -> MockService {
        MockService(name: name, recorder: recorder, behaviour: behaviour)
    }

    @Test("starts in order and stops in reverse, each stop with the same deadline")
    func order() async throws {
        let group = group([service("A"), service("B"), service("C")])
        try await group.start()
        await group.stop()
        #expect(await recorder.events == ["start A", "start B", "start C", "stop C", "stop B", "stop A"])
        let deadlines = await recorder.deadlines
        #expect(Set(deadlines.values).count == 1)
        #expect(
            lines.all == [
                "starting A", "started A", "starting B", "started B", "starting C", "started C",
                "stopping C", "stopped C", "stopping B", "stopped B", "stopping A", "stopped A",
            ])
    }

    @Test("a failing start stops the services started before it, in reverse, and starts no more")
    func failingStart() async throws {
        let group = group([service("A"), service("B"), service("C", .failsToStart), service("D")])
        await #expect(throws: StartFailed()) { try await group.start() }
        #expect(await recorder.events == ["start A", "start B", "stop B", "stop A"])
        #expect(lines.all.contains("start_failed C"))
        await group.stop()
        #expect(await recorder.events.count == 4)
        await #expect(throws: ServiceGroupError.stopped) { try await group.start() }
    }

    @Test("a stop that overruns the deadline does not hold the group: the next services still stop")
    func overrunningStop() async throws {
        let group = group([service("A"), service("B", .stopTakes(.seconds(60)))], timeout: .milliseconds(500))
        try await group.start()
        await group.stop()
        // The group returned while B's stop still sleeps; A was stopped after B overran
        // (A may overrun its margin too on a loaded machine: then it finishes a little later).
        #expect(lines.all.contains("stop_overran B"))
        #expect(lines.all.firstIndex(of: "stop_overran B")! < lines.all.firstIndex(of: "stopping A")!)
        await eventually("A and B started, then A stopped") {
            await recorder.events == ["start A", "start B", "stop A"]
        }
    }

    @Test("a stop during start waits for the service being started, starts no more, then stops those started")
    func stopDuringStart() async throws {
        let gate = Gate()
        let group = group([service("A"), service("B", .startWaits(gate)), service("C")])
        let starting = Task { try await group.start() }
        await eventually("the service waits at its gate") { gate.waiterCount == 1 }
        let stopping = Task { await group.stop() }
        await eventually("the group's stop is requested") { await group.isStopRequested }
        #expect(await recorder.events == ["start A"])
        gate.open()
        await stopping.value
        #expect(await recorder.events == ["start A", "start B", "stop B", "stop A"])
        await #expect(throws: ServiceGroupError.stopped) { try await starting.value }
    }

    @Test("a second stop waits for the first and stops nothing again")
    func secondStop() async throws {
        let gate = Gate()
        // A deadline no loaded machine reaches: the first stop must still be waiting at the gate
        // when the second comes, not have given up on A.
        let group = group([service("A", .stopWaits(gate))], timeout: .seconds(600))
        try await group.start()
        let first = Task { await group.stop() }
        await eventually("the service waits at its gate") { gate.waiterCount == 1 }
        let second = Task {
            await group.stop()
            await recorder.record("second stop returned")
        }
        await eventually("one stop waits") { await group.waitingStopCount == 1 }
        gate.open()
        await second.value
        await first.value
        #expect(await recorder.events == ["start A", "stop A", "second stop returned"])
    }

    @Test("a stop before start leaves nothing to start")
    func stopBeforeStart() async throws {
        let group = group([service("A")])
        await group.stop()
        await #expect(throws: ServiceGroupError.stopped) { try await group.start() }
        try await group.run(until: {})
        #expect(await recorder.events.isEmpty)
    }

    @Test("a second start is refused")
    func secondStart() async throws {
        let group = group([service("A")])
        try await group.start()
        await #expect(throws: ServiceGroupError.alreadyStarted) { try await group.start() }
        await group.stop()
        #expect(await recorder.events == ["start A", "stop A"])
    }

    @Test("runs until the trigger returns, then stops")
    func runUntilTrigger() async throws {
        let trigger = Gate()
        let group = group([service("A"), service("B")])
        let running = Task { try await group.run(until: { await trigger.wait() }) }
        await eventually("the service waits for its trigger") { trigger.waiterCount == 1 }
        #expect(await recorder.events == ["start A", "start B"])
        trigger.open()
        try await running.value
        #expect(await recorder.events == ["start A", "start B", "stop B", "stop A"])
    }

    @Test("makes a stage's services once the stages before it started, and stops every stage's in reverse")
    func stages() async throws {
        let recorder = self.recorder
        let first = service("A")
        let group = ServiceGroup(
            stages: [
                { [first] },
                {
                    // What a later stage makes may depend on what started before it.
                    await recorder.record("make second stage")
                    return [MockService(name: "B", recorder: recorder), MockService(name: "C", recorder: recorder)]
                },
            ],
            gracefulShutdownTimeout: .seconds(5), log: { [lines] in lines.log($0, $1) })
        try await group.start()
        await group.stop()
        #expect(
            await recorder.events == [
                "start A", "make second stage", "start B", "start C", "stop C", "stop B", "stop A",
            ])
        #expect(lines.all.first == "starting A" && lines.all.last == "stopped A")
    }

    @Test("a stage that fails stops what the stages before it started, and makes no more")
    func failingStage() async throws {
        let recorder = self.recorder
        let group = ServiceGroup(
            stages: [
                { [MockService(name: "A", recorder: recorder)] },
                { throw StartFailed() },
                {
                    await recorder.record("make third stage")
                    return [MockService(name: "C", recorder: recorder)]
                },
            ],
            gracefulShutdownTimeout: .seconds(5))
        await #expect(throws: StartFailed()) { try await group.start() }
        #expect(await recorder.events == ["start A", "stop A"])
        await #expect(throws: ServiceGroupError.stopped) { try await group.start() }
    }

    @Test("a stop during a stage's service's start makes no later stage")
    func stopDuringStagedStart() async throws {
        let recorder = self.recorder
        let gate = Gate()
        let group = ServiceGroup(
            stages: [
                { [MockService(name: "A", recorder: recorder, behaviour: .startWaits(gate))] },
                {
                    await recorder.record("make second stage")
                    return [MockService(name: "B", recorder: recorder)]
                },
            ],
            gracefulShutdownTimeout: .seconds(5))
        let starting = Task { try await group.start() }
        await eventually("the first stage waits at its gate") { gate.waiterCount == 1 }
        let stopping = Task { await group.stop() }
        await eventually("the stop is requested") { await group.isStopRequested }
        gate.open()
        await #expect(throws: ServiceGroupError.stopped) { try await starting.value }
        await stopping.value
        #expect(await recorder.events == ["start A", "stop A"])
    }

    @Test("stops an event loop group through its service, after the work queued on its loops")
    func eventLoopGroupService() async throws {
        let loops = try EventLoopGroup(loopCount: 2)
        let ran = Atomic<Int>(0)
        let group = ServiceGroup(services: [EventLoopGroupService(group: loops)], gracefulShutdownTimeout: .seconds(5))
        try await group.start()
        for loop in loops.loops { loop.execute { ran.add(1, ordering: .relaxed) } }
        await group.stop()
        #expect(ran.load(ordering: .relaxed) == 2)
    }
}
