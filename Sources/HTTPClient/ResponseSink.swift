#if canImport(Glibc)
    import Glibc
#endif

/// One request in flight, from either way of sending it (``Transfer`` on curl,
/// ``PlainExchange`` on the client's own HTTP/1.1 connections): the response as it arrives,
/// and whoever waits for it. Loop-confined.
class ResponseSink {
    let streaming: Bool
    private let maxBodyBytes: Int
    private let highWatermark: Int
    private(set) var status = 0
    private(set) var version = HTTPClientResponseHead.Version.http1_1
    /// `host:port` of an https request, for learning which hosts answer in HTTP/1.1.
    var origin: Substring?
    /// Told the origin when a status line says HTTP/1.x (on the multiplexing lane).
    var http1Seen: ((Substring) -> Void)?
    private var fields = ResponseFields()
    private(set) var headComplete = false
    /// Some byte of the response (a header line or body) has arrived.
    private(set) var responseStarted = false
    /// Sent again on a fresh connection already (at most once).
    var retried = false
    private(set) var bodyTooLarge = false
    private var body: [UInt8] = []

    private var responseWaiter: CheckedContinuation<HTTPClientResponse, any Error>?
    private var headWaiter: CheckedContinuation<HTTPClientResponseHead, any Error>?
    private var chunks: [[UInt8]] = []
    private var queuedBytes = 0
    private var chunkWaiter: CheckedContinuation<[UInt8]?, any Error>?
    private(set) var paused = false
    private var outcome: Result<Void, HTTPClientError>?

    init(streaming: Bool, maxBodyBytes: Int, highWatermark: Int) {
        self.streaming = streaming
        self.maxBodyBytes = maxBodyBytes
        self.highWatermark = highWatermark
    }

    func waitForResponse(_ continuation: CheckedContinuation<HTTPClientResponse, any Error>) {
        responseWaiter = continuation
    }

    func waitForHead(_ continuation: CheckedContinuation<HTTPClientResponseHead, any Error>) {
        if headComplete {
            continuation.resume(returning: head)
        } else if case .failure(let error) = outcome {
            continuation.resume(throwing: error)
        } else {
            headWaiter = continuation
        }
    }

    // MARK: - From the response

    var httpVersion: HTTPClientResponseHead.Version { version }

    private var head: HTTPClientResponseHead {
        HTTPClientResponseHead(status: status, httpVersion: version, fields: fields)
    }

    /// One header line, CRLF included. A status line starts a new block (after a `100
    /// Continue` or an interim response); the empty line ends it.
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) {
        responseStarted = true
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        let text = UnsafeRawBufferPointer(rebasing: line[0..<end])
        if text.isEmpty {
            if status >= 200 && !headComplete {
                headComplete = true
                if let waiter = headWaiter {
                    headWaiter = nil
                    waiter.resume(returning: head)
                }
            }
            return
        }
        // Byte by byte through the buffer's own methods: the generic collection algorithms
        // (`starts(with:)`, `firstIndex(of:)`, appending a slice) cost several times more per
        // field, and an upstream behind a CDN sends 15–20 of them.
        if Self.isStatusLine(text) {
            status = Self.statusCode(ofStatusLine: text)
            version = Self.version(ofStatusLine: text)
            fields.removeAll()
            if version.major == 1, let origin, let http1Seen { http1Seen(origin) }
            return
        }
        guard let base = text.baseAddress, let found = memchr(base, Int32(UInt8(ascii: ":")), text.count) else {
            return
        }
        let colon = UnsafeRawPointer(found) - base
        var valueStart = colon + 1
        while valueStart < text.count, text[valueStart] == 0x20 || text[valueStart] == 0x09 { valueStart += 1 }
        fields.append(
            name: UnsafeRawBufferPointer(start: base, count: colon),
            value: UnsafeRawBufferPointer(start: base + valueStart, count: text.count - valueStart)
        )
    }

    /// Whether `line` starts with `HTTP/`.
    @inline(__always)
    static func isStatusLine(_ line: UnsafeRawBufferPointer) -> Bool {
        line.count >= 5 && line[0] == UInt8(ascii: "H") && line[1] == UInt8(ascii: "T") && line[2] == UInt8(ascii: "T")
            && line[3] == UInt8(ascii: "P") && line[4] == UInt8(ascii: "/")
    }

    /// The version of a status line (`HTTP/1.1 200`, or `HTTP/2 200` as curl writes one for
    /// HTTP/2): 1.1 when it cannot be read.
    static func version(ofStatusLine line: UnsafeRawBufferPointer) -> HTTPClientResponseHead.Version {
        func digit(_ index: Int) -> Int? {
            guard index < line.count else { return nil }
            let value = line[index] &- UInt8(ascii: "0")
            return value < 10 ? Int(value) : nil
        }
        guard let major = digit(5) else { return .http1_1 }
        if line.count > 6, line[6] == UInt8(ascii: "."), let minor = digit(7) {
            return .init(major: major, minor: minor)
        }
        return .init(major: major, minor: 0)
    }

    /// The code of a status line (`HTTP/1.1 200 OK`): the three digits after the first
    /// space, 0 when there are none.
    static func statusCode(ofStatusLine line: UnsafeRawBufferPointer) -> Int {
        guard let space = line.firstIndex(of: 0x20), space + 3 <= line.count else { return 0 }
        var code = 0
        for index in space + 1...space + 3 {
            let digit = line[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return 0 }
            code = code * 10 + Int(digit)
        }
        return space + 4 == line.count || line[space + 4] == 0x20 ? code : 0
    }

    /// What became of body bytes offered.
    enum Intake {
        case taken
        /// Not taken: the consumer is behind (``paused`` is set); offer them again on resume.
        case refused
        /// Not taken: the body would pass the client's limit.
        case tooLarge
    }

    /// Body bytes, taken unless the consumer of a stream is behind or the body passes its limit.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Intake {
        if streaming, chunkWaiter == nil, queuedBytes >= highWatermark {
            paused = true
            return .refused
        }
        return take(bytes) ? .taken : .tooLarge
    }

    /// Body bytes, always taken (false only when they pass the body's limit); for a stream,
    /// ``paused`` says the reading should wait for the consumer.
    func take(_ bytes: UnsafeRawBufferPointer) -> Bool {
        responseStarted = true
        if !streaming {
            guard body.count + bytes.count <= maxBodyBytes else {
                bodyTooLarge = true
                return false
            }
            body.append(contentsOf: bytes)
            return true
        }
        if let waiter = chunkWaiter {
            chunkWaiter = nil
            waiter.resume(returning: Array(bytes))
            return true
        }
        chunks.append(Array(bytes))
        queuedBytes += bytes.count
        if queuedBytes >= highWatermark { paused = true }
        return true
    }

    // MARK: - From the consumer

    /// Hands the next piece of a streamed body to `continuation` (nil at the end).
    /// Returns true when the transfer was paused and may now resume.
    func nextChunk(_ continuation: CheckedContinuation<[UInt8]?, any Error>) -> Bool {
        if !chunks.isEmpty {
            let chunk = chunks.removeFirst()
            queuedBytes -= chunk.count
            continuation.resume(returning: chunk)
        } else if let outcome {
            switch outcome {
            case .success: continuation.resume(returning: nil)
            case .failure(let error): continuation.resume(throwing: error)
            }
        } else {
            chunkWaiter = continuation
        }
        if paused && queuedBytes < highWatermark / 2 {
            paused = false
            return true
        }
        return false
    }

    // MARK: - Completion

    /// The body taken so far (a whole response's; a stream's pieces go to its consumer).
    var receivedBody: [UInt8] { body }

    /// The head as read so far.
    var receivedHead: HTTPClientResponseHead { head }

    /// Whether the request ended (done, failed or cancelled).
    var hasEnded: Bool { outcome != nil }

    /// The transfer ended (done, failed or cancelled): wake everyone waiting.
    func finish(_ result: Result<Void, HTTPClientError>) {
        guard outcome == nil else { return }
        outcome = result
        if let waiter = responseWaiter {
            responseWaiter = nil
            switch result {
            case .success:
                waiter.resume(returning: HTTPClientResponse(head: head, body: body))
            case .failure(let error):
                waiter.resume(throwing: error)
            }
            body = []
        }
        if let waiter = headWaiter {
            headWaiter = nil
            if case .failure(let error) = result {
                waiter.resume(throwing: error)
            } else {
                waiter.resume(returning: head)
            }
        }
        if let waiter = chunkWaiter {
            chunkWaiter = nil
            switch result {
            case .success: waiter.resume(returning: nil)
            case .failure(let error): waiter.resume(throwing: error)
            }
        }
    }
}

@available(*, unavailable)
extension ResponseSink: Sendable {}
