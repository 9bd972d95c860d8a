import EventLoop

#if canImport(Glibc)
    import Glibc
#endif

/// Accepts connections from the listening socket every loop shares (registered with
/// `EPOLLEXCLUSIVE`, so a new connection wakes one loop), and hands them to the
/// ``ConnectionDistributor``, which places them on the loops.
final class Listener: Selectable {
    private let fd: CInt
    private let context: ServerLoopContext
    private let distributor: ConnectionDistributor
    private var registered = false
    private var stopped = false

    init(fd: CInt, context: ServerLoopContext, distributor: ConnectionDistributor) {
        self.fd = fd
        self.context = context
        self.distributor = distributor
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

    /// At shutdown, once every loop stopped accepting and before the socket is closed: takes
    /// the connections the kernel completed meanwhile, which closing it would reset (a proxy
    /// sees its request fail, and may not send it again), and starts them on this loop, which
    /// is quiescing: one whose request has come is served, one that sent nothing is closed.
    func drainBacklog() {
        while true {
            guard let result = try? Socket.accept(fd), case .processed(let accepted) = result else { return }
            context.counters.open.add(1, ordering: .relaxed)
            context.counters.accepted.add(1, ordering: .relaxed)
            context.occupancy.open.add(1, ordering: .relaxed)
            Socket.setNoDelay(accepted.fd)
            ConnectionDistributor.start(fd: accepted.fd, peer: accepted.peer, on: context)
        }
    }

    func selectorEvents(_ events: SelectorEvents) {
        // A bounded batch per wake-up, so accepting never starves the loop's connections.
        for _ in 0..<64 {
            guard !stopped else { return }
            if context.counters.open.load(ordering: .relaxed) >= context.configuration.maxConnections {
                // Full: leave new connections in the listen backlog until some close.
                pause(for: .milliseconds(10))
                return
            }
            let result: IOResult<(fd: CInt, peer: SocketAddress?)>
            do {
                result = try Socket.accept(fd)
            } catch {
                handleAcceptError(error)
                return
            }
            guard case .processed(let accepted) = result else { return }
            // Counted as open from here, not from when its loop starts it: a connection handed
            // to another loop is not counted there yet, and the cap must hold meanwhile.
            context.counters.open.add(1, ordering: .relaxed)
            context.counters.accepted.add(1, ordering: .relaxed)
            Socket.setNoDelay(accepted.fd)
            distributor.place(fd: accepted.fd, peer: accepted.peer, acceptedOn: context)
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
