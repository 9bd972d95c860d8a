import Synchronization

/// Starts ``Service``s in order and stops them in reverse, one at a time, all within one
/// deadline.
///
/// A ``stop()`` that comes while ``start()`` is running waits for the service being started,
/// starts no more, and stops those that started. A second ``stop()`` waits for the first. The
/// task awaiting either is not cancelled out of it: a half-stopped process is worse than a
/// late one, and each stop is bounded anyway.
///
/// Services made of what others open (a store's writer, once the store is open) come in a
/// later stage (``init(stages:gracefulShutdownTimeout:log:)``): the group makes them when its
/// start reaches them, and a stage that fails is a failed start like a service's.
///
/// Events go to `log` as (event, service name): `starting`, `started`, `start_failed`,
/// `stopping`, `stopped`, and `stop_overran` for a service whose stop had not returned a
/// little after the deadline (``stopOverrunMargin``); the group then goes on without it.
package actor ServiceGroup {
    /// Makes the services of one stage, with what the services of the stages before it opened.
    package typealias Stage = @Sendable () async throws -> [any Service]

    private enum State {
        case idle
        case starting
        case running
        case stopping
        case stopped
    }

    /// How long past the deadline the group still waits for a service's stop before it goes on
    /// with the next one.
    package static let stopOverrunMargin: Duration = .milliseconds(100)

    private let stages: [Stage]
    private let gracefulShutdownTimeout: Duration
    private let log: @Sendable (String, String) -> Void
    private var state = State.idle
    /// The services whose start succeeded, in order of start.
    private var started: [any Service] = []
    private var stopRequested = false
    private var startWaiters: [CheckedContinuation<Void, Never>] = []
    private var stopWaiters: [CheckedContinuation<Void, Never>] = []

    /// A group of `services`, started in this order. Stopping all of them may take up to
    /// `gracefulShutdownTimeout`, plus ``stopOverrunMargin`` for each that overruns it.
    package init(
        services: [any Service],
        gracefulShutdownTimeout: Duration,
        log: @escaping @Sendable (String, String) -> Void = { _, _ in }
    ) {
        self.init(stages: [{ services }], gracefulShutdownTimeout: gracefulShutdownTimeout, log: log)
    }

    /// A group whose services are made in `stages`: each is called once the services of the
    /// stages before it have started (so it may use what they opened), and its services are
    /// started next, in order. All of them stop in reverse order of start, as one list.
    package init(
        stages: [Stage],
        gracefulShutdownTimeout: Duration,
        log: @escaping @Sendable (String, String) -> Void = { _, _ in }
    ) {
        self.stages = stages
        self.gracefulShutdownTimeout = gracefulShutdownTimeout
        self.log = log
    }

    /// Starts the services in order, stage by stage; if one fails (or a stage does), stops the
    /// ones already started in reverse order and rethrows. Throws ``ServiceGroupError/stopped``
    /// when ``stop()`` came first or came meanwhile (that call stops what started),
    /// ``ServiceGroupError/alreadyStarted`` when called a second time.
    package func start() async throws {
        switch state {
        case .idle: break
        case .starting, .running: throw ServiceGroupError.alreadyStarted
        case .stopping, .stopped: throw ServiceGroupError.stopped
        }
        state = .starting
        stages: for stage in stages {
            if stopRequested { break }
            let services: [any Service]
            do {
                services = try await Self.make(stage)
            } catch {
                await abandonStart()
                throw error
            }
            for service in services {
                if stopRequested { break stages }
                log("starting", service.name)
                do {
                    try await Self.start(service)
                } catch {
                    log("start_failed", service.name)
                    await abandonStart()
                    throw error
                }
                started.append(service)
                log("started", service.name)
            }
        }
        state = .running
        resumeAll(&startWaiters)
        if stopRequested { throw ServiceGroupError.stopped }
    }

    /// Stops the started services in reverse order of start, one at a time, each with the time
    /// left until the group's deadline (now + the graceful shutdown timeout). A service still
    /// stopping ``stopOverrunMargin`` after the deadline is logged and left to finish alone.
    package func stop() async {
        while true {
            switch state {
            case .idle:
                state = .stopped
                return
            case .starting:
                stopRequested = true
                await withCheckedContinuation { startWaiters.append($0) }
            case .running:
                state = .stopping
                await stopStarted()
                state = .stopped
                resumeAll(&stopWaiters)
                return
            case .stopping:
                await withCheckedContinuation { stopWaiters.append($0) }
                return
            case .stopped:
                return
            }
        }
    }

    /// ``start()``, then waits until `trigger` (an async function such as waiting for a signal)
    /// returns, then ``stop()``. A stop that comes during start ends the run without waiting for
    /// `trigger`; one that comes later does not end the wait.
    package func run(until trigger: @Sendable () async -> Void) async throws {
        do {
            try await start()
        } catch let error as ServiceGroupError where error == .stopped {
            await stop()
            return
        }
        await Self.wait(for: trigger)
        await stop()
    }

    /// Whether a stop waits for the start to finish (for tests).
    var isStopRequested: Bool { stopRequested }

    /// How many ``stop()`` calls wait for the one stopping the services (for tests).
    var waitingStopCount: Int { stopWaiters.count }

    private func stopStarted() async {
        let deadline = MonotonicInstant.now().advanced(by: gracefulShutdownTimeout)
        while let service = started.popLast() {
            log("stopping", service.name)
            let inTime = await Self.stop(service, deadline: deadline)
            log(inTime ? "stopped" : "stop_overran", service.name)
        }
    }

    /// A start that failed: what started stops, and the group is stopped.
    private func abandonStart() async {
        state = .stopping
        resumeAll(&startWaiters)
        await stopStarted()
        state = .stopped
        resumeAll(&stopWaiters)
    }

    private func resumeAll(_ waiters: inout [CheckedContinuation<Void, Never>]) {
        for waiter in waiters { waiter.resume() }
        waiters = []
    }

    // Off the actor, so a service's synchronous work never holds up a concurrent stop().
    @concurrent
    private static func start(_ service: any Service) async throws {
        try await service.start()
    }

    @concurrent
    private static func make(_ stage: Stage) async throws -> [any Service] {
        try await stage()
    }

    @concurrent
    private static func wait(for trigger: @Sendable () async -> Void) async {
        await trigger()
    }

    /// Calls `service.stop(deadline:)` and waits for it until a margin past the deadline: true
    /// when it returned in that time. An overrunning stop goes on in its own task.
    private static func stop(_ service: any Service, deadline: MonotonicInstant) async -> Bool {
        let race = StopRace()
        Task.detached {
            await service.stop(deadline: deadline)
            race.finish(inTime: true)
        }
        // A deadline already past (an earlier service overran) still leaves the margin.
        let limit = max(deadline, .now()).advanced(by: stopOverrunMargin)
        let timer = Task.detached {
            try? await Task.sleep(for: .nanoseconds(MonotonicInstant.now().nanoseconds(until: limit)))
            race.finish(inTime: false)
        }
        let inTime = await race.outcome()
        timer.cancel()
        return inTime
    }
}

/// Why a ``ServiceGroup`` did not start.
package struct ServiceGroupError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case alreadyStarted
        case stopped
    }

    private let code: Code

    private init(_ code: Code) { self.code = code }

    /// ``ServiceGroup/start()`` was called a second time.
    package static let alreadyStarted = ServiceGroupError(.alreadyStarted)
    /// ``ServiceGroup/stop()`` was called before the start finished.
    package static let stopped = ServiceGroupError(.stopped)

    package var description: String {
        switch code {
        case .alreadyStarted: "the service group was already started"
        case .stopped: "the service group was stopped before all its services started"
        }
    }
}

/// The first of a service's stop returning and its time running out; the other is ignored.
private final class StopRace: Sendable {
    private enum State {
        case pending
        case waiting(CheckedContinuation<Bool, Never>)
        case finished(Bool)
    }

    private let state = Mutex(State.pending)

    func finish(inTime: Bool) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            switch state {
            case .pending:
                state = .finished(inTime)
                return nil
            case .waiting(let waiter):
                state = .finished(inTime)
                return waiter
            case .finished:
                return nil
            }
        }
        waiter?.resume(returning: inTime)
    }

    /// Waits for the first ``finish(inTime:)``. Called once.
    func outcome() async -> Bool {
        await withCheckedContinuation { continuation in
            let outcome = state.withLock { state -> Bool? in
                switch state {
                case .pending:
                    state = .waiting(continuation)
                    return nil
                case .finished(let inTime):
                    return inTime
                case .waiting:
                    preconditionFailure("StopRace awaited twice")
                }
            }
            if let outcome { continuation.resume(returning: outcome) }
        }
    }
}
