import Synchronization

/// What a group's loops share when they poll for events before sleeping (``PollWindow``):
/// the longest window, and whether the machine leaves them a CPU to poll on.
///
/// A polling loop keeps a CPU to itself while it waits: its own work and its polling. A loop
/// starts to poll only when the CPUs left idle lately (``IdleCPU``, polling counted as idle)
/// and the loop's own recent work add up to a CPU for it and for every loop polling already,
/// and three tenths of a CPU more. With an upstream, a proxy, a load generator or the other
/// loops taking the cores, the loops sleep as before.
public final class LoopPolling: Sendable {
    /// What must be left beyond a CPU per polling loop (thousandths of one CPU): the demand of
    /// the rest of the machine moves within the idle reading's interval.
    static let spareCPU = 300
    /// The longest a loop polls before it sleeps.
    public let limit: Duration
    /// Where polling time is counted as idle, and where the machine's idle time is read.
    public let idleCPU: IdleCPU
    private let pollingLoops = Atomic<Int>(0)
    private let polledWakeups = Atomic<Int>(0)
    private let idleCPUs: @Sendable () -> Int?

    /// `idleCPUs` gives the CPU time left idle lately, polling included, in thousandths of one
    /// CPU, nil when unknown (then no loop polls); by default `idleCPU`'s reading.
    public init(limit: Duration, idleCPU: IdleCPU, idleCPUs: (@Sendable () -> Int?)? = nil) {
        self.limit = limit
        self.idleCPU = idleCPU
        self.idleCPUs = idleCPUs ?? { idleCPU.idleCPUs() }
    }

    /// Waits that ended on an event found while polling, across the group's loops.
    public var polledWakeupCount: Int { polledWakeups.load(ordering: .relaxed) }

    /// Counts a loop whose recent load (thousandths of its time spent working) is `load` in
    /// as polling when the machine leaves a CPU for it (true); it must then call
    /// ``endPolling(nanoseconds:caughtEvent:)``.
    func beginPolling(load: Int) -> Bool {
        guard let idle = idleCPUs() else { return false }
        let polling = pollingLoops.add(1, ordering: .relaxed).newValue
        if Self.leavesCPU(idle: idle, load: load, pollingLoops: polling) { return true }
        pollingLoops.subtract(1, ordering: .relaxed)
        return false
    }

    /// Counts the loop out again, and its polling time as idle.
    func endPolling(nanoseconds: UInt64, caughtEvent: Bool) {
        pollingLoops.subtract(1, ordering: .relaxed)
        idleCPU.recordPolling(nanoseconds: nanoseconds)
        if caughtEvent { polledWakeups.add(1, ordering: .relaxed) }
    }

    /// The rule: idle CPU time and the loop's own load cover a CPU for each polling loop, this
    /// one included, and ``spareCPU`` more.
    static func leavesCPU(idle: Int, load: Int, pollingLoops: Int) -> Bool {
        idle + load >= 1000 * pollingLoops + spareCPU
    }
}
