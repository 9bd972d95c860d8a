import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// How much CPU time the CPUs this process may run on left idle lately: whether another busy
/// thread of ours would find a CPU, or take one from a process sharing the cores (an upstream
/// or a proxy on the same machine). From `/proc/stat`, counting only the CPUs in the affinity
/// mask, so that a `cpuset` container or `taskset` counts its own CPUs.
///
/// Time a loop spends polling for events (``LoopPolling``) is idle time the loop gives up at
/// once, so it counts as idle, not as work: ``recordPolling(nanoseconds:)``.
///
/// ``idleCPUs(now:)`` reads at most once per ``minimumInterval`` and answers for the interval
/// between its last two reads; an interval longer than ``maximumInterval`` (the machine's
/// load back then says little about now) starts afresh and answers nil.
public final class IdleCPU: Sendable {
    public static let minimumInterval: Duration = .milliseconds(250)
    public static let maximumInterval: Duration = .seconds(1)

    private struct Sample {
        var at: MonotonicInstant
        var idle: UInt64
    }

    private struct State {
        var last: Sample?
        /// The idle CPUs (thousandths of one) over the last interval, nil when unknown.
        var idle: Int?
    }

    private let state = Mutex(State())
    private let polled = Atomic<UInt64>(0)
    private let read: @Sendable () -> UInt64?

    /// `read` gives the idle time of the CPUs so far, in nanoseconds, polling not counted; by
    /// default from `/proc/stat`.
    public init(read: @escaping @Sendable () -> UInt64? = IdleCPU.readProcStat) {
        self.read = read
    }

    /// Time the loops of this process have spent polling for events so far.
    public var polledNanoseconds: UInt64 { polled.load(ordering: .relaxed) }

    /// Adds time a loop of this process spent polling for events.
    public func recordPolling(nanoseconds: UInt64) {
        polled.add(nanoseconds, ordering: .relaxed)
    }

    /// Idle CPU time over the last interval, polling included, in thousandths of one CPU (2000:
    /// two CPUs did nothing); nil when not known yet or the file cannot be read.
    public func idleCPUs(now: MonotonicInstant = .now()) -> Int? {
        state.withLock { state in
            if let last = state.last, last.at.nanoseconds(until: now) < Self.minimumInterval.nanosecondsClamped {
                return state.idle
            }
            guard let idle = read().map({ $0 + polled.load(ordering: .relaxed) }) else {
                state = State()
                return nil
            }
            defer { state.last = Sample(at: now, idle: idle) }
            guard let last = state.last else { return nil }
            let elapsed = last.at.nanoseconds(until: now)
            guard elapsed <= Self.maximumInterval.nanosecondsClamped, idle >= last.idle else {
                state.idle = nil
                return nil
            }
            state.idle = Int((idle - last.idle) * 1000 / elapsed)
            return state.idle
        }
    }

    // MARK: - The system's counters

    private static let ticksPerSecond = UInt64(max(1, sysconf(Int32(_SC_CLK_TCK))))

    /// The idle time of the CPUs in the affinity mask, from `/proc/stat`.
    @Sendable public static func readProcStat() -> UInt64? {
        let cpus = EventLoopGroup.affinityCPUs()
        // The `cpu` lines come first; each is under 200 bytes.
        guard let stat = SmallFile.read("/proc/stat", upTo: 256 + 200 * (cpus?.count ?? 1)),
            let ticks = idleTicks(in: stat[...], cpus: cpus)
        else { return nil }
        return ticks * (1_000_000_000 / ticksPerSecond)
    }

    /// Idle + I/O-wait ticks from `/proc/stat` (`cpu  user nice system idle iowait …`): of the
    /// `cpuN` lines whose N is marked in `cpus`, or of the first, all-CPU line when `cpus` is
    /// nil. Nil when no such line is there or one is malformed.
    static func idleTicks(in text: ArraySlice<UInt8>, cpus: [Bool]?) -> UInt64? {
        var total: UInt64 = 0
        var counted = 0
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "))
            guard let name = fields.first, name.starts(with: "cpu".utf8) else { break }
            let number = name.dropFirst(3)
            if let cpus {
                guard let index = Int(String(decoding: number, as: UTF8.self)), index >= 0, index < cpus.count,
                    cpus[index]
                else { continue }
            } else if !number.isEmpty {
                break
            }
            guard fields.count >= 6 else { return nil }
            for field in fields[4...5] {
                guard let value = UInt64(String(decoding: field, as: UTF8.self)) else { return nil }
                total += value
            }
            counted += 1
            if cpus == nil { break }
        }
        return counted > 0 ? total : nil
    }
}
