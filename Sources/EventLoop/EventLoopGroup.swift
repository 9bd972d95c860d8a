import Synchronization

/// A fixed set of running ``EventLoop``s, one thread each.
public final class EventLoopGroup: Sendable {
    /// The loops, in creation order.
    public let loops: [EventLoop]
    /// The idle CPU time of the machine lately, the loops' polling counted as idle.
    public let idleCPU: IdleCPU
    /// What the loops share when they poll for events before sleeping; nil when they do not.
    public let polling: LoopPolling?
    private let cursor = Atomic<Int>(0)
    private let stopped = Mutex(false)

    /// Starts `count` loops (at least one) named `<prefix>-<index>`. With `polling`, a loop
    /// whose events come quickly polls for them before it sleeps, while the machine leaves it
    /// a CPU (``LoopPolling``).
    public init(loopCount count: Int, namePrefix: String = "loop", polling: LoopPolling? = nil) throws(IOError) {
        self.polling = polling
        idleCPU = polling?.idleCPU ?? IdleCPU()
        var loops: [EventLoop] = []
        for index in 0..<max(1, count) {
            loops.append(try EventLoop(name: "\(namePrefix)-\(index)", polling: polling))
        }
        self.loops = loops
        for loop in loops { loop.start() }
    }

    /// The CPUs this process can use, the default loop count: the online processors, fewer
    /// when its affinity mask allows fewer (`docker run --cpuset-cpus`, `taskset`), fewer
    /// again when its cgroup's CPU quota is smaller (`docker run --cpus`, a Kubernetes CPU
    /// limit; cgroup v2's `cpu.max` or v1's `cpu.cfs_quota_us`, rounded up). More loops than
    /// that would only take turns on the same CPUs, and under a quota be throttled together.
    public static var processorCount: Int {
        availableCPUs(
            online: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), affinity: affinityCPUs()?.count(where: { $0 }) ?? 0,
            quota: cgroupQuotaCPUs()
        )
    }

    /// The CPU numbers the process can have, from the configured processors.
    private static let configuredCPUs = Int(sysconf(Int32(_SC_NPROCESSORS_CONF))).clamped(to: 1...4096)

    /// The process's affinity mask: true for each CPU number it may run on; nil when unknown.
    static func affinityCPUs() -> [Bool]? {
        var flags = [UInt8](repeating: 0, count: configuredCPUs)
        let marked = flags.withUnsafeMutableBufferPointer { CEventLoop_affinityCPUs($0.baseAddress, CInt($0.count)) }
        return marked > 0 ? flags.map { $0 != 0 } : nil
    }

    /// The CPUs the cgroup's quota allows, rounded up, from the v2 file or else the v1 pair; nil
    /// without a quota. Under v1 the process's own cgroup (`/proc/self/cgroup`) is looked for
    /// below the controller's mount, then the mount itself (what a container sees).
    public static func cgroupQuotaCPUs() -> Int? {
        if let cpuMax = readShortFile("/sys/fs/cgroup/cpu.max") { return quotaCPUs(cpuMax: cpuMax) }
        let own = readShortFile("/proc/self/cgroup", limit: 4096).flatMap(cgroupV1CPUPath(in:)) ?? ""
        for mount in ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"] {
            for directory in Set([mount + own, mount]).sorted(by: { $0.count > $1.count }) {
                if let quota = readShortFile(directory + "/cpu.cfs_quota_us"),
                    let period = readShortFile(directory + "/cpu.cfs_period_us")
                {
                    return quotaCPUs(cfsQuota: quota, cfsPeriod: period)
                }
            }
        }
        return nil
    }

    /// The path of the v1 `cpu` controller's cgroup in `/proc/self/cgroup` ("4:cpu,cpuacct:/a/b"
    /// gives "/a/b"); "" for the root, nil when there is no such line.
    static func cgroupV1CPUPath(in text: String) -> String? {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, fields[1].split(separator: ",").contains("cpu") else { continue }
            return fields[2] == "/" ? "" : String(fields[2])
        }
        return nil
    }

    /// A small text file such as a cgroup setting; nil when it cannot be read or is empty.
    private static func readShortFile(_ path: String, limit: Int = 256) -> String? {
        guard let bytes = SmallFile.read(path, upTo: limit), !bytes.isEmpty else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The smallest of the known counts (those above 0), at least 1.
    static func availableCPUs(online: Int, affinity: Int, quota: Int?) -> Int {
        let known = [online, affinity, quota ?? 0].filter { $0 > 0 }
        return max(1, known.min() ?? 1)
    }

    /// The CPUs a cgroup v2 `cpu.max` ("QUOTA PERIOD" in microseconds, or "max PERIOD") allows,
    /// rounded up; nil without a quota or for anything unreadable.
    static func quotaCPUs(cpuMax: String) -> Int? {
        let fields = cpuMax.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count == 2, let quota = Int(fields[0]), let period = Int(fields[1]) else { return nil }
        return quotaCPUs(quota: quota, period: period)
    }

    /// The same from cgroup v1's `cpu.cfs_quota_us` ("-1": no quota) and `cpu.cfs_period_us`.
    static func quotaCPUs(cfsQuota: String, cfsPeriod: String) -> Int? {
        func number(_ text: String) -> Int? { Int(text.filter { $0 != "\n" && $0 != " " }) }
        guard let quota = number(cfsQuota), let period = number(cfsPeriod) else { return nil }
        return quotaCPUs(quota: quota, period: period)
    }

    private static func quotaCPUs(quota: Int, period: Int) -> Int? {
        guard quota > 0, period > 0 else { return nil }
        return (quota + period - 1) / period
    }

    /// The next loop, round robin.
    public func next() -> EventLoop {
        let index = cursor.add(1, ordering: .relaxed).oldValue
        return loops[index % loops.count]
    }

    /// Stops every loop and waits for their threads. Not on a loop of this group. Blocks: from
    /// a task, use ``shutdownGracefully()``. A second call waits for the first and does nothing.
    public func shutdown() {
        // Held while joining, so a concurrent second call returns only once the loops are gone.
        stopped.withLock { stopped in
            guard !stopped else { return }
            for loop in loops { loop.stopAndJoin() }
            stopped = true
        }
    }

    /// ``shutdown()`` on a thread of its own, so the joins hold none of Swift's shared threads.
    /// Each loop runs the work already queued on it, then stops. Not from a task that runs on
    /// one of this group's loops: it could not be resumed once they stop.
    public func shutdownGracefully() async {
        await DetachedThread.run { [self] in shutdown() }
    }
}

#if canImport(Glibc)
    import CEventLoop
    import Glibc
#endif

extension Comparable {
    fileprivate func clamped(to range: ClosedRange<Self>) -> Self {
        min(max(self, range.lowerBound), range.upperBound)
    }
}
