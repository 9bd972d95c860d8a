import EventLoop
import Synchronization

/// Spreads accepted connections over the server's loops in turn. Whichever loop wakes for
/// the listening socket accepts a burst of connections; without this, one loop would own
/// most of them (a benchmark's or a proxy's connections all arrive at once) while the
/// others idle.
final class ConnectionDistributor: Sendable {
    private let contexts = Mutex<[LoopBound<ServerLoopContext>]>([])
    private let cursor = Atomic<Int>(0)

    /// Called once every loop has its context, before the listeners start.
    func setContexts(_ all: [LoopBound<ServerLoopContext>]) {
        contexts.withLock { $0 = all }
    }

    /// Starts the connection `fd` on the next loop in turn (here, when that is this loop).
    func place(fd: CInt, peer: SocketAddress?, acceptedOn context: ServerLoopContext) {
        let all = contexts.withLock { $0 }
        guard all.count > 1 else {
            Self.start(fd: fd, peer: peer, on: context)
            return
        }
        let target = all[cursor.add(1, ordering: .relaxed).oldValue % all.count]
        if target.loop === context.loop {
            Self.start(fd: fd, peer: peer, on: context)
        } else {
            target.loop.execute { Self.start(fd: fd, peer: peer, on: target.value) }
        }
    }

    private static func start(fd: CInt, peer: SocketAddress?, on context: ServerLoopContext) {
        if context.quiescing {
            // Accepted just before shutdown began: refuse rather than serve.
            Socket.close(fd)
            return
        }
        let connection = HTTPConnection(fd: fd, remoteAddress: peer, context: context)
        do {
            try connection.start()
        } catch {
            connection.close()
        }
    }
}
