import Synchronization

/// How many of a client's connections are up, kept by the connections on their loops and
/// read from any thread (for `isUp` and a metric).
final class RedisStatus: Sendable {
    private let up = Atomic<Int>(0)

    var connectedCount: Int { up.load(ordering: .relaxed) }

    func connected() { up.add(1, ordering: .relaxed) }
    func disconnected() { up.subtract(1, ordering: .relaxed) }
}
