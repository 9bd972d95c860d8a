public import EventLoop
import HTTP1
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP/1.1 server over non-blocking sockets on a group of event loops.
///
/// ```swift
/// var router = Router()
/// router.get("/hello") { _ in .text("hi") }
/// let server = HTTPServer(configuration: config, responder: router.buildResponder().respond(to:))
/// let address = try await server.start()
/// ...
/// await server.shutdown(gracePeriod: .seconds(10))
/// ```
///
/// Every loop accepts from one shared listening socket; a connection stays on the loop that
/// accepted it, and its handler runs on that loop as a task executor.
public final class HTTPServer: Sendable {
    /// The configuration the server was created with.
    public let configuration: ServerConfiguration
    private let group: EventLoopGroup
    private let ownsGroup: Bool
    private let responder: HTTPResponder
    private let counters = ServerCounters()
    private let state = Mutex(RunState())

    private struct RunState: ~Copyable {
        var listenerFD: CInt = -1
        var localAddress: SocketAddress?
        var contexts: [LoopBound<LoopState>] = []
        var stopped = false
    }

    /// Loop-confined pieces of one loop.
    final class LoopState {
        let context: ServerLoopContext
        let listener: Listener
        init(context: ServerLoopContext, listener: Listener) {
            self.context = context
            self.listener = listener
        }
    }

    /// Creates a server. With no `group`, it starts its own loops (``ServerConfiguration/loopCount``)
    /// and stops them on shutdown.
    public init(configuration: ServerConfiguration, group: EventLoopGroup? = nil, responder: @escaping HTTPResponder)
        throws(IOError)
    {
        self.configuration = configuration
        if let group {
            self.group = group
            ownsGroup = false
        } else {
            self.group = try EventLoopGroup(loopCount: configuration.loopCount, namePrefix: "http")
            ownsGroup = true
        }
        self.responder = responder
    }

    /// The address the server listens on, once started (with the real port when 0 was asked).
    public var localAddress: SocketAddress? {
        state.withLock { $0.localAddress }
    }

    /// Open client connections, across loops.
    public var openConnectionCount: Int { counters.open.load(ordering: .relaxed) }

    /// Connections accepted since start.
    public var acceptedConnectionCount: Int { counters.accepted.load(ordering: .relaxed) }

    /// Binds, listens and starts accepting. Returns the bound address.
    @discardableResult
    public func start() async throws -> SocketAddress {
        let resolved = try SocketAddress.resolve(host: configuration.host, port: configuration.port)
        Socket.raiseOpenFileLimit()
        var lastError: (any Error)?
        var listenerFD: CInt = -1
        for candidate in resolved {
            do {
                listenerFD = try Socket.listen(on: candidate, backlog: configuration.backlog)
                break
            } catch {
                lastError = error
            }
        }
        guard listenerFD >= 0 else { throw lastError ?? IOError(errnoCode: EADDRNOTAVAIL, reason: "bind") }
        let address = try Socket.localAddress(listenerFD)

        var contexts: [LoopBound<LoopState>] = []
        let distributor = ConnectionDistributor(idleCPUs: { [group] in group.idleCPU.idleCPUs() })
        do {
            var loopContexts: [(context: LoopBound<ServerLoopContext>, occupancy: LoopOccupancy)] = []
            for loop in group.loops {
                let fd = listenerFD
                let occupancy = LoopOccupancy()
                let (state, context) = try await Self.onLoop(loop) {
                    [configuration, responder, counters] () throws(IOError) in
                    let context = ServerLoopContext(
                        loop: loop, configuration: configuration, responder: responder, counters: counters,
                        occupancy: occupancy,
                        distributor: distributor
                    )
                    let listener = Listener(fd: fd, context: context, distributor: distributor)
                    return (
                        LoopBound(LoopState(context: context, listener: listener), loop: loop),
                        LoopBound(context, loop: loop)
                    )
                }
                contexts.append(state)
                loopContexts.append((context, occupancy))
            }
            distributor.setLoops(loopContexts, maxConnections: configuration.maxConnections)
            for bound in contexts {
                try await Self.onLoop(bound.loop) { () throws(IOError) in try bound.value.listener.start() }
            }
        } catch {
            for bound in contexts { await Self.onLoop(bound.loop) { bound.value.listener.stop() } }
            Socket.close(listenerFD)
            throw error
        }
        state.withLock {
            $0.listenerFD = listenerFD
            $0.localAddress = address
            $0.contexts = contexts
        }
        return address
    }

    /// Stops accepting (new connections are refused), closes idle connections, lets requests
    /// in flight finish for up to `gracePeriod`, then closes every connection. When the
    /// server made its own loops, they are stopped too.
    public func shutdown(gracePeriod: Duration) async {
        await shutdown(gracePeriod: gracePeriod, whenGraceEnds: nil)
    }

    /// Like ``shutdown(gracePeriod:)``; when the grace period ends with connections still
    /// open, `whenGraceEnds` runs first (to end long responses cleanly, e.g. a last event on
    /// a stream) and connections get up to `finalGrace` more before they are closed.
    public func shutdown(
        gracePeriod: Duration,
        whenGraceEnds: (@Sendable () async -> Void)?,
        finalGrace: Duration = .seconds(1)
    ) async {
        let (contexts, listenerFD) = state.withLock { state -> ([LoopBound<LoopState>], CInt) in
            guard !state.stopped else { return ([], -1) }
            state.stopped = true
            let fd = state.listenerFD
            state.listenerFD = -1
            return (state.contexts, fd)
        }
        guard listenerFD >= 0 else { return }
        // Every loop stops accepting before any connection is closed: a loop still accepting
        // would otherwise take a connection the cap held back, freed by another loop's closing.
        for bound in contexts {
            await Self.onLoop(bound.loop) {
                bound.value.listener.stop()
                bound.value.context.quiescing = true
            }
        }
        for bound in contexts {
            await Self.onLoop(bound.loop) {
                for connection in Array(bound.value.context.connections.values) { connection.quiesce() }
            }
        }
        // No loop accepts now: what the kernel completed meanwhile is taken, and the socket closed
        // right after, so only a connection completed in that instant is reset by the close.
        if let first = contexts.first {
            await Self.onLoop(first.loop) {
                first.value.listener.drainBacklog()
                Socket.close(listenerFD)
            }
        } else {
            Socket.close(listenerFD)
        }
        let deadline = MonotonicInstant.now().advanced(by: gracePeriod)
        while counters.open.load(ordering: .relaxed) > 0 && MonotonicInstant.now() < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        if let whenGraceEnds, counters.open.load(ordering: .relaxed) > 0 {
            await whenGraceEnds()
            let finalDeadline = MonotonicInstant.now().advanced(by: finalGrace)
            while counters.open.load(ordering: .relaxed) > 0 && MonotonicInstant.now() < finalDeadline {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        for bound in contexts {
            await Self.onLoop(bound.loop) {
                for connection in Array(bound.value.context.connections.values) { connection.close() }
            }
        }
        if ownsGroup { await group.shutdownGracefully() }
    }

    /// Runs `body` on `loop` and returns its result.
    static func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () throws(IOError) -> T)
        async throws(IOError) -> T
    {
        let result: Result<T, IOError> = await withCheckedContinuation { continuation in
            loop.execute {
                do throws(IOError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    static func onLoop(_ loop: EventLoop, _ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                body()
                continuation.resume()
            }
        }
    }
}

@available(*, unavailable)
extension HTTPServer.LoopState: Sendable {}
