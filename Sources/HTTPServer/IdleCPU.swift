#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Synchronization

/// How much CPU time the whole machine left idle lately, from `/proc/stat`: whether a
/// second loop would find a CPU to run on, or only take one from the threads already busy
/// (a process sharing the cores, such as an upstream or a proxy on the same machine).
///
/// ``idleCPUs()`` reads the file at most once per ``minimumInterval`` and answers for the
/// interval between its last two reads; an interval longer than ``maximumInterval`` (the
/// machine's load back then says little about now) starts afresh and answers nil.
final class IdleCPU: Sendable {
    static let minimumInterval: Duration = .milliseconds(250)
    static let maximumInterval: Duration = .seconds(1)

    private struct Sample {
        var at: MonotonicInstant
        var idleTicks: UInt64
    }

    private struct State {
        var last: Sample?
        /// The idle CPUs (thousandths of one) over the last interval, nil when unknown.
        var idle: Int?
    }

    private let state = Mutex(State())
    private let read: @Sendable () -> UInt64?

    /// `read` gives the idle time of every CPU together, in clock ticks.
    init(read: @escaping @Sendable () -> UInt64? = IdleCPU.readProcStat) {
        self.read = read
    }

    /// Idle CPU time over the last interval, in thousandths of one CPU (2000: two CPUs did
    /// nothing); nil when not known yet or the file cannot be read.
    func idleCPUs(now: MonotonicInstant = .now()) -> Int? {
        state.withLock { state in
            if let last = state.last {
                let elapsed = last.at.nanoseconds(until: now)
                if elapsed < Self.minimumInterval.nanosecondsClamped { return state.idle }
                guard let ticks = read() else {
                    state = State()
                    return nil
                }
                if elapsed > Self.maximumInterval.nanosecondsClamped || ticks < last.idleTicks {
                    state = State(last: Sample(at: now, idleTicks: ticks), idle: nil)
                    return nil
                }
                let idleNanoseconds = (ticks - last.idleTicks) * 1_000_000_000 / Self.ticksPerSecond
                state.idle = Int(idleNanoseconds * 1000 / elapsed)
                state.last = Sample(at: now, idleTicks: ticks)
                return state.idle
            }
            if let ticks = read() { state.last = Sample(at: now, idleTicks: ticks) }
            return nil
        }
    }

    private static let ticksPerSecond = UInt64(max(1, sysconf(Int32(_SC_CLK_TCK))))

    /// The idle and I/O-wait ticks of all CPUs, from the first line of `/proc/stat`.
    @Sendable static func readProcStat() -> UInt64? {
        SmallFile.read("/proc/stat", upTo: 256).flatMap { idleTicks(inFirstLineOf: $0[...]) }
    }

    /// `cpu  user nice system idle iowait …`: idle + iowait, or nil for anything else.
    static func idleTicks(inFirstLineOf text: ArraySlice<UInt8>) -> UInt64? {
        let line = text.prefix { $0 != UInt8(ascii: "\n") }
        let fields = line.split(separator: UInt8(ascii: " "))
        guard fields.count >= 6, fields[0].elementsEqual("cpu".utf8) else { return nil }
        var total: UInt64 = 0
        for field in fields[4...5] {
            guard let value = UInt64(String(decoding: field, as: UTF8.self)) else { return nil }
            total += value
        }
        return total
    }
}
