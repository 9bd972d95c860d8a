#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import HTTP1
import Synchronization

/// What one loop's connections share: the configuration, the responder, a read buffer, the
/// cached `Date` value and the set of open connections. Loop-confined.
final class ServerLoopContext {
    let loop: EventLoop
    let configuration: ServerConfiguration
    let responder: HTTPResponder
    let counters: ServerCounters
    /// One read buffer for every connection of the loop: a read is consumed before the next.
    let readBuffer: UnsafeMutableRawBufferPointer
    var connections: [ObjectIdentifier: HTTPConnection] = [:]
    var quiescing = false
    private var dateSecond = -1
    private var dateString = ""

    init(loop: EventLoop, configuration: ServerConfiguration, responder: @escaping HTTPResponder, counters: ServerCounters) {
        self.loop = loop
        self.configuration = configuration
        self.responder = responder
        self.counters = counters
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
    }

    deinit {
        readBuffer.deallocate()
    }

    /// The current `Date` field value, formatted once per second.
    var date: String {
        let now = time(nil)
        if now != dateSecond {
            dateSecond = now
            dateString = HTTPDate.format(unixSeconds: now)
        }
        return dateString
    }

    func add(_ connection: HTTPConnection) {
        connections[ObjectIdentifier(connection)] = connection
        counters.open.add(1, ordering: .relaxed)
    }

    func remove(_ connection: HTTPConnection) {
        if connections.removeValue(forKey: ObjectIdentifier(connection)) != nil {
            counters.open.subtract(1, ordering: .relaxed)
        }
    }
}

@available(*, unavailable)
extension ServerLoopContext: Sendable {}

/// Counts shared by every loop of one server.
final class ServerCounters: Sendable {
    let open = Atomic<Int>(0)
    let accepted = Atomic<Int>(0)
}
