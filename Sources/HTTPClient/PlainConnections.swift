import EventLoop

#if canImport(Glibc)
    import Glibc
#endif

/// The client's own HTTP/1.1 connections to plain `http://` upstreams, on one ``EventLoop``
/// (a local model server, a sidecar, a service in the same network): each request's head is
/// written once, in one piece with its body, on a kept-alive connection that stays in the
/// loop's epoll from its first request to its close, and its response is read from one buffer
/// the loop shares. No per-request registration, no polls, no copy of the head in pieces:
/// what curl spends on those (BENCHMARKS.md) is what this saves. https, and any URL this
/// does not take (``PlainTarget``), stay with curl.
///
/// Behaves as curl does towards the caller: the same errors and details, the total, connect
/// and head timeouts, at most ``HTTPClientConfiguration/maxConnections`` open (requests
/// beyond wait for one), idle connections closed after
/// ``HTTPClientConfiguration/idleConnectionTimeout`` (or sooner, when more are idle than the
/// last seconds' requests needed at once), one more try on a fresh connection when
/// a kept-alive one turns out closed before any byte of the answer, and a streamed body that
/// stops being read while its consumer is behind.
final class PlainConnections: TransferDriver {
    let loop: EventLoop
    private let configuration: HTTPClientConfiguration
    private let maxConnections: Int
    /// URLs split once, with their text; a client calls a handful (found by comparing in order).
    private var targets: [(url: String, target: PlainTarget)] = []
    private static let targetLimit = 16
    /// Idle connections by ``PlainTarget/key``, the most recently used last: reused first, so
    /// the rest age out after a burst.
    private var idle: [String: [PlainConnection]] = [:]
    private var idleCount = 0
    /// Connections open, connecting or resolving their host.
    private var open = 0
    /// Requests waiting for a connection while ``maxConnections`` are open, first come first.
    private var waiting: [PlainExchange] = []
    /// Requests in flight by identity.
    private var live: [ObjectIdentifier: PlainExchange] = [:]
    private var deadlines = DeadlineHeap<PlainExchange>()
    /// When the loop timer serving ``deadlines`` fires; nil when none is set.
    private var timerAt: MonotonicInstant?
    private var sweepTimer: TimerID?
    /// Most requests in flight at once since the last sweep.
    private var recentPeak = 0
    /// Host names resolved, for a minute (as curl keeps them).
    private var resolved: [String: (addresses: [PeerAddress], until: MonotonicInstant)] = [:]
    private static let resolvedLifetime: Duration = .seconds(60)
    /// What every connection of the loop reads into; what a response leaves unfinished (a
    /// line cut in two) is kept by its connection.
    private let scratch: UnsafeMutableRawBufferPointer
    private static let scratchBytes = 64 * 1024
    private var isShutdown = false

    /// Requests in flight (for tests and metrics).
    var activeTransfers: Int { live.count }
    /// Connections kept idle (for tests).
    var idleConnectionCount: Int { idleCount }

    init(loop: EventLoop, configuration: HTTPClientConfiguration, maxConnections: Int) {
        self.loop = loop
        self.configuration = configuration
        self.maxConnections = max(1, maxConnections)
        scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.scratchBytes, alignment: 16)
    }

    deinit {
        scratch.deallocate()
    }

    // MARK: - Requests

    func start(_ request: HTTPClientRequest, streaming: Bool, attach: (ResponseSink) -> Bool) throws(HTTPClientError) {
        guard !isShutdown else { throw HTTPClientError(.shutdown) }
        guard let target = target(for: request.url) else {
            throw HTTPClientError(.invalidRequest, "URL using bad/illegal format or missing URL")
        }
        let now = MonotonicInstant.now()
        let exchange = PlainExchange(
            target: target, request: request, isHead: request.method == "HEAD",
            streaming: streaming, maxBodyBytes: configuration.maxResponseBytes,
            highWatermark: configuration.streamHighWatermark)
        exchange.connectTimeout = request.connectTimeout ?? configuration.connectTimeout
        exchange.totalDeadline = now.advanced(by: request.timeout ?? configuration.timeout)
        exchange.headDeadline = request.headTimeout.map { now.advanced(by: $0) }
        live[ObjectIdentifier(exchange)] = exchange
        if live.count > recentPeak { recentPeak = live.count }
        schedule(exchange)
        if !attach(exchange) {
            cancel(exchange)
            return
        }
        assign(exchange)
    }

    func cancel(_ transfer: ResponseSink) {
        guard let exchange = transfer as? PlainExchange else { return }
        fail(exchange, HTTPClientError(.cancelled, beforeResponse: !exchange.responseStarted))
    }

    func resume(_ transfer: ResponseSink) {
        guard let exchange = transfer as? PlainExchange, live[ObjectIdentifier(exchange)] != nil,
            let connection = exchange.connection, connection.readingPaused
        else { return }
        watch(connection, [.read])
        receive(connection)
    }

    private func target(for url: String) -> PlainTarget? {
        if let known = targets.first(where: { $0.url == url }) { return known.target }
        guard let target = PlainTarget(url: url) else { return nil }
        if targets.count < Self.targetLimit { targets.append((url, target)) }
        return target
    }

    /// Gives `exchange` a connection: an idle one to its host, a new one while fewer than the
    /// cap are open (closing an idle one to another host to make room), or a place in line.
    private func assign(_ exchange: PlainExchange) {
        if let connection = takeIdle(exchange.target.key) {
            send(exchange, on: connection)
        } else if open < maxConnections || closeOldestIdle() {
            connect(exchange)
        } else {
            exchange.waitingForConnection = true
            waiting.append(exchange)
        }
    }

    /// The most recently used idle connection to `key`. The stacks are changed in place (a
    /// copy would cost a burst's thousands of connections on every take), and may still hold
    /// connections closed while idle, which are passed over here and dropped by the sweep.
    private func takeIdle(_ key: String) -> PlainConnection? {
        guard idleCount > 0 else { return nil }
        while let connection = idle[key]?.popLast() {
            guard connection.state == .idle else { continue }
            if idle[key]?.isEmpty == true { idle[key] = nil }
            idleCount -= 1
            return connection
        }
        idle[key] = nil
        return nil
    }

    /// Closes the idle connection unused longest, to any host; false when none is idle.
    private func closeOldestIdle() -> Bool {
        guard idleCount > 0 else { return false }
        var oldest: (key: String, index: Int, since: MonotonicInstant)?
        for (key, stack) in idle {
            guard let index = stack.firstIndex(where: { $0.state == .idle }) else { continue }
            if oldest.map({ stack[index].idleSince < $0.since }) ?? true {
                oldest = (key, index, stack[index].idleSince)
            }
        }
        guard let oldest, let connection = idle[oldest.key]?.remove(at: oldest.index) else { return false }
        idleCount -= 1
        close(connection)
        return true
    }

    /// Starts the requests waiting in line while connections are to be had.
    private func admitWaiting() {
        while !waiting.isEmpty, !isShutdown {
            let exchange = waiting[0]
            if let connection = takeIdle(exchange.target.key) {
                waiting.removeFirst()
                exchange.waitingForConnection = false
                send(exchange, on: connection)
            } else if open < maxConnections || closeOldestIdle() {
                waiting.removeFirst()
                exchange.waitingForConnection = false
                connect(exchange)
            } else {
                return
            }
        }
    }

    // MARK: - Connecting

    private func connect(_ exchange: PlainExchange) {
        let target = exchange.target
        let connection = PlainConnection(key: target.key, pool: self)
        open += 1
        exchange.connection = connection
        connection.exchange = exchange
        exchange.connectDeadline = MonotonicInstant.now().advanced(by: exchange.connectTimeout)
        schedule(exchange)
        if let addresses = knownAddresses(target) {
            connection.addresses = addresses
            tryNextAddress(connection)
            return
        }
        // A name: resolved off the loop, then back here to connect.
        Self.resolve(target, for: LoopBound(connection, loop: loop), pool: LoopBound(self, loop: loop))
    }

    private static func resolve(
        _ target: PlainTarget, for connection: LoopBound<PlainConnection>, pool: LoopBound<PlainConnections>
    ) {
        Task {
            let addresses = (try? await resolver.run { PeerAddress.resolve(target.host, port: target.port) }) ?? []
            pool.withValue { pool in pool.resolved(target.host, addresses, for: connection.value) }
        }
    }

    private func resolved(_ host: String, _ addresses: [PeerAddress], for connection: PlainConnection) {
        guard connection.state == .resolving else { return } // closed meanwhile
        if !addresses.isEmpty {
            resolved[host] = (addresses, MonotonicInstant.now().advanced(by: Self.resolvedLifetime))
        }
        connection.addresses = addresses
        if addresses.isEmpty, let exchange = connection.exchange {
            fail(exchange, HTTPClientError(.connectFailed, "Couldn't resolve host name"))
            return
        }
        tryNextAddress(connection)
    }

    private static let resolver: BlockingPool = {
        guard let pool = try? BlockingPool(threadCount: 2, name: "http-resolve") else {
            fatalError("could not start the host name resolver's threads")
        }
        return pool
    }()

    /// A numeric host's address, `localhost`'s, or a name's resolved within the last minute.
    private func knownAddresses(_ target: PlainTarget) -> [PeerAddress]? {
        if let numeric = PeerAddress(numeric: target.host, port: target.port) { return [numeric] }
        if let entry = resolved[target.host] {
            if MonotonicInstant.now() < entry.until { return entry.addresses }
            resolved[target.host] = nil
        }
        return nil
    }

    /// Connects to the connection's next address; fails its request once none is left.
    private func tryNextAddress(_ connection: PlainConnection) {
        while connection.nextAddress < connection.addresses.count {
            let address = connection.addresses[connection.nextAddress]
            connection.nextAddress += 1
            let fd = socket(
                address.family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { continue }
            Socket.setNoDelay(fd)
            if configuration.tcpKeepAlive {
                // As curl sets them: probes after a minute idle, a minute apart.
                _ = try? Socket.setOption(fd, SOL_SOCKET, SO_KEEPALIVE, 1)
                _ = try? Socket.setOption(fd, CInt(IPPROTO_TCP), TCP_KEEPIDLE, 60)
                _ = try? Socket.setOption(fd, CInt(IPPROTO_TCP), TCP_KEEPINTVL, 60)
            }
            var storage = address.storage
            let result = Syscall.retryingInterrupts {
                withUnsafePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
                }
            }
            if result != 0 && errno != EINPROGRESS {
                Socket.close(fd)
                continue
            }
            connection.fd = fd
            do {
                try loop.register(fd, interest: result == 0 ? [.read] : [.write], handler: connection)
            } catch {
                Socket.close(fd)
                connection.fd = -1
                continue
            }
            connection.interest = result == 0 ? [.read] : [.write]
            connection.state = .connecting
            if result == 0 { connected(connection) }
            return
        }
        guard let exchange = connection.exchange else {
            close(connection)
            return
        }
        fail(exchange, HTTPClientError(.connectFailed, "Couldn't connect to server"))
    }

    /// The connect finished, well or not: a failed one tries the next address.
    private func connected(_ connection: PlainConnection) {
        var error: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        if getsockopt(connection.fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 { error = errno }
        guard error == 0 else {
            loop.deregister(connection.fd)
            Socket.close(connection.fd)
            connection.fd = -1
            connection.state = .resolving
            tryNextAddress(connection)
            return
        }
        guard let exchange = connection.exchange else {
            close(connection)
            return
        }
        exchange.connectDeadline = nil
        schedule(exchange)
        send(exchange, on: connection)
    }

    // MARK: - Sending

    private func send(_ exchange: PlainExchange, on connection: PlainConnection) {
        exchange.connection = connection
        connection.exchange = exchange
        connection.carried += 1
        connection.reader = ResponseReader(headRequest: exchange.isHead)
        connection.sent = 0
        connection.state = .sending
        // Encoded as it goes out, and let go once written: a request waiting for its answer
        // holds no copy of its bytes (a retry encodes them again).
        if let request = exchange.request {
            (exchange.output, exchange.bodyApart) = PlainRequest.encode(request, target: exchange.target)
        }
        flush(connection)
    }

    /// Writes what is left of the request; once all is written, the connection waits for the answer.
    private func flush(_ connection: PlainConnection) {
        guard let exchange = connection.exchange else { return }
        var outcome = exchange.output.withUnsafeBytes { write($0, from: 0, on: connection) }
        if case .success(true) = outcome, exchange.bodyApart, let body = exchange.request?.body {
            // A large body goes after the head from the request's own bytes.
            let from = exchange.output.count
            outcome = body.withUnsafeBytes { write($0, from: from, on: connection) }
        }
        switch outcome {
        case .success(true):
            exchange.output = []
            exchange.bodyApart = false
            connection.state = .receiving
            watch(connection, [.read])
        case .success(false):
            watch(connection, [.read, .write])
        case .failure:
            connectionFailed(connection, "Failure when sending data to the peer")
        }
    }

    /// Writes `bytes` (the part of the request that starts at `from`) from where the
    /// connection's count of bytes sent has got to: true once all of them are written.
    private func write(_ bytes: UnsafeRawBufferPointer, from: Int, on connection: PlainConnection) -> Result<
        Bool, IOError
    > {
        while connection.sent - from < bytes.count {
            do throws(IOError) {
                let rest = UnsafeRawBufferPointer(rebasing: bytes[(connection.sent - from)...])
                switch try Socket.write(connection.fd, rest) {
                case .processed(let count): connection.sent += count
                case .wouldBlock: return .success(false)
                }
            } catch {
                return .failure(error)
            }
        }
        return .success(true)
    }

    // MARK: - Receiving

    /// The loop's word for one connection.
    fileprivate func events(_ events: SelectorEvents, on connection: PlainConnection) {
        switch connection.state {
        case .connecting:
            connected(connection)
        case .sending:
            if events.contains(.writable) { flush(connection) }
            // An answer before the whole request was taken (a refusal): read it too.
            if connection.state == .sending, !events.isDisjoint(with: [.readable, .hangup, .error]) {
                receive(connection)
            }
        case .receiving:
            receive(connection)
        case .idle:
            // Closed by the upstream, or bytes nobody asked for: either way not to be reused.
            removeIdle(connection)
            close(connection)
        case .resolving, .closed:
            break
        }
    }

    private func receive(_ connection: PlainConnection) {
        while connection.state == .sending || connection.state == .receiving, !connection.readingPaused {
            let count: Int
            do {
                switch try Socket.read(connection.fd, into: scratch) {
                case .processed(let read): count = read
                case .wouldBlock: return
                }
            } catch {
                connectionFailed(connection, "Failure when receiving data from the peer")
                return
            }
            if count == 0 {
                closedByPeer(connection)
                return
            }
            guard feed(connection, UnsafeRawBufferPointer(rebasing: scratch[0..<count])) else { return }
            if count < scratch.count { return }
        }
    }

    /// Reads `bytes` (after what the connection kept of the last read); false when the
    /// connection is done with its request.
    private func feed(_ connection: PlainConnection, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let exchange = connection.exchange else { return false }
        let step: ResponseReader.Step
        /// Nothing is left after the response: bytes past its end mean the connection is not reused.
        let clean: Bool
        do throws(HTTPClientError) {
            if connection.leftover.isEmpty {
                step = try connection.reader.read(bytes, into: exchange)
                clean = step.consumed == bytes.count
                if !step.ended, !clean { connection.leftover.append(contentsOf: bytes[step.consumed...]) }
            } else {
                connection.leftover.append(contentsOf: bytes)
                var reader = connection.reader
                let result = connection.leftover.withUnsafeBytes { bytes in
                    Result { () throws(HTTPClientError) in try reader.read(bytes, into: exchange) }
                }
                step = try result.get()
                connection.reader = reader
                clean = step.consumed == connection.leftover.count
                connection.leftover.removeFirst(step.consumed)
            }
        } catch {
            fail(exchange, error)
            return false
        }
        if exchange.headComplete {
            // No retry past the head: the request is done with.
            exchange.request = nil
            if exchange.headDeadline != nil {
                exchange.headDeadline = nil
                schedule(exchange)
            }
        }
        if step.ended {
            finish(
                exchange, on: connection,
                reusable: clean && connection.reader.keepAlive && connection.state == .receiving)
            return false
        }
        if exchange.paused {
            // The consumer is behind: the connection leaves the epoll until it catches up
            // (watched for nothing, a closed socket's hang-up would wake the loop without end).
            unwatch(connection)
            return false
        }
        return true
    }

    /// The upstream closed the connection: the end of a body that runs to it, a kept-alive
    /// connection found closed (tried again on a fresh one), or an answer cut short.
    private func closedByPeer(_ connection: PlainConnection) {
        guard let exchange = connection.exchange else {
            close(connection)
            return
        }
        if connection.reader.endsAtClose {
            finish(exchange, on: connection, reusable: false)
        } else if !retryOnFreshConnection(exchange, connection) {
            fail(
                exchange,
                HTTPClientError(
                    .transport,
                    exchange.responseStarted
                        ? "Transferred a partial file" : "Server returned nothing (no headers, no data)",
                    beforeResponse: !exchange.responseStarted))
        }
    }

    private func connectionFailed(_ connection: PlainConnection, _ detail: String) {
        guard let exchange = connection.exchange else {
            close(connection)
            return
        }
        if !retryOnFreshConnection(exchange, connection) {
            fail(exchange, HTTPClientError(.transport, detail, beforeResponse: !exchange.responseStarted))
        }
    }

    /// A request sent on a kept-alive connection the upstream had closed meanwhile (nothing
    /// of an answer came) goes once more, on a new connection: it cannot duplicate an answer.
    private func retryOnFreshConnection(_ exchange: PlainExchange, _ connection: PlainConnection) -> Bool {
        guard connection.carried > 1, !exchange.retried, !exchange.responseStarted, !isShutdown else { return false }
        exchange.retried = true
        connection.exchange = nil
        exchange.connection = nil
        close(connection)
        connect(exchange)
        return true
    }

    // MARK: - Ending

    private func finish(_ exchange: PlainExchange, on connection: PlainConnection, reusable: Bool) {
        live.removeValue(forKey: ObjectIdentifier(exchange))
        deadlines.remove(exchange)
        exchange.connection = nil
        connection.exchange = nil
        if reusable && !isShutdown {
            connection.state = .idle
            connection.idleSince = MonotonicInstant.now()
            idle[connection.key, default: []].append(connection)
            idleCount += 1
            scheduleSweep()
        } else {
            close(connection)
        }
        exchange.finish(.success(()))
        admitWaiting()
    }

    /// Ends `exchange` with `error`; its connection, mid-request, is closed.
    private func fail(_ exchange: PlainExchange, _ error: HTTPClientError) {
        guard live.removeValue(forKey: ObjectIdentifier(exchange)) != nil else { return }
        deadlines.remove(exchange)
        if exchange.waitingForConnection {
            waiting.removeAll { $0 === exchange }
            exchange.waitingForConnection = false
        }
        if let connection = exchange.connection {
            exchange.connection = nil
            connection.exchange = nil
            close(connection)
        }
        exchange.finish(.failure(error))
        admitWaiting()
    }

    private func close(_ connection: PlainConnection) {
        guard connection.state != .closed else { return }
        if connection.fd >= 0 {
            if !connection.readingPaused { loop.deregister(connection.fd) }
            Socket.close(connection.fd)
            connection.fd = -1
        }
        connection.state = .closed
        connection.leftover = []
        open -= 1
    }

    /// Counts an idle connection out, before it is closed; its stack drops it later.
    private func removeIdle(_ connection: PlainConnection) {
        guard connection.state == .idle else { return }
        idleCount -= 1
    }

    private func watch(_ connection: PlainConnection, _ interest: SelectorInterest) {
        do {
            if connection.readingPaused {
                try loop.register(connection.fd, interest: interest, handler: connection)
                connection.readingPaused = false
            } else if connection.interest != interest {
                try loop.reregister(connection.fd, interest: interest)
            }
            connection.interest = interest
        } catch {
            connectionFailed(connection, "Failure when receiving data from the peer")
        }
    }

    private func unwatch(_ connection: PlainConnection) {
        guard !connection.readingPaused else { return }
        loop.deregister(connection.fd)
        connection.readingPaused = true
    }

    // MARK: - Timeouts

    /// Files `exchange` under its nearest deadline, and sets the loop timer when that comes
    /// first. The timer is never cancelled: one that fires with nothing due sets the next.
    private func schedule(_ exchange: PlainExchange) {
        deadlines.update(exchange)
        guard let first = deadlines.first?.deadline, timerAt.map({ first < $0 }) ?? true else { return }
        timerAt = first
        // Weak: never cancelled, it may fire after the client is gone.
        loop.scheduleTimer(at: first) { [weak self] in
            self?.expire()
        }
    }

    private func expire() {
        let now = MonotonicInstant.now()
        if let at = timerAt, at <= now { timerAt = nil }
        while let exchange = deadlines.first, exchange.deadline <= now {
            deadlines.remove(exchange)
            if let connect = exchange.connectDeadline, connect <= now {
                fail(exchange, HTTPClientError(.timedOut, "connect", beforeResponse: true))
            } else if let head = exchange.headDeadline, head <= now, !exchange.headComplete {
                fail(exchange, HTTPClientError(.timedOut, "response head", beforeResponse: !exchange.responseStarted))
            } else {
                let connecting = exchange.connection.map { $0.state == .connecting || $0.state == .resolving } ?? true
                fail(
                    exchange,
                    HTTPClientError(
                        .timedOut, connecting ? "connect" : "response", beforeResponse: !exchange.responseStarted))
            }
        }
        if let first = deadlines.first?.deadline, timerAt.map({ first < $0 }) ?? true {
            timerAt = first
            loop.scheduleTimer(at: first) { [weak self] in
                self?.expire()
            }
        }
    }

    // MARK: - Idle connections

    private func scheduleSweep(at deadline: MonotonicInstant? = nil) {
        guard sweepTimer == nil, !isShutdown else { return }
        let deadline =
            deadline ?? MonotonicInstant.now().advanced(by: min(configuration.idleConnectionTimeout, Self.trimInterval))
        sweepTimer = loop.scheduleTimer(at: deadline) { [unowned self] in
            self.sweepTimer = nil
            self.sweepIdle()
        }
    }

    /// Closes the connections idle for the idle timeout, and those beyond what the requests
    /// of the last ``trimInterval`` needed at once (the oldest first): a burst's connections
    /// go seconds after it, not a minute, and with them the heap they hold. Sets the next sweep.
    private func sweepIdle() {
        guard !isShutdown else { return }
        let now = MonotonicInstant.now()
        var connections: [PlainConnection] = []
        connections.reserveCapacity(idleCount)
        for stack in idle.values { connections.append(contentsOf: stack.lazy.filter { $0.state == .idle }) }
        let keep = max(0, recentPeak - live.count)
        recentPeak = live.count
        var kept = connections.filter { now < $0.idleSince.advanced(by: configuration.idleConnectionTimeout) }
        if kept.count > keep {
            kept.sort { $0.idleSince > $1.idleSince } // the most recently used first
            kept.removeLast(kept.count - keep)
        }
        let keeping = Set(kept.map(ObjectIdentifier.init))
        for connection in connections where !keeping.contains(ObjectIdentifier(connection)) { close(connection) }
        var stacks: [String: [PlainConnection]] = [:]
        for connection in kept.reversed() { stacks[connection.key, default: []].append(connection) }
        for key in stacks.keys { stacks[key]?.sort { $0.idleSince < $1.idleSince } }
        idle = stacks
        idleCount = kept.count
        guard let oldest = kept.map(\.idleSince).min() else { return }
        let expiry = oldest.advanced(by: configuration.idleConnectionTimeout)
        scheduleSweep(at: min(expiry, now.advanced(by: Self.trimInterval)))
    }

    /// How far back the requests in flight are looked at to size the idle connections kept.
    static let trimInterval: Duration = .seconds(5)

    // MARK: - Shutdown

    /// Fails every request in flight and closes every connection.
    func shutdown() {
        guard !isShutdown else { return }
        isShutdown = true
        for exchange in Array(live.values) {
            fail(exchange, HTTPClientError(.shutdown, beforeResponse: !exchange.responseStarted))
        }
        waiting = []
        for stack in idle.values {
            for connection in stack { close(connection) }
        }
        idle = [:]
        idleCount = 0
        if let sweepTimer { loop.cancelTimer(sweepTimer) }
        sweepTimer = nil
    }
}

@available(*, unavailable)
extension PlainConnections: Sendable {}

/// One request on ``PlainConnections``: what it sends, its deadlines, its connection.
final class PlainExchange: ResponseSink {
    let target: PlainTarget
    /// The request, kept until the answer's head came, for a retry.
    var request: HTTPClientRequest?
    /// The request's head and body while they are being written.
    var output: [UInt8] = []
    /// Whether the body is written from the request after ``output`` (a large one), not in it.
    var bodyApart = false
    let isHead: Bool
    var connectTimeout: Duration = .seconds(10)
    var connection: PlainConnection?
    var waitingForConnection = false
    var totalDeadline = MonotonicInstant.now()
    var headDeadline: MonotonicInstant?
    var connectDeadline: MonotonicInstant?
    /// The nearest of the deadlines that apply, and where it sits in the heap (-1: not in it).
    var deadline = MonotonicInstant.now()
    var heapIndex = -1

    init(
        target: PlainTarget, request: HTTPClientRequest, isHead: Bool, streaming: Bool, maxBodyBytes: Int,
        highWatermark: Int
    ) {
        self.target = target
        self.request = request
        self.isHead = isHead
        super.init(streaming: streaming, maxBodyBytes: maxBodyBytes, highWatermark: highWatermark)
    }

    /// The nearest deadline that still applies.
    fileprivate var nearestDeadline: MonotonicInstant {
        var nearest = totalDeadline
        if let head = headDeadline, !headComplete, head < nearest { nearest = head }
        if let connect = connectDeadline, connect < nearest { nearest = connect }
        return nearest
    }
}

/// One connection of ``PlainConnections``; the loop calls it when its socket is ready.
final class PlainConnection: Selectable {
    enum State {
        case resolving
        case connecting
        case sending
        case receiving
        case idle
        case closed
    }

    let key: String
    unowned let pool: PlainConnections
    var fd: CInt = -1
    var state = State.resolving
    var exchange: PlainExchange?
    var addresses: [PeerAddress] = []
    var nextAddress = 0
    /// Requests it has carried, this one included.
    var carried = 0
    var sent = 0
    var reader = ResponseReader()
    /// Bytes read but not yet read through (an unfinished line).
    var leftover: [UInt8] = []
    var interest: SelectorInterest = []
    /// Out of the epoll while a stream's consumer is behind.
    var readingPaused = false
    var idleSince = MonotonicInstant.now()

    init(key: String, pool: PlainConnections) {
        self.key = key
        self.pool = pool
    }

    func selectorEvents(_ events: SelectorEvents) {
        pool.events(events, on: self)
    }
}

@available(*, unavailable)
extension PlainConnection: Sendable {}

extension PlainExchange: DeadlineHeapEntry {
    func placed(at index: Int) { heapIndex = index }
}

/// The requests in flight ordered by their nearest deadline. Entries know their place, so
/// one that ends leaves at once (no dead entries kept until their deadline, as lazily
/// cancelled timers would be).
extension DeadlineHeap<PlainExchange> {
    /// Files `exchange` under its nearest deadline (added, or moved).
    mutating func update(_ exchange: PlainExchange) {
        let deadline = exchange.nearestDeadline
        if exchange.heapIndex < 0 {
            exchange.deadline = deadline
            insert(exchange)
        } else if deadline != exchange.deadline {
            exchange.deadline = deadline
            reorder(at: exchange.heapIndex)
        }
    }

    mutating func remove(_ exchange: PlainExchange) {
        let index = exchange.heapIndex
        guard index >= 0, index < count, self[index] === exchange else { return }
        remove(at: index)
        exchange.heapIndex = -1
    }
}
