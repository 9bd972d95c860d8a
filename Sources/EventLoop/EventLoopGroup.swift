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

    /// The number of online processors, the default loop count.
    public static var processorCount: Int {
        max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
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
