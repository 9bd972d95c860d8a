import EventLoop
import HTTP1

/// One accepted connection: the I/O shell around a ``RequestParser`` and an
/// ``HTTPConnectionStateMachine``, driven by its loop.
///
/// It reads, parses, runs handlers, writes and arms the timer; the machine decides what
/// happens next (see there for how a connection serves requests). Responses are written with
/// backpressure: a stream producer waits while more than the high watermark is unsent.
final class HTTPConnection: Selectable {
    private typealias Action = HTTPConnectionStateMachine.Action

    let fd: CInt
    let remoteAddress: SocketAddress?
    private let context: ServerLoopContext
    private var loop: EventLoop { context.loop }
    private var parser: RequestParser
    private var machine: HTTPConnectionStateMachine

    /// The head of the request being read, until it is dispatched.
    private var head: RequestHead?
    private var body: [UInt8] = []
    private var handlerTask: Task<Void, Never>?
    /// Whether the current handler asked to outlive a hang-up (``HTTPRequest/keepRunningIfClientLeaves()``).
    private let hangUp = HangUpPolicy()

    private var outbound: [UInt8] = []
    private var outboundOffset = 0
    private var writeWaiters: [CheckedContinuation<Void, any Error>] = []

    private var timer: TimerID?

    init(fd: CInt, remoteAddress: SocketAddress?, context: ServerLoopContext) {
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.context = context
        self.parser = RequestParser(limits: context.configuration.limits)
        self.machine = HTTPConnectionStateMachine(configuration: context.configuration)
    }

    /// Registers with the loop and starts the idle timeout.
    func start() throws(IOError) {
        try loop.register(fd, interest: machine.interest, handler: self)
        context.add(self)
        perform(machine.start(now: .system))
    }

    private var handlerKeepsRunning: Bool { hangUp.keepsHandler.load(ordering: .relaxed) }

    // MARK: - Selector events

    func selectorEvents(_ events: SelectorEvents) {
        if events.contains(.error) || events.contains(.hangup) {
            perform(machine.connectionFailed(handlerKeepsRunning: handlerKeepsRunning))
            return
        }
        if events.contains(.writable) { flush() }
        if events.contains(.readable) {
            readAvailable()
        } else if events.contains(.readHangup) {
            perform(machine.readHangup(handlerKeepsRunning: handlerKeepsRunning))
        }
    }

    private func readAvailable() {
        let discard: Bool
        switch machine.readable() {
        case .read: discard = false
        case .discardInput: discard = true
        case let action:
            perform(action)
            return
        }
        let buffer = context.readBuffer
        let result: IOResult<Int>
        do {
            result = try Socket.read(fd, into: buffer)
        } catch {
            perform(machine.connectionFailed(handlerKeepsRunning: handlerKeepsRunning))
            return
        }
        guard case .processed(let count) = result else { return }
        if count == 0 {
            perform(machine.inputEnded())
            return
        }
        if discard { return }
        let wasAwaiting = parser.isAwaitingRequest
        parser.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        if wasAwaiting && !parser.isAwaitingRequest {
            perform(machine.requestStarted(now: .system))
        }
        processInput()
    }

    // MARK: - Requests

    private func processInput() {
        while machine.isReading {
            let event: RequestParser.Event?
            do {
                event = try parser.next()
            } catch {
                if case .refuse = machine.parseFailed() {
                    refuse(ProtocolError(status: error.status, parseError: error, head: head))
                }
                return
            }
            guard let event else { return }
            switch event {
            case .head(let newHead):
                let action = machine.parsedHead(newHead, now: .system)
                head = newHead
                body = []
                if case .sendContinue(let arm) = action {
                    if let arm { armTimer(arm) }
                    outbound.append(contentsOf: Self.continueBytes)
                    flush()
                } else {
                    perform(action)
                }
            case .body(let bytes):
                // A body usually comes in one piece: keep that array instead of copying it.
                if body.isEmpty { body = bytes } else { body.append(contentsOf: bytes) }
            case .end:
                guard let head = head.take(), case .dispatch = machine.requestEnded() else { return }
                hangUp.keepsHandler.store(false, ordering: .relaxed)
                let request = HTTPRequest(head: head, body: body, remoteAddress: remoteAddress, hangUp: hangUp)
                body = []
                dispatch(request)
            }
        }
    }

    private static let continueBytes = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    private func dispatch(_ request: HTTPRequest) {
        let connection = LoopBound(self, loop: loop)
        let responder = context.responder
        let errorResponder = context.configuration.errorResponder
        // The task starts on this thread at once and runs until its first suspension, so a
        // handler that answers without waiting is served inside this read event; after a
        // suspension it resumes on this loop, its executor.
        let task = Task.immediate(executorPreference: loop) {
            await FrameReserve.reserve()
            let response: HTTPResponse
            do {
                response = try await responder(request)
            } catch {
                response = errorResponder(error, request)
            }
            let end = await HTTPConnection.send(response, on: connection)
            if let finished = response.finished { await finished(end) }
        }
        if machine.dispatchReturned() { handlerTask = task }
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
    private func writeHead(
        _ response: HTTPResponse, for request: HTTPConnectionStateMachine.Request, contentLength: Int?
    ) -> HTTPConnectionStateMachine.ResponseHead? {
        ResponseEncoder.writeStatusLine(status: response.status, version: request.httpVersion, into: &outbound)
        var hasDate = false
        var closeAsked = false
        for field in response.headers {
            switch ManagedField(field.name) {
            case .connection:
                if field.value.split(separator: ",").contains(where: {
                    $0.lowercased().filter { $0 != " " && $0 != "\t" } == "close"
                }) {
                    closeAsked = true
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
        guard
            let head = machine.respond(
                status: response.status.code, closeAsked: closeAsked,
                body: contentLength == nil ? .stream : .complete)
        else { return nil }
        switch head.framing {
        case .contentLength:
            ResponseEncoder.writeField(name: "Content-Length", value: contentLength ?? 0, into: &outbound)
        case .chunked:
            ResponseEncoder.writeField(name: "Transfer-Encoding", value: "chunked", into: &outbound)
        case .none:
            break
        }
        switch head.connection {
        case .close: ResponseEncoder.writeField(name: "Connection", value: "close", into: &outbound)
        case .keepAlive: ResponseEncoder.writeField(name: "Connection", value: "keep-alive", into: &outbound)
        case .none: break
        }
        ResponseEncoder.writeEndOfHead(into: &outbound)
        return head
    }

    // The four calls a handler's task makes stay out of line: inlined into `send`, their
    // locals would take room in the task's own allocator, a second slab for every request.

    /// Queues the whole response; false when the connection closed before it could.
    @discardableResult
    @inline(never)
    private func writeResponse(_ response: HTTPResponse, body: [UInt8]) -> Bool {
        guard let request = machine.requestAwaitingResponse,
            let head = writeHead(response, for: request, contentLength: body.count)
        else { return false }
        handlerTask = nil
        if head.sendsBody { outbound.append(contentsOf: body) }
        flush()
        // Closed with this response still queued: the write failed, the client is gone. A
        // response written whole is no longer unsent, even on a connection that then closed
        // or moved to another loop.
        return !machine.closedWithResponseUnsent
    }

    private enum StreamStart: Sendable {
        case streaming, headOnly, closed
    }

    /// Writes the head of a streamed response: `.headOnly` for a response without a body
    /// (`HEAD`), `.closed` when the connection is already gone.
    @inline(never)
    private func beginStream(_ response: HTTPResponse) -> StreamStart {
        guard let request = machine.requestAwaitingResponse,
            let head = writeHead(response, for: request, contentLength: nil)
        else { return .closed }
        flush()
        if !head.sendsBody { return .headOnly }
        return machine.isStreaming ? .streaming : .closed
    }

    /// Queues one piece of a streamed body; the continuation resumes once the unsent bytes
    /// are under the high watermark, or throws when the connection is gone.
    func writeBodyChunk(_ bytes: [UInt8], continuation: CheckedContinuation<Void, any Error>) {
        guard case .writeBody(let chunked) = machine.bodyPiece() else {
            continuation.resume(throwing: ConnectionClosedError())
            return
        }
        if chunked {
            ResponseEncoder.writeChunk(bytes, into: &outbound)
        } else {
            outbound.append(contentsOf: bytes)
        }
        flush()
        switch machine.bodyPieceQueued(unsentBytes: outbound.count - outboundOffset) {
        case .connectionGone: continuation.resume(throwing: ConnectionClosedError())
        case .waitForDrain: writeWaiters.append(continuation)
        default: continuation.resume()
        }
    }

    /// Ends a streamed body; false when the connection closed before it could.
    @inline(never)
    private func endStream() -> Bool {
        guard case .endBody(let lastChunk) = machine.bodyEnded() else { return false }
        handlerTask = nil
        if lastChunk { ResponseEncoder.writeLastChunk(into: &outbound) }
        flush()
        return true
    }

    /// The producer failed: what is queued is sent, then the connection closes without the
    /// last chunk. False when the connection had already closed.
    @inline(never)
    private func abortStream() -> Bool {
        guard case .flush = machine.bodyAborted() else { return false }
        handlerTask = nil
        flush()
        return true
    }

    /// Answers a request the server refuses itself, then closes; the machine has taken the
    /// connection to answering it.
    private func refuse(_ error: ProtocolError) {
        head = nil
        body = []
        let response = context.configuration.protocolErrorResponder(error)
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

    // MARK: - Writing

    private func flush() {
        while outboundOffset < outbound.count {
            let result: IOResult<Int>
            do {
                result = try outbound.withUnsafeBytes { bytes throws(IOError) in
                    try Socket.write(fd, UnsafeRawBufferPointer(rebasing: bytes[outboundOffset...]))
                }
            } catch {
                perform(machine.connectionFailed(handlerKeepsRunning: handlerKeepsRunning))
                return
            }
            switch result {
            case .processed(let written):
                outboundOffset += written
                perform(machine.wrote(now: .system))
            case .wouldBlock:
                perform(machine.writeWouldBlock(now: .system))
                return
            }
        }
        if outbound.capacity > 1 << 20 { outbound = [] } else { outbound.removeAll(keepingCapacity: true) }
        outboundOffset = 0
        let action = machine.flushed(parserAwaitingRequest: parser.isAwaitingRequest, now: .system)
        resumeWriters()
        perform(action)
    }

    private func resumeWriters() {
        guard !writeWaiters.isEmpty else { return }
        let waiters = writeWaiters
        writeWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// The response is out and the connection stays open: read the next request, here or on
    /// another loop.
    private func resumeReading(_ resume: HTTPConnectionStateMachine.Resume) {
        if resume.mayHandOff, let target = context.distributor.handOffTarget(from: context) {
            handOff(to: target)
            return
        }
        if let interest = resume.interest { register(interest) }
        if let arm = resume.arm { armTimer(arm) }
        if resume.parseLater {
            let connection = LoopBound(self, loop: loop)
            loop.execute { connection.value.processInput() }
        } else {
            processInput()
        }
    }

    // MARK: - Closing

    /// The server is shutting down: close now if idle, otherwise after the current response.
    func quiesce() {
        perform(machine.drain(parserAwaitingRequest: parser.isAwaitingRequest))
    }

    /// Serves the request that has come (still in the socket) and closes after its answer.
    func serveLastRequest() {
        perform(machine.drain(parserAwaitingRequest: false))
    }

    /// Moves the connection, idle between two requests with nothing buffered either way, to
    /// `target`'s loop: this loop stops watching it and forgets it, and `target` starts it
    /// afresh (a request already on its way waits in the socket until then).
    private func handOff(to target: LoopBound<ServerLoopContext>) {
        machine.handedOff()
        loop.deregister(fd)
        cancelTimer()
        context.detach(self)
        let fd = fd
        let peer = remoteAddress
        target.loop.execute { ConnectionDistributor.start(fd: fd, peer: peer, on: target.value) }
    }

    /// Closes the socket at once, cancelling a running handler and failing waiting writers.
    func close() {
        perform(machine.closeRequested(handlerKeepsRunning: handlerKeepsRunning))
    }

    private func closeSocket(cancelHandler: Bool) {
        loop.deregister(fd)
        Socket.close(fd)
        cancelTimer()
        if cancelHandler { handlerTask?.cancel() }
        handlerTask = nil
        let waiters = writeWaiters
        writeWaiters = []
        for waiter in waiters { waiter.resume(throwing: ConnectionClosedError()) }
        outbound = []
        context.remove(self)
    }

    // MARK: - Actions

    /// Performs what an event asked for. Actions particular to one event are performed where
    /// that event is fed.
    private func perform(_ action: Action) {
        switch action {
        case .none:
            break
        case .armTimer(let deadline):
            armTimer(deadline)
        case .setInterest(let interest):
            register(interest)
        case .watchWritable(let interest, let arm):
            register(interest)
            if let arm { armTimer(arm) }
        case .linger(let arm):
            Socket.shutdownWrite(fd)
            register(machine.interest)
            if let arm { armTimer(arm) }
        case .resumeReading(let resume):
            resumeReading(resume)
        case .close(let cancelHandler):
            closeSocket(cancelHandler: cancelHandler)
        case .read, .discardInput, .sendContinue, .dispatch, .refuse, .writeBody, .waitForDrain, .endBody, .flush,
            .connectionGone:
            assertionFailure("\(action) is performed where its event is fed")
        }
    }

    private func register(_ interest: SelectorInterest) {
        do {
            try loop.reregister(fd, interest: interest)
        } catch {
            perform(machine.connectionFailed(handlerKeepsRunning: handlerKeepsRunning))
        }
    }

    // MARK: - Timer

    private func armTimer(_ deadline: HTTPConnectionStateMachine.Deadline) {
        // An interest change that failed has closed the connection since the deadline was set.
        guard !machine.isClosed else { return }
        if let timer { loop.cancelTimer(timer) }
        timer = loop.scheduleTimer(at: deadline.at) { [unowned self] in self.timerFired() }
    }

    private func cancelTimer() {
        if let timer { loop.cancelTimer(timer) }
        timer = nil
    }

    private func timerFired() {
        timer = nil
        let action = machine.timerFired(now: .system, handlerKeepsRunning: handlerKeepsRunning)
        if case .refuse = action {
            refuse(ProtocolError(status: .requestTimeout, parseError: nil, head: head))
        } else {
            perform(action)
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
