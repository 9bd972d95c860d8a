#if canImport(Glibc)
import Glibc
#endif
import EventLoop

/// Accepts connections for one loop from the listening socket every loop shares
/// (registered with `EPOLLEXCLUSIVE`, so a new connection wakes one loop).
final class Listener: Selectable {
    private let fd: CInt
    private let context: ServerLoopContext
    private var registered = false
    private var stopped = false

    init(fd: CInt, context: ServerLoopContext) {
        self.fd = fd
        self.context = context
    }

    func start() throws(IOError) {
        try context.loop.register(fd, interest: [.read, .exclusive], handler: self)
        registered = true
    }

    /// Stops accepting on this loop. The caller closes the socket once every loop stopped.
    func stop() {
        stopped = true
        if registered {
            context.loop.deregister(fd)
            registered = false
        }
    }

    func selectorEvents(_ events: SelectorEvents) {
        // A bounded batch per wake-up keeps one loop from taking every connection of a burst.
        for _ in 0..<64 {
            guard !stopped else { return }
            let result: IOResult<(fd: CInt, peer: SocketAddress?)>
            do {
                result = try Socket.accept(fd)
            } catch {
                handleAcceptError(error)
                return
            }
            guard case .processed(let accepted) = result else { return }
            let configuration = context.configuration
            if context.counters.open.load(ordering: .relaxed) >= configuration.maxConnections {
                Socket.close(accepted.fd)
                continue
            }
            context.counters.accepted.add(1, ordering: .relaxed)
            Socket.setNoDelay(accepted.fd)
            let connection = HTTPConnection(fd: accepted.fd, remoteAddress: accepted.peer, context: context)
            do {
                try connection.start()
            } catch {
                connection.close()
            }
        }
    }

    private func handleAcceptError(_ error: IOError) {
        switch error.errnoCode {
        case EMFILE, ENFILE, ENOBUFS, ENOMEM:
            // Out of descriptors or memory: the socket stays readable, so stop watching it
            // for a moment instead of spinning, and let closing connections free resources.
            pause(for: .milliseconds(100))
        default:
            // ECONNABORTED, EPROTO and friends concern one client only.
            break
        }
    }

    private func pause(for duration: Duration) {
        guard registered else { return }
        context.loop.deregister(fd)
        registered = false
        context.loop.scheduleTimer(at: MonotonicInstant.now().advanced(by: duration)) { [self] in
            guard !stopped, !registered else { return }
            try? start()
        }
    }
}

@available(*, unavailable)
extension Listener: Sendable {}
