import EventLoop
import HTTP1
import Testing

@testable import HTTPServer

private typealias Machine = HTTPConnectionStateMachine
private typealias Resume = HTTPConnectionStateMachine.Resume
private typealias ResponseHead = HTTPConnectionStateMachine.ResponseHead

/// Each timeout a different number of seconds, so an instant tells which deadline it is.
private let timeouts = Machine.Timeouts(
    idle: .seconds(60), header: .seconds(10), body: .seconds(30), writeStall: .seconds(20), linger: .seconds(2))

private let readInterest: SelectorInterest = [.read, .readHangup]

/// An instant `milliseconds` after the clock's start.
private func t(_ milliseconds: UInt64) -> MonotonicInstant {
    MonotonicInstant(nanoseconds: 7_000_000_000 + milliseconds * 1_000_000)
}

private func deadline(_ kind: Machine.DeadlineKind, _ milliseconds: UInt64) -> Machine.Deadline {
    Machine.Deadline(kind: kind, at: t(milliseconds))
}

private func machine(maxBodyBytes: Int = 1000, watermark: Int = 100) -> Machine {
    Machine(timeouts: timeouts, maxBodyBytes: maxBodyBytes, writeHighWatermark: watermark)
}

private func request(
    _ method: HTTPMethod = .GET, _ version: HTTPVersion = .http1_1, headers: HTTPHeaders = HTTPHeaders(),
    framing: BodyFraming = .none
) -> RequestHead {
    RequestHead(method: method, target: "/", path: "/", version: version, headers: headers, framing: framing)
}

/// Checks what an event returned. (`#expect` cannot take a mutating call apart.)
private func expect<Value: Equatable>(
    _ actual: Value, _ expected: Value, sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(actual == expected, sourceLocation: sourceLocation)
}

private let contentLengthHead = ResponseHead(framing: .contentLength, connection: .none, sendsBody: true)
private let chunkedHead = ResponseHead(framing: .chunked, connection: .none, sendsBody: true)

/// A machine started at 0 ms that read `head` at 1 ms and whose handler then suspended.
private func processing(_ head: RequestHead = request(), watermark: Int = 100) -> Machine {
    var connection = machine(watermark: watermark)
    _ = connection.start(now: t(0))
    _ = connection.readable()
    _ = connection.requestStarted(now: t(1))
    _ = connection.parsedHead(head, now: t(1))
    _ = connection.requestEnded()
    _ = connection.dispatchReturned()
    return connection
}

/// As ``processing(_:watermark:)``, with a stream's head written.
private func streaming(_ head: RequestHead = request(), watermark: Int = 100) -> Machine {
    var connection = processing(head, watermark: watermark)
    _ = connection.respond(status: 200, closeAsked: false, body: .stream)
    return connection
}

@Suite("HTTP connection state machine")
struct HTTPConnectionStateMachineTests {
    // MARK: - Keep-alive

    @Test("HTTP/1.1 keeps the connection by default: after the response it reads the next request")
    func keepAliveByDefault() {
        var connection = machine()
        expect(connection.start(now: t(0)), .armTimer(deadline(.idle, 60_000)))
        expect(connection.readable(), .read)
        expect(connection.requestStarted(now: t(1)), .armTimer(deadline(.header, 10_001)))
        expect(connection.parsedHead(request(), now: t(2)), .none)
        expect(connection.requestEnded(), .dispatch)
        #expect(connection.deadline == nil)
        expect(connection.dispatchReturned(), true)
        #expect(connection.requestAwaitingResponse == Machine.Request(version: .http1_1, isHEAD: false))
        expect(connection.respond(status: 200, closeAsked: false, body: .complete), contentLengthHead)
        expect(connection.wrote(now: t(3)), .none)
        expect(
            connection.flushed(parserAwaitingRequest: true, now: t(3)),
            .resumeReading(Resume(interest: nil, arm: nil, mayHandOff: true, parseLater: false)))
        #expect(connection.state == .reading(.head, keepAlive: true))
        // The header timer, armed earlier, stays: it fires early and re-arms for the idle deadline.
        #expect(connection.deadline == deadline(.idle, 60_003))
        #expect(connection.timer == t(10_001))
        expect(connection.readable(), .read)
    }

    @Test("HTTP/1.0 without keep-alive: the response says Connection: close, then the connection lingers")
    func http10Closes() {
        var connection = processing(request(.GET, .http1_0))
        expect(
            connection.respond(status: 200, closeAsked: false, body: .complete),
            ResponseHead(framing: .contentLength, connection: .close, sendsBody: true))
        expect(connection.flushed(parserAwaitingRequest: true, now: t(5)), .linger(arm: deadline(.linger, 2_005)))
        #expect(connection.state == .lingering)
        #expect(connection.interest == [.read])
    }

    @Test("HTTP/1.0 with keep-alive: the response says so and the connection stays; the next without it closes")
    func http10KeepAlive() {
        var connection = processing(request(.GET, .http1_0, headers: ["Connection": "keep-alive"]))
        expect(
            connection.respond(status: 200, closeAsked: false, body: .complete),
            ResponseHead(framing: .contentLength, connection: .keepAlive, sendsBody: true))
        expect(
            connection.flushed(parserAwaitingRequest: true, now: t(5)),
            .resumeReading(Resume(interest: nil, arm: nil, mayHandOff: true, parseLater: false)))
        // The timer armed for the first head fires before this one's deadline: it stays.
        expect(connection.requestStarted(now: t(6)), .none)
        #expect(connection.deadline == deadline(.header, 10_006))
        expect(connection.parsedHead(request(.GET, .http1_0), now: t(6)), .none)
        expect(connection.requestEnded(), .dispatch)
        expect(
            connection.respond(status: 200, closeAsked: false, body: .complete),
            ResponseHead(framing: .contentLength, connection: .close, sendsBody: true))
        expect(connection.flushed(parserAwaitingRequest: true, now: t(7)), .linger(arm: deadline(.linger, 2_007)))
    }

    @Test("Connection: close from the client closes after the response")
    func clientAsksClose() {
        var connection = processing(request(headers: ["Connection": "close"]))
        expect(
            connection.respond(status: 200, closeAsked: false, body: .complete),
            ResponseHead(framing: .contentLength, connection: .close, sendsBody: true))
        expect(connection.flushed(parserAwaitingRequest: true, now: t(5)), .linger(arm: deadline(.linger, 2_005)))
    }

    @Test("Connection: close from the handler closes after the response")
    func handlerAsksClose() {
        var connection = processing()
        expect(
            connection.respond(status: 200, closeAsked: true, body: .complete),
            ResponseHead(framing: .contentLength, connection: .close, sendsBody: true))
        expect(connection.flushed(parserAwaitingRequest: true, now: t(5)), .linger(arm: deadline(.linger, 2_005)))
    }

    @Test("a kept-alive connection between requests may move to another loop, and is then closed here")
    func handOff() {
        var connection = processing()
        _ = connection.respond(status: 200, closeAsked: false, body: .complete)
        guard case .resumeReading(let resume) = connection.flushed(parserAwaitingRequest: true, now: t(5)) else {
            Issue.record("the connection does not read on")
            return
        }
        #expect(resume.mayHandOff)
        connection.handedOff()
        #expect(connection.state == .closed(responseUnsent: false))
        #expect(connection.timer == nil && connection.deadline == nil)
        #expect(!connection.closedWithResponseUnsent)
        expect(connection.timerFired(now: t(10_001), handlerKeepsRunning: false), .none)
    }

    // MARK: - Pipelining

    @Test("a pipelined request while the handler runs: reading pauses once, the request waits for the response")
    func pipelinedWhileProcessing() {
        var connection = processing()
        expect(connection.readable(), .setInterest([.readHangup]))
        expect(connection.readable(), .none)
        // The connection parses nothing while it answers: the next request stays in the parser.
        #expect(!connection.isReading)
        expect(connection.requestEnded(), .none)
        #expect(connection.requestAwaitingResponse != nil)
        expect(connection.respond(status: 200, closeAsked: false, body: .complete), contentLengthHead)
        expect(connection.readable(), .none)
        // Bytes of the next request are buffered: no hand-off, and the header deadline runs at once.
        expect(
            connection.flushed(parserAwaitingRequest: false, now: t(5)),
            .resumeReading(Resume(interest: readInterest, arm: nil, mayHandOff: false, parseLater: false)))
        #expect(connection.deadline == deadline(.header, 10_005))
        #expect(connection.isReading)
        expect(connection.parsedHead(request(.POST, framing: .contentLength(5)), now: t(5)), .none)
        expect(connection.requestEnded(), .dispatch)
    }

    @Test("a pipelined request while a stream is written pauses reading too")
    func pipelinedWhileStreaming() {
        var connection = streaming()
        expect(connection.readable(), .setInterest([.readHangup]))
        expect(connection.bodyEnded(), .endBody(lastChunk: true))
        expect(connection.readable(), .none)
        expect(
            connection.flushed(parserAwaitingRequest: false, now: t(5)),
            .resumeReading(Resume(interest: readInterest, arm: nil, mayHandOff: false, parseLater: false)))
    }

    @Test("a response that ends inside its dispatch parses the next request later, from the loop")
    func answeredInline() {
        var connection = machine()
        _ = connection.start(now: t(0))
        _ = connection.requestStarted(now: t(1))
        _ = connection.parsedHead(request(), now: t(1))
        expect(connection.requestEnded(), .dispatch)
        expect(connection.respond(status: 200, closeAsked: false, body: .complete), contentLengthHead)
        expect(
            connection.flushed(parserAwaitingRequest: false, now: t(1)),
            .resumeReading(Resume(interest: nil, arm: nil, mayHandOff: false, parseLater: true)))
        // The handler is done: no task to keep.
        expect(connection.dispatchReturned(), false)
    }

    @Test("the dispatch returning keeps the handler's task while it runs or streams, not once its response is queued")
    func dispatchReturned() {
        var suspended = processing()
        #expect(suspended.state == .processing(.init(version: .http1_1, isHEAD: false), keepAlive: true, inline: false))

        var inlineStream = machine()
        _ = inlineStream.start(now: t(0))
        _ = inlineStream.parsedHead(request(), now: t(1))
        _ = inlineStream.requestEnded()
        _ = inlineStream.respond(status: 200, closeAsked: false, body: .stream)
        expect(inlineStream.dispatchReturned(), true)
        #expect(inlineStream.state == .responding(.streaming(chunked: true), keepAlive: true, inline: false))

        var queuedInline = machine()
        _ = queuedInline.start(now: t(0))
        _ = queuedInline.parsedHead(request(), now: t(1))
        _ = queuedInline.requestEnded()
        _ = queuedInline.respond(status: 200, closeAsked: false, body: .complete)
        expect(
            queuedInline.writeWouldBlock(now: t(1)),
            .watchWritable([.read, .readHangup, .write], arm: deadline(.writeStall, 20_001)))
        expect(queuedInline.dispatchReturned(), false)
        // Written later, from a writable event: the next request is parsed at once.
        expect(
            queuedInline.flushed(parserAwaitingRequest: true, now: t(2)),
            .resumeReading(Resume(interest: readInterest, arm: nil, mayHandOff: true, parseLater: false)))
        expect(suspended.dispatchReturned(), true)
    }

    // MARK: - Half-close and hang-ups

    @Test("the peer shutting its write side while the handler runs closes and cancels the handler")
    func readHangupWhileProcessing() {
        var connection = processing()
        expect(connection.readHangup(handlerKeepsRunning: false), .close(cancelHandler: true))
        #expect(connection.state == .closed(responseUnsent: false))
        #expect(connection.requestAwaitingResponse == nil)
        expect(connection.respond(status: 200, closeAsked: false, body: .complete), nil)
    }

    @Test("a read hang-up while reading is left to the read that follows, which sees the end of input")
    func readHangupWhileReading() {
        var connection = machine()
        _ = connection.start(now: t(0))
        expect(connection.readHangup(handlerKeepsRunning: false), .none)
        expect(connection.readable(), .read)
        expect(connection.inputEnded(), .close(cancelHandler: false))
    }

    @Test("a client that vanishes mid-body is closed and nothing is dispatched")
    func endOfInputMidBody() {
        var connection = machine()
        _ = connection.start(now: t(0))
        _ = connection.requestStarted(now: t(1))
        _ = connection.parsedHead(request(.POST, framing: .contentLength(1000)), now: t(1))
        expect(connection.inputEnded(), .close(cancelHandler: false))
        expect(connection.requestEnded(), .none)
    }

    @Test("the peer closing after the response, while lingering, closes")
    func endOfInputWhileLingering() {
        var connection = processing(request(headers: ["Connection": "close"]))
        _ = connection.respond(status: 200, closeAsked: false, body: .complete)
        _ = connection.flushed(parserAwaitingRequest: true, now: t(5))
        expect(connection.readable(), .discardInput)
        expect(connection.readable(), .discardInput)
        expect(connection.inputEnded(), .close(cancelHandler: false))
        // Its response was written whole before.
        #expect(!connection.closedWithResponseUnsent)
    }

    @Test("the peer leaving mid-stream closes, cancels the producer and fails its next write")
    func hangupWhileStreaming() {
        var connection = streaming()
        expect(connection.bodyPiece(), .writeBody(chunked: true))
        expect(connection.connectionFailed(handlerKeepsRunning: false), .close(cancelHandler: true))
        expect(connection.bodyPiece(), .connectionGone)
        expect(connection.bodyPieceQueued(unsentBytes: 0), .connectionGone)
        expect(connection.bodyEnded(), .connectionGone)
        expect(connection.bodyAborted(), .connectionGone)
        #expect(!connection.closedWithResponseUnsent)
    }

    @Test("the peer leaving while a queued response is written: nothing to cancel, the response is unsent")
    func hangupWhileQueued() {
        var connection = processing()
        _ = connection.respond(status: 200, closeAsked: false, body: .complete)
        expect(connection.writeWouldBlock(now: t(5)), .watchWritable([.read, .readHangup, .write], arm: nil))
        expect(connection.readHangup(handlerKeepsRunning: false), .close(cancelHandler: false))
        #expect(connection.closedWithResponseUnsent)
    }

    @Test("an error or hang-up from the selector closes in any state, once")
    func connectionFailedEverywhere() {
        var idle = machine()
        _ = idle.start(now: t(0))
        expect(idle.connectionFailed(handlerKeepsRunning: false), .close(cancelHandler: false))
        expect(idle.connectionFailed(handlerKeepsRunning: false), .none)

        var working = processing()
        expect(working.connectionFailed(handlerKeepsRunning: false), .close(cancelHandler: true))

        var lingering = processing(request(headers: ["Connection": "close"]))
        _ = lingering.respond(status: 200, closeAsked: false, body: .complete)
        _ = lingering.flushed(parserAwaitingRequest: true, now: t(5))
        expect(lingering.connectionFailed(handlerKeepsRunning: false), .close(cancelHandler: false))
    }

    @Test("after closing, every event does nothing")
    func closedIgnoresEvents() {
        var connection = processing()
        expect(connection.closeRequested(handlerKeepsRunning: false), .close(cancelHandler: true))
        expect(connection.readable(), .none)
        expect(connection.requestStarted(now: t(6)), .none)
        expect(connection.parseFailed(), .none)
        expect(connection.writeWouldBlock(now: t(6)), .none)
        expect(connection.wrote(now: t(6)), .none)
        expect(connection.flushed(parserAwaitingRequest: true, now: t(6)), .none)
        expect(connection.drain(parserAwaitingRequest: true), .none)
        expect(connection.timerFired(now: t(10_001), handlerKeepsRunning: false), .none)
        expect(connection.readHangup(handlerKeepsRunning: false), .none)
        expect(connection.closeRequested(handlerKeepsRunning: false), .none)
        expect(connection.dispatchReturned(), false)
    }

    // MARK: - A handler that outlives its client

    @Test("a handler that asked to keep running if the client leaves is not cancelled by the hang-up")
    func handlerKeepsRunning() {
        var waiting = processing()
        expect(waiting.readHangup(handlerKeepsRunning: true), .close(cancelHandler: false))

        var producing = streaming()
        expect(producing.connectionFailed(handlerKeepsRunning: true), .close(cancelHandler: false))
        expect(producing.bodyPiece(), .connectionGone)

        var stalled = streaming()
        _ = stalled.bodyPiece()
        _ = stalled.writeWouldBlock(now: t(5))
        expect(stalled.timerFired(now: t(20_005), handlerKeepsRunning: true), .close(cancelHandler: false))

        var shutDown = processing()
        expect(shutDown.closeRequested(handlerKeepsRunning: true), .close(cancelHandler: false))
    }

    @Test("a handler still inside its dispatch has no task to cancel yet")
    func closeInsideDispatch() {
        var connection = machine()
        _ = connection.start(now: t(0))
        _ = connection.parsedHead(request(), now: t(1))
        _ = connection.requestEnded()
        _ = connection.respond(status: 200, closeAsked: false, body: .stream)
        expect(connection.connectionFailed(handlerKeepsRunning: false), .close(cancelHandler: false))
        expect(connection.dispatchReturned(), false)
    }

    // MARK: - Timeouts

    @Test("idle: a connection with no request closes when the idle time ends")
    func idleTimeout() {
        var connection = machine()
        expect(connection.start(now: t(0)), .armTimer(deadline(.idle, 60_000)))
        expect(connection.timerFired(now: t(60_000), handlerKeepsRunning: false), .close(cancelHandler: false))
    }

    @Test("idle after a response: the timer armed for the head fires early and re-arms for the idle deadline")
    func idleAfterResponse() {
        var connection = processing()
        _ = connection.respond(status: 200, closeAsked: false, body: .complete)
        _ = connection.flushed(parserAwaitingRequest: true, now: t(5))
        expect(connection.timerFired(now: t(10_001), handlerKeepsRunning: false), .armTimer(deadline(.idle, 60_005)))
        #expect(connection.timer == t(60_005))
        expect(connection.timerFired(now: t(60_005), handlerKeepsRunning: false), .close(cancelHandler: false))
    }

    @Test("header: a head still incomplete when the header time ends is refused (408), and the connection lingers")
    func headerTimeout() {
        var connection = machine()
        _ = connection.start(now: t(0))
        expect(connection.readable(), .read)
        expect(connection.requestStarted(now: t(1_000)), .armTimer(deadline(.header, 11_000)))
        // More header lines do not push the deadline back: a slowloris client is cut off.
        expect(connection.readable(), .read)
        expect(connection.timerFired(now: t(11_000), handlerKeepsRunning: false), .refuse)
        #expect(connection.state == .processing(.placeholder, keepAlive: false, inline: true))
        expect(
            connection.respond(status: 408, closeAsked: false, body: .complete),
            ResponseHead(framing: .contentLength, connection: .close, sendsBody: true))
        expect(
            connection.flushed(parserAwaitingRequest: false, now: t(11_000)), .linger(arm: deadline(.linger, 13_000)))
        expect(connection.timerFired(now: t(13_000), handlerKeepsRunning: false), .close(cancelHandler: false))
    }

    @Test("body: a body still incomplete when the body time ends is refused with the head's version")
    func bodyTimeout() {
        var connection = machine()
        _ = connection.start(now: t(0))
        _ = connection.requestStarted(now: t(1))
        // The header timer fires first and re-arms for the body deadline.
        expect(connection.parsedHead(request(.POST, .http1_0, framing: .contentLength(10)), now: t(2)), .none)
        #expect(connection.deadline == deadline(.body, 30_002))
        expect(connection.timerFired(now: t(10_001), handlerKeepsRunning: false), .armTimer(deadline(.body, 30_002)))
        expect(connection.timerFired(now: t(30_002), handlerKeepsRunning: false), .refuse)
        #expect(connection.requestAwaitingResponse == Machine.Request(version: .http1_0, isHEAD: false))
        expect(
            connection.respond(status: 408, closeAsked: false, body: .complete),
            ResponseHead(framing: .contentLength, connection: .close, sendsBody: true))
    }

    @Test("a dispatched request has no deadline: the handler takes as long as it needs")
    func noDeadlineWhileProcessing() {
        var connection = processing()
        #expect(connection.deadline == nil)
        expect(connection.timerFired(now: t(10_001), handlerKeepsRunning: false), .none)
        #expect(connection.timer == nil)
        #expect(connection.requestAwaitingResponse != nil)
    }

    @Test("write stall: a response whose write makes no progress closes when the write-stall time ends")
    func writeStallTimeout() {
        var connection = streaming()
        expect(connection.bodyPiece(), .writeBody(chunked: true))
        expect(connection.writeWouldBlock(now: t(5)), .watchWritable([.read, .readHangup, .write], arm: nil))
        #expect(connection.deadline == deadline(.writeStall, 20_005))
        expect(connection.writeWouldBlock(now: t(6)), .none)
        expect(
            connection.timerFired(now: t(10_001), handlerKeepsRunning: false), .armTimer(deadline(.writeStall, 20_005)))
        expect(connection.timerFired(now: t(20_005), handlerKeepsRunning: false), .close(cancelHandler: true))
    }

    @Test("write progress moves the write-stall deadline back; once all is written there is none")
    func writeProgress() {
        var connection = streaming()
        _ = connection.bodyPiece()
        _ = connection.writeWouldBlock(now: t(5))
        expect(connection.wrote(now: t(4_000)), .none)
        #expect(connection.deadline == deadline(.writeStall, 24_000))
        expect(connection.flushed(parserAwaitingRequest: true, now: t(4_001)), .setInterest(readInterest))
        #expect(connection.deadline == nil)
        // A later piece written at once sets no deadline: the producer may pause as long as it likes.
        expect(connection.bodyPiece(), .writeBody(chunked: true))
        expect(connection.wrote(now: t(50_000)), .none)
        #expect(connection.deadline == nil)
        expect(connection.timerFired(now: t(10_001), handlerKeepsRunning: false), .none)
    }

    @Test("a stalled write without an earlier timer arms one")
    func writeStallArms() {
        var connection = streaming()
        // The header timer fired while the handler ran: none is armed.
        expect(connection.timerFired(now: t(10_001), handlerKeepsRunning: false), .none)
        expect(
            connection.writeWouldBlock(now: t(11_000)),
            .watchWritable([.read, .readHangup, .write], arm: deadline(.writeStall, 31_000)))
        expect(connection.wrote(now: t(12_000)), .none)
        expect(
            connection.timerFired(now: t(31_000), handlerKeepsRunning: false), .armTimer(deadline(.writeStall, 32_000)))
    }

    @Test("linger: input after the last response is discarded until the linger time ends")
    func lingerTimeout() {
        var connection = processing(request(headers: ["Connection": "close"]))
        _ = connection.respond(status: 200, closeAsked: false, body: .complete)
        expect(connection.flushed(parserAwaitingRequest: false, now: t(5)), .linger(arm: deadline(.linger, 2_005)))
        expect(connection.readable(), .discardInput)
        expect(connection.readHangup(handlerKeepsRunning: false), .close(cancelHandler: false))

        var quiet = processing(request(headers: ["Connection": "close"]))
        _ = quiet.respond(status: 200, closeAsked: false, body: .complete)
        _ = quiet.flushed(parserAwaitingRequest: true, now: t(5))
        expect(quiet.timerFired(now: t(2_004), handlerKeepsRunning: false), .armTimer(deadline(.linger, 2_005)))
        expect(quiet.timerFired(now: t(2_005), handlerKeepsRunning: false), .close(cancelHandler: false))
    }

    @Test("the header deadline starts with the first byte, not with the connection")
    func headerDeadlineFromFirstByte() {
        var connection = machine()
        _ = connection.start(now: t(0))
        expect(connection.timerFired(now: t(60_000), handlerKeepsRunning: false), .close(cancelHandler: false))

        var busy = machine()
        _ = busy.start(now: t(0))
        expect(busy.requestStarted(now: t(59_000)), .none)
        #expect(busy.deadline == deadline(.header, 69_000))
        expect(busy.timerFired(now: t(60_000), handlerKeepsRunning: false), .armTimer(deadline(.header, 69_000)))
    }

    // MARK: - HEAD and bodiless responses

    @Test("HEAD: the GET's Content-Length, no body")
    func headResponse() {
        var connection = processing(request(.HEAD))
        expect(
            connection.respond(status: 200, closeAsked: false, body: .complete),
            ResponseHead(framing: .contentLength, connection: .none, sendsBody: false))
        #expect(connection.state == .responding(.queued, keepAlive: true, inline: false))
        expect(
            connection.flushed(parserAwaitingRequest: false, now: t(5)),
            .resumeReading(Resume(interest: nil, arm: nil, mayHandOff: false, parseLater: false)))
    }

    @Test("HEAD of a stream: the chunked field, no body, and the response is complete at once")
    func headOfStream() {
        var connection = processing(request(.HEAD))
        expect(
            connection.respond(status: 200, closeAsked: false, body: .stream),
            ResponseHead(framing: .chunked, connection: .none, sendsBody: false))
        #expect(!connection.isStreaming)
        expect(connection.bodyPiece(), .connectionGone)
        expect(
            connection.flushed(parserAwaitingRequest: true, now: t(5)),
            .resumeReading(Resume(interest: nil, arm: nil, mayHandOff: true, parseLater: false)))
    }

    @Test("1xx, 204 and 304 have no framing field and no body, for whole and streamed bodies")
    func bodilessStatuses() {
        for status in [101, 204, 304] {
            var whole = processing()
            expect(
                whole.respond(status: status, closeAsked: false, body: .complete),
                ResponseHead(framing: .none, connection: .none, sendsBody: false))
            var stream = processing()
            expect(
                stream.respond(status: status, closeAsked: false, body: .stream),
                ResponseHead(framing: .none, connection: .none, sendsBody: false))
            #expect(stream.state == .responding(.queued, keepAlive: true, inline: false))
        }
        var legacy = processing(request(.GET, .http1_0, headers: ["Connection": "keep-alive"]))
        expect(
            legacy.respond(status: 204, closeAsked: false, body: .stream),
            ResponseHead(framing: .none, connection: .close, sendsBody: false))
    }

    // MARK: - Streaming

    @Test("a stream on HTTP/1.1 is chunked, ends with the last chunk, and keeps the connection")
    func chunkedStream() {
        var connection = processing()
        expect(connection.respond(status: 200, closeAsked: false, body: .stream), chunkedHead)
        #expect(connection.isStreaming)
        expect(connection.bodyPiece(), .writeBody(chunked: true))
        expect(connection.wrote(now: t(5)), .none)
        expect(connection.flushed(parserAwaitingRequest: true, now: t(5)), .none)
        expect(connection.bodyPieceQueued(unsentBytes: 0), .none)
        expect(connection.bodyEnded(), .endBody(lastChunk: true))
        expect(connection.bodyEnded(), .connectionGone)
        expect(
            connection.flushed(parserAwaitingRequest: true, now: t(6)),
            .resumeReading(Resume(interest: nil, arm: nil, mayHandOff: true, parseLater: false)))
    }

    @Test("a stream on HTTP/1.0 is raw and ends when the connection closes")
    func http10Stream() {
        var connection = processing(request(.GET, .http1_0, headers: ["Connection": "keep-alive"]))
        expect(
            connection.respond(status: 200, closeAsked: false, body: .stream),
            ResponseHead(framing: .none, connection: .close, sendsBody: true))
        expect(connection.bodyPiece(), .writeBody(chunked: false))
        expect(connection.bodyEnded(), .endBody(lastChunk: false))
        expect(connection.flushed(parserAwaitingRequest: true, now: t(5)), .linger(arm: deadline(.linger, 2_005)))
    }

    @Test("a whole body goes with Content-Length and is queued at once")
    func contentLengthResponse() {
        var connection = processing()
        expect(connection.respond(status: 201, closeAsked: false, body: .complete), contentLengthHead)
        #expect(connection.state == .responding(.queued, keepAlive: true, inline: false))
        expect(connection.bodyPiece(), .connectionGone)
        expect(connection.bodyEnded(), .connectionGone)
    }

    @Test("backpressure: the producer waits while more than the high watermark is unsent")
    func backpressure() {
        var connection = streaming(watermark: 100)
        expect(connection.bodyPiece(), .writeBody(chunked: true))
        expect(connection.bodyPieceQueued(unsentBytes: 100), .none)
        expect(connection.bodyPieceQueued(unsentBytes: 101), .waitForDrain)
        expect(connection.writeWouldBlock(now: t(5)), .watchWritable([.read, .readHangup, .write], arm: nil))
        // Drained: the shell resumes the waiting producer; the stream goes on.
        expect(connection.flushed(parserAwaitingRequest: true, now: t(6)), .setInterest(readInterest))
        #expect(connection.isStreaming)
    }

    @Test("the producer failing mid-stream: what is queued is sent without the last chunk, then the connection lingers")
    func producerAborts() {
        var connection = streaming()
        _ = connection.bodyPiece()
        expect(connection.bodyAborted(), .flush)
        #expect(connection.state == .responding(.queued, keepAlive: false, inline: false))
        expect(connection.bodyAborted(), .connectionGone)
        expect(connection.bodyEnded(), .connectionGone)
        expect(connection.bodyPiece(), .connectionGone)
        expect(connection.flushed(parserAwaitingRequest: true, now: t(5)), .linger(arm: deadline(.linger, 2_005)))
    }

    @Test("the producer failing after the connection closed finds it gone")
    func abortAfterClose() {
        var connection = streaming()
        _ = connection.connectionFailed(handlerKeepsRunning: false)
        expect(connection.bodyAborted(), .connectionGone)
    }

    // MARK: - Parse errors and 100 Continue

    @Test("a parse error before any head: refused as HTTP/1.1 with Connection: close, then lingers")
    func parseErrorBeforeHead() {
        var connection = machine()
        _ = connection.start(now: t(0))
        _ = connection.requestStarted(now: t(1))
        expect(connection.parseFailed(), .refuse)
        #expect(!connection.isReading)
        #expect(connection.requestAwaitingResponse == .placeholder)
        expect(
            connection.respond(status: 400, closeAsked: false, body: .complete),
            ResponseHead(framing: .contentLength, connection: .close, sendsBody: true))
        expect(connection.flushed(parserAwaitingRequest: false, now: t(2)), .linger(arm: deadline(.linger, 2_002)))
    }

    @Test("a body over the limit is refused knowing its head: a HEAD request gets no body")
    func bodyTooLarge() {
        var connection = machine(maxBodyBytes: 1000)
        _ = connection.start(now: t(0))
        _ = connection.requestStarted(now: t(1))
        expect(connection.parsedHead(request(.HEAD, framing: .contentLength(5000)), now: t(1)), .none)
        expect(connection.parseFailed(), .refuse)
        expect(
            connection.respond(status: 413, closeAsked: false, body: .complete),
            ResponseHead(framing: .contentLength, connection: .close, sendsBody: false))
    }

    @Test("the server's own refusal has no handler to cancel; closed while queued it is unsent")
    func refusalClosed() {
        var connection = machine()
        _ = connection.start(now: t(0))
        _ = connection.parseFailed()
        expect(connection.closeRequested(handlerKeepsRunning: false), .close(cancelHandler: false))

        var queued = machine()
        _ = queued.start(now: t(0))
        _ = queued.parseFailed()
        _ = queued.respond(status: 400, closeAsked: false, body: .complete)
        expect(queued.connectionFailed(handlerKeepsRunning: false), .close(cancelHandler: false))
        #expect(queued.closedWithResponseUnsent)
    }

    @Test("Expect: 100-continue gets 100 Continue for a body that fits, by length or chunked")
    func continueForFittingBody() {
        let expecting: HTTPHeaders = ["Expect": "100-continue"]
        var fits = machine(maxBodyBytes: 1000)
        _ = fits.start(now: t(0))
        _ = fits.requestStarted(now: t(1))
        expect(
            fits.parsedHead(request(.POST, headers: expecting, framing: .contentLength(1000)), now: t(2)),
            .sendContinue(arm: nil))
        #expect(fits.deadline == deadline(.body, 30_002))

        var chunked = machine(maxBodyBytes: 1000)
        _ = chunked.start(now: t(0))
        expect(
            chunked.parsedHead(request(.POST, headers: expecting, framing: .chunked), now: t(2)),
            .sendContinue(arm: deadline(.body, 30_002)))
    }

    @Test("no 100 Continue for a body over the limit, for HTTP/1.0, or without a body")
    func noContinue() {
        let expecting: HTTPHeaders = ["Expect": "100-continue"]
        var tooLarge = machine(maxBodyBytes: 1000)
        _ = tooLarge.start(now: t(0))
        _ = tooLarge.requestStarted(now: t(1))
        expect(tooLarge.parsedHead(request(.POST, headers: expecting, framing: .contentLength(1001)), now: t(2)), .none)

        var legacy = machine()
        _ = legacy.start(now: t(0))
        _ = legacy.requestStarted(now: t(1))
        expect(
            legacy.parsedHead(request(.POST, .http1_0, headers: expecting, framing: .contentLength(5)), now: t(2)),
            .none)

        var bodiless = machine()
        _ = bodiless.start(now: t(0))
        _ = bodiless.requestStarted(now: t(1))
        expect(bodiless.parsedHead(request(.GET, headers: expecting), now: t(2)), .none)
        #expect(bodiless.deadline == deadline(.header, 10_001))
    }

    @Test("a 100 Continue that cannot be written at once watches writability under the write-stall deadline")
    func continueWouldBlock() {
        var connection = machine()
        _ = connection.start(now: t(0))
        _ = connection.requestStarted(now: t(1))
        _ = connection.parsedHead(
            request(.POST, headers: ["Expect": "100-continue"], framing: .contentLength(5)), now: t(1))
        expect(connection.writeWouldBlock(now: t(2)), .watchWritable([.read, .readHangup, .write], arm: nil))
        #expect(connection.deadline == deadline(.writeStall, 20_002))
        expect(connection.flushed(parserAwaitingRequest: false, now: t(3)), .setInterest(readInterest))
        #expect(connection.isReading)
        expect(connection.requestEnded(), .dispatch)
    }

    // MARK: - Draining

    @Test("draining closes an idle connection at once")
    func drainIdle() {
        var connection = machine()
        _ = connection.start(now: t(0))
        expect(connection.drain(parserAwaitingRequest: true), .close(cancelHandler: false))
        #expect(connection.state == .closed(responseUnsent: false))
    }

    @Test("draining mid-request lets it be answered with Connection: close, then lingers")
    func drainMidRequest() {
        var connection = machine()
        _ = connection.start(now: t(0))
        _ = connection.requestStarted(now: t(1))
        expect(connection.drain(parserAwaitingRequest: false), .none)
        #expect(connection.state == .reading(.head, keepAlive: false))
        _ = connection.parsedHead(request(), now: t(2))
        expect(connection.requestEnded(), .dispatch)
        expect(
            connection.respond(status: 200, closeAsked: false, body: .complete),
            ResponseHead(framing: .contentLength, connection: .close, sendsBody: true))
        expect(connection.flushed(parserAwaitingRequest: true, now: t(3)), .linger(arm: deadline(.linger, 2_003)))
    }

    @Test("draining while the handler runs: the response in flight says Connection: close, then the connection lingers")
    func drainWhileProcessing() {
        var connection = processing()
        expect(connection.drain(parserAwaitingRequest: true), .none)
        expect(
            connection.respond(status: 200, closeAsked: false, body: .stream),
            ResponseHead(framing: .chunked, connection: .close, sendsBody: true))
        expect(connection.bodyEnded(), .endBody(lastChunk: true))
        expect(connection.flushed(parserAwaitingRequest: true, now: t(3)), .linger(arm: deadline(.linger, 2_003)))
    }

    @Test("draining while a kept-alive response is written: it ends, then the connection lingers")
    func drainWhileResponding() {
        var connection = streaming()
        expect(connection.drain(parserAwaitingRequest: true), .none)
        #expect(connection.isStreaming)
        expect(connection.bodyEnded(), .endBody(lastChunk: true))
        expect(connection.flushed(parserAwaitingRequest: true, now: t(3)), .linger(arm: deadline(.linger, 2_003)))
    }

    @Test("draining a lingering connection leaves it to end")
    func drainLingering() {
        var connection = processing(request(headers: ["Connection": "close"]))
        _ = connection.respond(status: 200, closeAsked: false, body: .complete)
        _ = connection.flushed(parserAwaitingRequest: true, now: t(5))
        expect(connection.drain(parserAwaitingRequest: true), .none)
        #expect(connection.state == .lingering)
    }

    // MARK: - Interest

    @Test("a write that would block registers write interest once; drained it is removed")
    func writeInterest() {
        var connection = processing()
        _ = connection.respond(status: 200, closeAsked: false, body: .complete)
        expect(connection.writeWouldBlock(now: t(5)), .watchWritable([.read, .readHangup, .write], arm: nil))
        expect(connection.writeWouldBlock(now: t(6)), .none)
        expect(connection.readable(), .setInterest([.readHangup, .write]))
        // The response ends: write interest goes and read interest returns in one change.
        expect(
            connection.flushed(parserAwaitingRequest: false, now: t(7)),
            .resumeReading(Resume(interest: readInterest, arm: nil, mayHandOff: false, parseLater: false)))
        #expect(connection.interest == readInterest)
    }

    @Test("lingering watches input only")
    func lingerInterest() {
        var connection = processing()
        _ = connection.respond(status: 200, closeAsked: true, body: .complete)
        _ = connection.writeWouldBlock(now: t(5))
        expect(connection.flushed(parserAwaitingRequest: true, now: t(6)), .linger(arm: deadline(.linger, 2_006)))
        #expect(connection.interest == [.read])
        #expect(connection.deadline == deadline(.linger, 2_006))
    }
}
