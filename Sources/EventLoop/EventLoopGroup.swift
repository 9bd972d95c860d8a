import Synchronization

/// A fixed set of running ``EventLoop``s, one thread each.
public final class EventLoopGroup: Sendable {
    /// The loops, in creation order.
    public let loops: [EventLoop]
    private let cursor = Atomic<Int>(0)

    /// Starts `count` loops (at least one) named `<prefix>-<index>`.
    public init(loopCount count: Int, namePrefix: String = "loop") throws(IOError) {
        var loops: [EventLoop] = []
        for index in 0..<max(1, count) {
            loops.append(try EventLoop(name: "\(namePrefix)-\(index)"))
        }
        self.loops = loops
        for loop in loops { loop.start() }
    }

    /// The CPUs this process can use, the default loop count: the online processors, fewer
    /// when its affinity mask allows fewer (`docker run --cpuset-cpus`, `taskset`), fewer
    /// again when its cgroup's CPU quota is smaller (`docker run --cpus`, a Kubernetes CPU
    /// limit; cgroup v2's `cpu.max`, rounded up). More loops than that would only take turns
    /// on the same CPUs, and under a quota be throttled together.
    public static var processorCount: Int {
        let quota = readShortFile("/sys/fs/cgroup/cpu.max").flatMap(quotaCPUs(cpuMax:))
        return availableCPUs(
            online: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), affinity: Int(CEventLoop_affinityCPUCount()), quota: quota
        )
    }

    /// The first 256 bytes of a small file such as a cgroup setting; nil when it cannot be read.
    private static func readShortFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
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
        guard fields.count == 2, let quota = Int(fields[0]), let period = Int(fields[1]), quota > 0, period > 0 else {
            return nil
        }
        return (quota + period - 1) / period
    }

    /// The next loop, round robin.
    public func next() -> EventLoop {
        let index = cursor.add(1, ordering: .relaxed).oldValue
        return loops[index % loops.count]
    }

    /// Stops every loop and waits for their threads. Not on a loop of this group.
    public func shutdown() {
        for loop in loops { loop.stopAndJoin() }
    }
}

#if canImport(Glibc)
import CEventLoop
import Glibc
#endif
