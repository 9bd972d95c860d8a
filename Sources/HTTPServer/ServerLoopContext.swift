import EventLoop
import HTTP1
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What one loop's connections share: the configuration, the responder, a read buffer, the
/// cached `Date` value and the set of open connections. Loop-confined.
final class ServerLoopContext {
    let loop: EventLoop
    let configuration: ServerConfiguration
    let responder: HTTPResponder
    let counters: ServerCounters
    /// This loop's open connections, for the ``ConnectionDistributor`` on other loops.
    let occupancy: LoopOccupancy
    /// Places connections over the server's loops, and moves them off this loop when it is saturated.
    let distributor: ConnectionDistributor
    /// One read buffer for every connection of the loop: a read is consumed before the next.
    let readBuffer: UnsafeMutableRawBufferPointer
    var connections: [ObjectIdentifier: HTTPConnection] = [:]
    var quiescing = false
    private var dateCache = HTTPDateCache()

    init(
        loop: EventLoop, configuration: ServerConfiguration, responder: @escaping HTTPResponder,
        counters: ServerCounters,
        occupancy: LoopOccupancy, distributor: ConnectionDistributor
    ) {
        self.loop = loop
        self.configuration = configuration
        self.responder = responder
        self.counters = counters
        self.occupancy = occupancy
        self.distributor = distributor
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
    }

    deinit {
        readBuffer.deallocate()
    }

    /// The current `Date` field value, formatted once per second.
    var date: String {
        dateCache.string(for: time(nil))
    }

    func add(_ connection: HTTPConnection) {
        // Both counts already include it: the listener reserved the server's slot when
        // accepting, the distributor this loop's when choosing it.
        connections[ObjectIdentifier(connection)] = connection
    }

    func remove(_ connection: HTTPConnection) {
        if connections.removeValue(forKey: ObjectIdentifier(connection)) != nil { giveBack() }
    }

    /// Gives back the server's and this loop's count of a connection that closed, or that was
    /// counted for this loop and never started.
    func giveBack() {
        counters.open.subtract(1, ordering: .relaxed)
        occupancy.open.subtract(1, ordering: .relaxed)
    }

    /// The connection leaves for another loop, which counts it already: it stays open for the server.
    func detach(_ connection: HTTPConnection) {
        if connections.removeValue(forKey: ObjectIdentifier(connection)) != nil {
            occupancy.open.subtract(1, ordering: .relaxed)
            counters.moved.add(1, ordering: .relaxed)
        }
    }
}

@available(*, unavailable)
extension ServerLoopContext: Sendable {}

/// Counts shared by every loop of one server.
final class ServerCounters: Sendable {
    let open = Atomic<Int>(0)
    let accepted = Atomic<Int>(0)
    /// Kept-alive connections handed from a saturated loop to another.
    let moved = Atomic<Int>(0)
}

/// Connections open on one loop or on their way to it: counted by the loop that chooses it,
/// given back by the loop itself when one closes or leaves.
final class LoopOccupancy: Sendable {
    let open = Atomic<Int>(0)
}
