import EventLoop
import HTTP1

/// One accepted connection: the I/O shell around a ``RequestParser``, driven by its loop.
///
/// A connection serves one request at a time. While a handler runs it stops reading (a
/// pipelined request waits in the parser's buffer, so input stays bounded) but still watches
/// for the peer hanging up, which cancels the handler's task. Responses are written with
/// backpressure: a stream producer waits while more than the high watermark is unsent.
/// Every timeout is one deadline re-armed lazily on the loop's timer queue.
final class HTTPConnection: Selectable {
    private enum State {
        /// Reading a request (or waiting for the next one on a kept-alive connection).
        case reading
        /// A handler is producing the response; reading is paused.
        case processing
        /// The response is being written.
        case responding
        /// The last response is out and the write side is shut; input is discarded until
        /// the peer closes or the linger time ends.
        case lingering
        case closed
    }

    private enum DeadlineKind {
        case idle, header, body, writeStall, linger
    }

    let fd: CInt
    let remoteAddress: SocketAddress?
    private let context: ServerLoopContext
    private var loop: EventLoop { context.loop }
    private var parser: RequestParser
    private var state = State.reading
    private var interest: SelectorInterest = [.read, .readHangup]

    private var head: RequestHead?
    private var body: [UInt8] = []
    private var handlerTask: Task<Void, Never>?
    /// Whether the current handler asked to outlive a hang-up (``HTTPRequest/keepRunningIfClientLeaves()``).
    private let hangUp = HangUpPolicy()
    /// True while a handler runs synchronously inside ``dispatch(_:)``.
    private var dispatching = false
    /// Whether the connection stays open after the current response.
    private var keepAlive = true
    private var responseIsHead = false
    private var chunked = false
    /// All response bytes are queued; the response ends when they are written.
    private var responseQueued = false

    private var outbound: [UInt8] = []
    private var outboundOffset = 0
    private var writeWaiters: [CheckedContinuation<Void, any Error>] = []

    private var deadline: MonotonicInstant?
    private var deadlineKind = DeadlineKind.idle
    private var timer: (id: TimerID, at: MonotonicInstant)?

    init(fd: CInt, remoteAddress: SocketAddress?, context: ServerLoopContext) {
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.context = context
        self.parser = RequestParser(limits: context.configuration.limits)
    }

    /// Registers with the loop and starts the idle timeout.
    func start() throws(IOError) {
        try loop.register(fd, interest: interest, handler: self)
        context.add(self)
        setDeadline(.idle, after: context.configuration.idleTimeout)
    }

    // MARK: - Selector events

    func selectorEvents(_ events: SelectorEvents) {
        if events.contains(.error) || events.contains(.hangup) {
            close()
            return
        }
        if events.contains(.writable) { flush() }
        if events.contains(.readable) {
            readAvailable()
        } else if events.contains(.readHangup) && state != .reading {
            // The peer is gone while its request is being answered: stop paying for it.
            close()
        }
    }

    private func readAvailable() {
        guard state == .reading || state == .lingering else {
            // Input while a response is pending (a pipelined request): stop reading until the
            // response is out, so input stays bounded. Dropped lazily: most clients send nothing
            // while they wait, and then the interest never changes.
            setInterest(interest.subtracting(.read))
            return
        }
        let buffer = context.readBuffer
        let result: IOResult<Int>
        do {
            result = try Socket.read(fd, into: buffer)
        } catch {
            close()
            return
        }
        guard case .processed(let count) = result else { return }
        if count == 0 {
            // End of stream: a client that vanishes mid-request, or is done after its last response.
            close()
            return
        }
        if state == .lingering { return }
        let wasAwaiting = parser.isAwaitingRequest
        parser.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        if wasAwaiting && !parser.isAwaitingRequest && head == nil {
            setDeadline(.header, after: context.configuration.headerReadTimeout)
        }
        processInput()
    }

    // MARK: - Requests

    private func processInput() {
        while state == .reading {
            let event: RequestParser.Event?
            do {
                event = try parser.next()
            } catch {
                refuse(ProtocolError(status: error.status, parseError: error, head: head))
                return
            }
            guard let event else { return }
            switch event {
            case .head(let newHead):
                head = newHead
                body = []
                if newHead.framing != .none {
                    setDeadline(.body, after: context.configuration.bodyReadTimeout)
                    if newHead.expectsContinue && newHead.version == .http1_1 && bodyFitsLimit(newHead.framing) {
                        outbound.append(contentsOf: Self.continueBytes)
                        flush()
                    }
                }
            case .body(let bytes):
                // A body usually comes in one piece: keep that array instead of copying it.
                if body.isEmpty { body = bytes } else { body.append(contentsOf: bytes) }
            case .end:
                guard let head else { return }
                hangUp.keepsHandler.store(false, ordering: .relaxed)
                dispatch(HTTPRequest(head: head, body: body, remoteAddress: remoteAddress, hangUp: hangUp))
            }
        }
    }

    private static let continueBytes = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    private func bodyFitsLimit(_ framing: BodyFraming) -> Bool {
        if case .contentLength(let length) = framing { return length <= context.configuration.limits.maxBodyBytes }
        return true
    }

    private func dispatch(_ request: HTTPRequest) {
        state = .processing
        body = []
        clearDeadline()
        let connection = LoopBound(self, loop: loop)
        let responder = context.responder
        let errorResponder = context.configuration.errorResponder
        // The task starts on this thread at once and runs until its first suspension, so a
        // handler that answers without waiting is served inside this read event; after a
        // suspension it resumes on this loop, its executor.
        dispatching = true
        let task = Task.immediate(executorPreference: loop) {
            let response: HTTPResponse
            do {
                response = try await responder(request)
            } catch {
                response = errorResponder(error, request)
            }
            let end = await HTTPConnection.send(response, on: connection)
            if let finished = response.finished { await finished(end) }
        }
        dispatching = false
        if state == .processing || (state == .responding && !responseQueued) {
            handlerTask = task
        }
    }

    /// Writes `response` on the connection's loop, running a stream body to its end, and
    /// says how it ended.
    private static func send(_ response: HTTPResponse, on connection: LoopBound<HTTPConnection>) async -> ResponseEnd {
        switch response.body {
        case .bytes(let bytes):
            let written = await onLoop(connection) { $0.writeResponse(response, body: bytes) }
            return written ? .completed : .connectionClosed
        case .stream(let produce):
            switch await onLoop(connection, { $0.beginStream(response) }) {
            case .closed: return .connectionClosed
            case .headOnly: return .completed
            case .streaming: break
            }
            let writer = ResponseBodyWriter(connection: connection)
            do {
                try await produce(writer)
            } catch {
                return await onLoop(connection) { $0.abortStream() } ? .bodyFailed : .connectionClosed
            }
            return await onLoop(connection) { $0.endStream() } ? .completed : .connectionClosed
        }
    }

    /// Runs `body` on the connection's loop: inline when already there (a handler's task
    /// runs on its loop), else through the loop's queue.
    private static func onLoop<T: Sendable>(
        _ connection: LoopBound<HTTPConnection>, _ body: @escaping @Sendable (HTTPConnection) -> T
    ) async -> T {
        if let value = connection.valueIfInEventLoop { return body(value) }
        return await withCheckedContinuation { continuation in
            connection.withValue { continuation.resume(returning: body($0)) }
        }
    }

    // MARK: - Responses

    /// Writes the status line and fields. The handler's framing fields (`Connection`,
    /// `Content-Length`, `Transfer-Encoding`) are replaced by the server's own; a handler's
    /// `Connection: close` is honoured.
    private func writeHead(_ response: HTTPResponse, contentLength: Int?) {
        guard let head else { return }
        responseIsHead = head.method == .HEAD
        keepAlive = keepAlive && head.keepAlive && !context.quiescing
        let status = response.status.code
        let bodyless = status < 200 || status == 204 || status == 304
        ResponseEncoder.writeStatusLine(status: response.status, version: head.version, into: &outbound)
        var hasDate = false
        for field in response.headers {
            switch ManagedField(field.name) {
            case .connection:
                if field.value.split(separator: ",").contains(where: {
                    $0.lowercased().filter { $0 != " " && $0 != "\t" } == "close"
                }) {
                    keepAlive = false
                }
                continue
            case .contentLength, .transferEncoding:
                continue
            case .date:
                hasDate = true
            case .other:
                break
            }
            ResponseEncoder.writeField(name: field.name, value: field.value, into: &outbound)
        }
        if !hasDate { ResponseEncoder.writeField(name: "Date", value: context.date, into: &outbound) }
        if let contentLength {
            if !bodyless { ResponseEncoder.writeField(name: "Content-Length", value: contentLength, into: &outbound) }
        } else if head.version == .http1_1 {
            chunked = !bodyless
            if chunked { ResponseEncoder.writeField(name: "Transfer-Encoding", value: "chunked", into: &outbound) }
        } else {
            keepAlive = false // an HTTP/1.0 stream ends when the connection closes
        }
        if !keepAlive {
            ResponseEncoder.writeField(name: "Connection", value: "close", into: &outbound)
        } else if head.version == .http1_0 {
            ResponseEncoder.writeField(name: "Connection", value: "keep-alive", into: &outbound)
        }
        ResponseEncoder.writeEndOfHead(into: &outbound)
        if bodyless { responseIsHead = true }
    }

    /// Queues the whole response; false when the connection closed before it could.
    @discardableResult
    private func writeResponse(_ response: HTTPResponse, body: [UInt8]) -> Bool {
        guard state == .processing else { return false }
        state = .responding
        handlerTask = nil
        writeHead(response, contentLength: body.count)
        if !responseIsHead { outbound.append(contentsOf: body) }
        responseQueued = true
        flush()
        // Closed with this response still queued: the write failed, the client is gone. A
        // response written whole has `responseQueued` reset, even on a connection that
        // then closed or moved to another loop.
        return !(state == .closed && responseQueued)
    }

    private enum StreamStart: Sendable {
        case streaming, headOnly, closed
    }

    /// Writes the head of a streamed response: `.headOnly` for a response without a body
    /// (`HEAD`), `.closed` when the connection is already gone.
    private func beginStream(_ response: HTTPResponse) -> StreamStart {
        guard state == .processing else { return .closed }
        state = .responding
        writeHead(response, contentLength: nil)
        if responseIsHead {
            responseQueued = true
            flush()
            return .headOnly
        }
        flush()
        return state == .responding ? .streaming : .closed
    }

    /// Queues one piece of a streamed body; the continuation resumes once the unsent bytes
    /// are under the high watermark, or throws when the connection is gone.
    func writeBodyChunk(_ bytes: [UInt8], continuation: CheckedContinuation<Void, any Error>) {
        guard state == .responding, !responseQueued else {
            continuation.resume(throwing: ConnectionClosedError())
            return
        }
        if chunked {
            ResponseEncoder.writeChunk(bytes, into: &outbound)
        } else {
            outbound.append(contentsOf: bytes)
        }
        flush()
        guard state == .responding else {
            continuation.resume(throwing: ConnectionClosedError())
            return
        }
        if outbound.count - outboundOffset > context.configuration.writeHighWatermark {
            writeWaiters.append(continuation)
        } else {
            continuation.resume()
        }
    }

    /// Ends a streamed body; false when the connection closed before it could.
    private func endStream() -> Bool {
        guard state == .responding, !responseQueued else { return false }
        handlerTask = nil
        if chunked { ResponseEncoder.writeLastChunk(into: &outbound) }
        responseQueued = true
        flush()
        return true
    }

    /// The producer failed: the client must not mistake the truncated body for a whole one.
    /// False when the connection had already closed.
    private func abortStream() -> Bool {
        guard state == .responding, !responseQueued else { return false }
        handlerTask = nil
        keepAlive = false
        // Send what is queued, then close without the last chunk.
        responseQueued = true
        chunked = false
        flush()
        return true
    }

    /// Answers a request the server refuses itself, then closes.
    private func refuse(_ error: ProtocolError) {
        guard state == .reading else { return }
        keepAlive = false
        if head == nil {
            // No head yet: answer with the request's version unknown; HTTP/1.1 is right for any client.
            head = RequestHead.placeholder
        }
        let response = context.configuration.protocolErrorResponder(error)
        state = .processing
        let written: Bool
        if case .bytes(let bytes) = response.body {
            written = writeResponse(response, body: bytes)
        } else {
            written = writeResponse(
                HTTPResponse.text(error.status.reasonPhrase, status: error.status),
                body: Array(error.status.reasonPhrase.utf8))
        }
        if let finished = response.finished {
            let end: ResponseEnd = written ? .completed : .connectionClosed
            Task.immediate(executorPreference: loop) { await finished(end) }
        }
    }

    private func responseFinished() {
        handlerTask = nil
        responseQueued = false
        chunked = false
        head = nil
        if !keepAlive {
            linger()
            return
        }
        if parser.isAwaitingRequest, let target = context.distributor.handOffTarget(from: context) {
            handOff(to: target)
            return
        }
        state = .reading
        setInterest(interest.union(.read))
        setDeadline(.idle, after: context.configuration.idleTimeout)
        if !parser.isAwaitingRequest {
            setDeadline(.header, after: context.configuration.headerReadTimeout)
        }
        if dispatching {
            // Answered inside dispatch: parse the next pipelined request from the loop, not
            // recursively, so a burst of pipelined requests cannot grow the stack.
            let connection = LoopBound(self, loop: loop)
            loop.execute { connection.value.processInput() }
        } else {
            processInput()
        }
    }

    // MARK: - Writing

    private func flush() {
        while outboundOffset < outbound.count {
            let result: IOResult<Int>
            do {
                result = try outbound.withUnsafeBytes { bytes throws(IOError) in
                    try Socket.write(fd, UnsafeRawBufferPointer(rebasing: bytes[outboundOffset...]))
                }
            } catch {
                close()
                return
            }
            switch result {
            case .processed(let written):
                outboundOffset += written
                if deadlineKind == .writeStall {
                    setDeadline(.writeStall, after: context.configuration.writeStallTimeout)
                }
            case .wouldBlock:
                if !interest.contains(.write) {
                    setInterest(interest.union(.write))
                    setDeadline(.writeStall, after: context.configuration.writeStallTimeout)
                }
                return
            }
        }
        if outbound.capacity > 1 << 20 { outbound = [] } else { outbound.removeAll(keepingCapacity: true) }
        outboundOffset = 0
        if interest.contains(.write) {
            setInterest(interest.subtracting(.write))
            if deadlineKind == .writeStall { clearDeadline() }
        }
        resumeWriters()
        if state == .responding && responseQueued { responseFinished() }
    }

    private func resumeWriters() {
        guard !writeWaiters.isEmpty else { return }
        let waiters = writeWaiters
        writeWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    // MARK: - Closing

    /// The server is shutting down: close now if idle, otherwise after the current response.
    func quiesce() {
        if state == .reading && parser.isAwaitingRequest && head == nil {
            close()
        } else {
            keepAlive = false
        }
    }

    private func linger() {
        state = .lingering
        Socket.shutdownWrite(fd)
        setInterest([.read])
        setDeadline(.linger, after: context.configuration.lingerTimeout)
    }

    /// Moves the connection, idle between two requests with nothing buffered either way, to
    /// `target`'s loop: this loop stops watching it and forgets it, and `target` starts it
    /// afresh (a request already on its way waits in the socket until then).
    private func handOff(to target: LoopBound<ServerLoopContext>) {
        state = .closed
        loop.deregister(fd)
        if let timer { loop.cancelTimer(timer.id) }
        timer = nil
        deadline = nil
        context.detach(self)
        let fd = fd
        let peer = remoteAddress
        target.loop.execute { ConnectionDistributor.start(fd: fd, peer: peer, on: target.value) }
    }

    /// Closes the socket at once, cancelling a running handler and failing waiting writers.
    func close() {
        guard state != .closed else { return }
        state = .closed
        loop.deregister(fd)
        Socket.close(fd)
        if let timer { loop.cancelTimer(timer.id) }
        timer = nil
        if !hangUp.keepsHandler.load(ordering: .relaxed) { handlerTask?.cancel() }
        handlerTask = nil
        let waiters = writeWaiters
        writeWaiters = []
        for waiter in waiters { waiter.resume(throwing: ConnectionClosedError()) }
        outbound = []
        context.remove(self)
    }

    private func setInterest(_ newInterest: SelectorInterest) {
        guard newInterest != interest, state != .closed else { return }
        interest = newInterest
        do {
            try loop.reregister(fd, interest: newInterest)
        } catch {
            close()
        }
    }

    // MARK: - Deadlines

    private func setDeadline(_ kind: DeadlineKind, after duration: Duration) {
        let newDeadline = MonotonicInstant.now().advanced(by: duration)
        deadline = newDeadline
        deadlineKind = kind
        if let timer, timer.at <= newDeadline { return } // fires early and re-arms itself
        if let timer { loop.cancelTimer(timer.id) }
        armTimer(at: newDeadline)
    }

    private func clearDeadline() {
        deadline = nil
    }

    private func armTimer(at instant: MonotonicInstant) {
        let id = loop.scheduleTimer(at: instant) { [unowned self] in self.timerFired() }
        timer = (id, instant)
    }

    private func timerFired() {
        timer = nil
        guard state != .closed, let deadline else { return }
        if MonotonicInstant.now() < deadline {
            armTimer(at: deadline)
            return
        }
        self.deadline = nil
        switch deadlineKind {
        case .idle, .writeStall, .linger:
            close()
        case .header, .body:
            refuse(ProtocolError(status: .requestTimeout, parseError: nil, head: head))
        }
    }
}

@available(*, unavailable)
extension HTTPConnection: Sendable {}

/// The response fields the server manages itself.
private enum ManagedField {
    case connection, contentLength, transferEncoding, date, other

    init(_ name: String) {
        switch name.utf8.count {
        case 4: self = Self.matches(name, "date") ? .date : .other
        case 10: self = Self.matches(name, "connection") ? .connection : .other
        case 14: self = Self.matches(name, "content-length") ? .contentLength : .other
        case 17: self = Self.matches(name, "transfer-encoding") ? .transferEncoding : .other
        default: self = .other
        }
    }

    /// ASCII case-insensitive equality with a lower-case `target`.
    private static func matches(_ name: String, _ target: StaticString) -> Bool {
        let bytes = UnsafeBufferPointer(start: target.utf8Start, count: target.utf8CodeUnitCount)
        return name.utf8.elementsEqual(bytes) { byte, lower in
            (byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte) == lower
        }
    }
}
