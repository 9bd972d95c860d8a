import EventLoop
import HTTP1

/// Where the connection's state machine gets the current instant. Read only when a deadline
/// moves, so an event that moves none costs no clock read.
protocol InstantSource {
    func instant() -> MonotonicInstant
}

/// The monotonic clock.
struct SystemClock: InstantSource {
    @inline(__always)
    func instant() -> MonotonicInstant { .now() }
}

extension InstantSource where Self == SystemClock {
    static var system: SystemClock { SystemClock() }
}

/// A clock stopped at this instant.
extension MonotonicInstant: InstantSource {
    func instant() -> MonotonicInstant { self }
}

/// The decisions of one connection, without its I/O: when a request is dispatched, how its
/// response is framed, whether the connection then reads on, lingers or closes, what the
/// selector watches and which deadline guards it.
///
/// ``HTTPConnection`` feeds it what happened (bytes, parser events, the handler's progress,
/// writes, selector events, timers, the server's shutdown) and performs the ``Action`` each
/// event returns. Nothing here touches the socket, the loop or a task, and time comes in
/// from outside: an ``InstantSource`` asked only when a deadline moves (the connection passes
/// the monotonic clock, the tests fixed instants).
///
/// A connection serves one request at a time. While a handler runs it stops reading (a
/// pipelined request waits in the parser's buffer, so input stays bounded) but still watches
/// for the peer hanging up. One deadline at a time guards it, and its timer is re-armed
/// lazily: a deadline that moves later keeps the armed timer, which fires early and re-arms.
struct HTTPConnectionStateMachine {
    /// In nanoseconds, converted once: a deadline is set for most requests.
    struct Timeouts: Equatable {
        var idle: UInt64
        var header: UInt64
        var body: UInt64
        var writeStall: UInt64
        var linger: UInt64

        init(idle: Duration, header: Duration, body: Duration, writeStall: Duration, linger: Duration) {
            self.idle = idle.nanosecondsClamped
            self.header = header.nanosecondsClamped
            self.body = body.nanosecondsClamped
            self.writeStall = writeStall.nanosecondsClamped
            self.linger = linger.nanosecondsClamped
        }

        subscript(kind: DeadlineKind) -> UInt64 {
            switch kind {
            case .idle: idle
            case .header: header
            case .body: body
            case .writeStall: writeStall
            case .linger: linger
            }
        }
    }

    enum DeadlineKind: Equatable {
        /// A kept-alive connection with no request in progress.
        case idle
        /// From the first byte of a request to the end of its head.
        case header
        /// From the end of the head to the end of the body.
        case body
        /// A write that makes no progress.
        case writeStall
        /// After the last response, unread input is discarded until then.
        case linger
    }

    struct Deadline: Equatable {
        var kind: DeadlineKind
        var at: MonotonicInstant
    }

    /// What a response depends on of its request.
    struct Request: Equatable {
        enum Version: Equatable {
            case http1_0, http1_1
        }

        var version: Version
        var isHEAD: Bool

        /// Stands in for a refused request whose head never arrived: HTTP/1.1 is right for any client.
        static let placeholder = Request(version: .http1_1, isHEAD: false)

        init(version: Version, isHEAD: Bool) {
            self.version = version
            self.isHEAD = isHEAD
        }

        /// The parser accepts HTTP/1.0 and HTTP/1.1 only.
        init(_ head: RequestHead) {
            self.init(version: head.version == .http1_0 ? .http1_0 : .http1_1, isHEAD: head.method == .HEAD)
        }

        var httpVersion: HTTPVersion { version == .http1_0 ? .http1_0 : .http1_1 }
    }

    enum State: Equatable {
        /// Reading a request, or waiting for the next one. `keepAlive` is false once the server drains.
        case reading(Reading, keepAlive: Bool)
        /// A handler is producing the response; reading is paused. `inline`: it runs inside
        /// the call that dispatched it (it has not suspended yet), or it is the server's own refusal.
        case processing(Request, keepAlive: Bool, inline: Bool)
        /// The response head is written; `body` tells what remains.
        case responding(ResponseBody, keepAlive: Bool, inline: Bool)
        /// The last response is out and the write side is shut; input is discarded until the
        /// peer closes or the linger time ends.
        case lingering
        /// `responseUnsent`: it closed with a queued response not fully written (the client
        /// is gone; the handler's finished hook is told so).
        case closed(responseUnsent: Bool)
    }

    enum Reading: Equatable {
        /// No head yet: idle, or some bytes of the next head.
        case head
        /// The head is parsed; the body (possibly empty) is being read.
        case body(Request)
    }

    enum ResponseBody: Equatable {
        /// A stream's pieces follow, chunked or (HTTP/1.0) raw until the connection closes.
        case streaming(chunked: Bool)
        /// Every byte of the response is queued; it ends when they are written.
        case queued
    }

    enum ResponseKind: Equatable {
        /// A body known whole, sent with `Content-Length`.
        case complete
        /// A body produced piece by piece.
        case stream
    }

    /// How to end a response head the handler's fields are already written for.
    struct ResponseHead: Equatable {
        enum Framing: Equatable {
            /// No framing field: a status without a body, or an HTTP/1.0 stream that ends with the connection.
            case none
            case contentLength
            case chunked
        }

        enum ConnectionField: Equatable {
            case none
            case close
            /// HTTP/1.0 keeps the connection only when told.
            case keepAlive
        }

        var framing: Framing
        var connection: ConnectionField
        /// False for `HEAD` and for a status without a body (1xx, 204, 304).
        var sendsBody: Bool
    }

    /// After the last byte of a kept-alive response: read the next request.
    struct Resume: Equatable {
        /// The selector interest to register, when it changed.
        var interest: SelectorInterest?
        /// The deadline to arm the timer for, when the armed one would fire after it.
        var arm: Deadline?
        /// Idle between two requests with nothing buffered: the connection may move to
        /// another loop instead (and then none of the rest applies).
        var mayHandOff: Bool
        /// The response ended inside the dispatch of its request: parse the next one from the
        /// loop, not recursively, so a burst of pipelined requests cannot grow the stack.
        var parseLater: Bool
    }

    enum Action: Equatable {
        case none
        /// Cancel the armed timer, if any, and arm one for this deadline.
        case armTimer(Deadline)
        /// Register this selector interest.
        case setInterest(SelectorInterest)
        /// Read the socket and parse what came.
        case read
        /// Read the socket and drop what came.
        case discardInput
        /// Write `100 Continue`, after arming the timer when a deadline is given.
        case sendContinue(arm: Deadline?)
        /// Run the handler for the request just parsed.
        case dispatch
        /// Answer with the server's own error status (the parse error, or 408 for a timeout), then close.
        case refuse
        /// The write would block: register this interest, and arm the timer when a deadline is given.
        case watchWritable(SelectorInterest, arm: Deadline?)
        /// Queue a piece of a streamed body, as a chunk or raw.
        case writeBody(chunked: Bool)
        /// The producer waits until the unsent bytes drain.
        case waitForDrain
        /// Queue the end of a streamed body (the last chunk when chunked) and flush.
        case endBody(lastChunk: Bool)
        /// Flush what is queued.
        case flush
        /// The response has nowhere to go: the connection is closed.
        case connectionGone
        /// Shut the write side, watch input only, and arm the timer when a deadline is given.
        case linger(arm: Deadline?)
        case resumeReading(Resume)
        /// Close the socket; cancel the handler's task when told.
        case close(cancelHandler: Bool)
    }

    let timeouts: Timeouts
    /// `100 Continue` is sent only for a body that can fit this.
    let maxBodyBytes: Int
    /// A stream producer waits while more than this many bytes are unsent.
    let writeHighWatermark: Int

    private(set) var state = State.reading(.head, keepAlive: true)
    /// What the selector watches.
    private(set) var interest: SelectorInterest = [.read, .readHangup]
    private(set) var deadline: Deadline?
    /// When the armed timer fires; nil when none is armed.
    private(set) var timer: MonotonicInstant?

    init(timeouts: Timeouts, maxBodyBytes: Int, writeHighWatermark: Int) {
        self.timeouts = timeouts
        self.maxBodyBytes = maxBodyBytes
        self.writeHighWatermark = writeHighWatermark
    }

    init(configuration: ServerConfiguration) {
        self.init(
            timeouts: Timeouts(
                idle: configuration.idleTimeout, header: configuration.headerReadTimeout,
                body: configuration.bodyReadTimeout, writeStall: configuration.writeStallTimeout,
                linger: configuration.lingerTimeout),
            maxBodyBytes: configuration.limits.maxBodyBytes,
            writeHighWatermark: configuration.writeHighWatermark)
    }

    // MARK: - Queries

    var isReading: Bool {
        if case .reading = state { return true }
        return false
    }

    var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    /// The request a handler's response can be written for: nil once the connection closed.
    var requestAwaitingResponse: Request? {
        if case .processing(let request, _, _) = state { return request }
        return nil
    }

    var isStreaming: Bool {
        if case .responding(.streaming, _, _) = state { return true }
        return false
    }

    /// Closed with a queued response not fully written: the write failed, the client is gone.
    var closedWithResponseUnsent: Bool {
        state == .closed(responseUnsent: true)
    }

    // MARK: - Opening and reading

    /// The connection is registered.
    mutating func start(now: some InstantSource) -> Action {
        setDeadline(.idle, now)
    }

    /// The socket has input.
    mutating func readable() -> Action {
        switch state {
        case .reading: return .read
        case .lingering: return .discardInput
        case .processing, .responding:
            // A pipelined request while a response is pending: stop reading until the response
            // is out, so input stays bounded. Dropped lazily: most clients send nothing while
            // they wait, and then the interest never changes.
            return setInterest(interest.subtracting(.read))
        case .closed: return .none
        }
    }

    /// The first bytes of a request arrived (the parser no longer awaits one).
    mutating func requestStarted(now: some InstantSource) -> Action {
        guard case .reading(.head, _) = state else { return .none }
        return setDeadline(.header, now)
    }

    mutating func parsedHead(_ head: RequestHead, now: some InstantSource) -> Action {
        guard case .reading(.head, let keepAlive) = state else { return .none }
        state = .reading(.body(Request(head)), keepAlive: keepAlive && head.keepAlive)
        guard head.framing != .none else { return .none }
        let arm = moveDeadline(.body, now)
        if head.expectsContinue && head.version == .http1_1 && bodyFitsLimit(head.framing) {
            return .sendContinue(arm: arm)
        }
        return arm.map(Action.armTimer) ?? .none
    }

    private func bodyFitsLimit(_ framing: BodyFraming) -> Bool {
        if case .contentLength(let length) = framing { return length <= maxBodyBytes }
        return true
    }

    /// The request is complete.
    mutating func requestEnded() -> Action {
        guard case .reading(.body(let request), let keepAlive) = state else { return .none }
        state = .processing(request, keepAlive: keepAlive, inline: true)
        deadline = nil
        return .dispatch
    }

    /// The dispatch call returned: the handler suspended or finished. True when it is still
    /// running, so its task is worth keeping for a cancellation.
    mutating func dispatchReturned() -> Bool {
        switch state {
        case .processing(let request, let keepAlive, _):
            state = .processing(request, keepAlive: keepAlive, inline: false)
            return true
        case .responding(let body, let keepAlive, _):
            state = .responding(body, keepAlive: keepAlive, inline: false)
            return body != .queued
        case .reading, .lingering, .closed:
            return false
        }
    }

    mutating func parseFailed() -> Action {
        refuse()
    }

    private mutating func refuse() -> Action {
        guard case .reading(let reading, _) = state else { return .none }
        var request = Request.placeholder
        if case .body(let parsed) = reading { request = parsed }
        state = .processing(request, keepAlive: false, inline: true)
        return .refuse
    }

    // MARK: - Responses

    /// The handler's status and fields are written; `closeAsked`: they include `Connection: close`.
    /// Nil when no response is awaited (see ``requestAwaitingResponse``).
    mutating func respond(status: Int, closeAsked: Bool, body kind: ResponseKind) -> ResponseHead? {
        guard case .processing(let request, var keepAlive, let inline) = state else { return nil }
        let bodyless = status < 200 || status == 204 || status == 304
        if closeAsked { keepAlive = false }
        let framing: ResponseHead.Framing
        switch kind {
        case .complete:
            framing = bodyless ? .none : .contentLength
        case .stream where request.version == .http1_1:
            framing = bodyless ? .none : .chunked
        case .stream:
            framing = .none
            keepAlive = false // an HTTP/1.0 stream ends when the connection closes
        }
        let connection: ResponseHead.ConnectionField =
            !keepAlive ? .close : request.version == .http1_0 ? .keepAlive : .none
        let sendsBody = !request.isHEAD && !bodyless
        let body: ResponseBody = kind == .stream && sendsBody ? .streaming(chunked: framing == .chunked) : .queued
        state = .responding(body, keepAlive: keepAlive, inline: inline)
        return ResponseHead(framing: framing, connection: connection, sendsBody: sendsBody)
    }

    /// The producer has a piece of the body.
    func bodyPiece() -> Action {
        guard case .responding(.streaming(let chunked), _, _) = state else { return .connectionGone }
        return .writeBody(chunked: chunked)
    }

    /// A piece is queued and flushed as far as the socket took it.
    func bodyPieceQueued(unsentBytes: Int) -> Action {
        guard case .responding = state else { return .connectionGone }
        return unsentBytes > writeHighWatermark ? .waitForDrain : .none
    }

    /// The producer finished.
    mutating func bodyEnded() -> Action {
        guard case .responding(.streaming(let chunked), let keepAlive, let inline) = state else {
            return .connectionGone
        }
        state = .responding(.queued, keepAlive: keepAlive, inline: inline)
        return .endBody(lastChunk: chunked)
    }

    /// The producer failed mid-body: the client must not mistake the truncated body for a
    /// whole one, so what is queued is sent and the connection closes without the last chunk.
    mutating func bodyAborted() -> Action {
        guard case .responding(.streaming, _, let inline) = state else { return .connectionGone }
        state = .responding(.queued, keepAlive: false, inline: inline)
        return .flush
    }

    // MARK: - Writing

    /// A write took some bytes: a stalled write's deadline moves back.
    mutating func wrote(now: some InstantSource) -> Action {
        guard deadline?.kind == .writeStall else { return .none }
        return setDeadline(.writeStall, now)
    }

    mutating func writeWouldBlock(now: some InstantSource) -> Action {
        guard !interest.contains(.write), !isClosed else { return .none }
        interest.insert(.write)
        return .watchWritable(interest, arm: moveDeadline(.writeStall, now))
    }

    /// Everything queued is written. `parserAwaitingRequest`: nothing of a next request is buffered.
    mutating func flushed(parserAwaitingRequest: Bool, now: some InstantSource) -> Action {
        guard !isClosed else { return .none }
        let registered = interest
        if interest.contains(.write) {
            interest.remove(.write)
            if deadline?.kind == .writeStall { deadline = nil }
        }
        guard case .responding(.queued, let keepAlive, let inline) = state else {
            return interest != registered ? .setInterest(interest) : .none
        }
        guard keepAlive else {
            state = .lingering
            interest = [.read]
            return .linger(arm: moveDeadline(.linger, now))
        }
        state = .reading(.head, keepAlive: true)
        interest.insert(.read)
        var arm = moveDeadline(.idle, now)
        if !parserAwaitingRequest {
            // A pipelined request is already under way.
            arm = moveDeadline(.header, now) ?? arm
        }
        return .resumeReading(
            Resume(
                interest: interest != registered ? interest : nil, arm: arm,
                mayHandOff: parserAwaitingRequest, parseLater: inline))
    }

    /// Another loop takes the connection, between two requests.
    mutating func handedOff() {
        state = .closed(responseUnsent: false)
        deadline = nil
        timer = nil
    }

    // MARK: - Closing

    /// The socket failed: an error or hang-up from the selector, a read or write error.
    /// `handlerKeepsRunning`: the handler asked to outlive its client.
    mutating func connectionFailed(handlerKeepsRunning: Bool) -> Action {
        close(handlerKeepsRunning: handlerKeepsRunning)
    }

    /// The peer shut its write side, seen without input to read.
    mutating func readHangup(handlerKeepsRunning: Bool) -> Action {
        // While reading, the read that follows sees the end of input. Otherwise the peer is
        // gone while its request is being answered: stop paying for it.
        if case .reading = state { return .none }
        return close(handlerKeepsRunning: handlerKeepsRunning)
    }

    /// A read found the end of input: a client that vanished mid-request, or is done after its last response.
    mutating func inputEnded() -> Action {
        close(handlerKeepsRunning: false)
    }

    /// The server shuts down: close now if idle, otherwise after the current response.
    mutating func drain(parserAwaitingRequest: Bool) -> Action {
        switch state {
        case .reading(.head, _) where parserAwaitingRequest:
            return close(handlerKeepsRunning: false)
        case .reading(let reading, _):
            state = .reading(reading, keepAlive: false)
        case .processing(let request, _, let inline):
            state = .processing(request, keepAlive: false, inline: inline)
        case .responding(let body, _, let inline):
            state = .responding(body, keepAlive: false, inline: inline)
        case .lingering, .closed:
            break
        }
        return .none
    }

    mutating func closeRequested(handlerKeepsRunning: Bool) -> Action {
        close(handlerKeepsRunning: handlerKeepsRunning)
    }

    mutating func timerFired(now: some InstantSource, handlerKeepsRunning: Bool) -> Action {
        timer = nil
        guard !isClosed, let deadline else { return .none }
        if now.instant() < deadline.at {
            timer = deadline.at
            return .armTimer(deadline)
        }
        self.deadline = nil
        switch deadline.kind {
        case .idle, .writeStall, .linger:
            return close(handlerKeepsRunning: handlerKeepsRunning)
        case .header, .body:
            return refuse()
        }
    }

    private mutating func close(handlerKeepsRunning: Bool) -> Action {
        // A handler still inside its dispatch has no task to cancel yet; once its response is
        // queued, its task only has the finished hook left, which must run.
        var handlerRunning = false
        var responseUnsent = false
        switch state {
        case .closed:
            return .none
        case .processing(_, _, let inline), .responding(.streaming, _, let inline):
            handlerRunning = !inline
        case .responding(.queued, _, _):
            responseUnsent = true
        case .reading, .lingering:
            break
        }
        state = .closed(responseUnsent: responseUnsent)
        deadline = nil
        timer = nil
        return .close(cancelHandler: handlerRunning && !handlerKeepsRunning)
    }

    // MARK: - Helpers

    private mutating func setInterest(_ newInterest: SelectorInterest) -> Action {
        guard newInterest != interest else { return .none }
        interest = newInterest
        return .setInterest(newInterest)
    }

    private mutating func setDeadline(_ kind: DeadlineKind, _ now: some InstantSource) -> Action {
        moveDeadline(kind, now).map(Action.armTimer) ?? .none
    }

    /// Moves the deadline to `kind`'s timeout from now. Returns the deadline to arm the timer
    /// for, or nil when the armed timer fires no later (it then re-arms itself).
    private mutating func moveDeadline(_ kind: DeadlineKind, _ now: some InstantSource) -> Deadline? {
        let at = MonotonicInstant(nanoseconds: now.instant().nanoseconds &+ timeouts[kind])
        let newDeadline = Deadline(kind: kind, at: at)
        deadline = newDeadline
        if let timer, timer <= newDeadline.at { return nil }
        timer = newDeadline.at
        return newDeadline
    }
}
