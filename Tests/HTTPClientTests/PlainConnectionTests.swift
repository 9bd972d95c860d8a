import EventLoop
import HTTPClient
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback TCP server of raw bytes on 127.0.0.1 and a port the kernel chose: each accepted
/// connection is served by `handle` on a thread of its own. Every blocking call is bounded:
/// the connections' sends and receives by 30 s timeouts, and ``stop()`` shuts down whatever is
/// still open, so a handler blocked on its socket returns at once.
private final class RawServer: Sendable {
    let port: Int
    /// Connections accepted, the ones still in the backlog at ``stop()`` included.
    let accepted = Atomic<Int>(0)
    /// Bytes the handlers managed to write, across connections.
    let written = Atomic<Int>(0)
    private let listener: CInt
    private let sendBufferBytes: CInt?
    private let stopping = Atomic<Bool>(false)
    private let acceptThread = Mutex<pthread_t?>(nil)
    private let handlers = Mutex<(threads: [pthread_t], open: Set<CInt>)>(([], []))

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// `sendBufferBytes` fixes the connections' kernel send buffer (no autotuning).
    init(sendBufferBytes: Int? = nil, _ handle: @escaping @Sendable (RawConnection) -> Void) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard listening else {
            close(fd)
            throw Failure(description: "bind or listen: errno \(errno)")
        }
        // `accept` wakes this often to see whether the server stops.
        var wake = timeval(tv_sec: 0, tv_usec: 50_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wake, socklen_t(MemoryLayout<timeval>.size))
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        self.sendBufferBytes = sendBufferBytes.map { CInt($0) }
        let thread = DetachedThread.start { [self] in acceptLoop(handle) }
        acceptThread.withLock { $0 = thread }
    }

    private func acceptLoop(_ handle: @escaping @Sendable (RawConnection) -> Void) {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else {
                // Stopping: the backlog is drained once `accept` times out.
                if stopping.load(ordering: .acquiring), errno == EAGAIN || errno == EWOULDBLOCK { return }
                continue
            }
            let index = accepted.add(1, ordering: .relaxed).oldValue
            if stopping.load(ordering: .acquiring) {
                close(fd)
                continue
            }
            var timeout = timeval(tv_sec: 30, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var one: CInt = 1
            setsockopt(fd, CInt(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<CInt>.size))
            if var size = sendBufferBytes {
                setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<CInt>.size))
            }
            handlers.withLock { _ = $0.open.insert(fd) }
            let thread = DetachedThread.start { [self] in
                handle(RawConnection(fd: fd, index: index, server: self))
                handlers.withLock { state in
                    state.open.remove(fd)
                    close(fd)
                }
            }
            handlers.withLock { $0.threads.append(thread) }
        }
    }

    /// Stops accepting (counting what waited in the backlog), ends every open connection and
    /// waits for the handlers to return.
    func stop() async {
        stopping.store(true, ordering: .releasing)
        if let thread = acceptThread.withLock({ $0 }) {
            await DetachedThread.run { _ = pthread_join(thread, nil) }
        }
        let threads = handlers.withLock { state in
            for fd in state.open { shutdown(fd, Int32(SHUT_RDWR)) }
            return state.threads
        }
        await DetachedThread.run {
            for thread in threads { _ = pthread_join(thread, nil) }
        }
        close(listener)
    }
}

/// One accepted connection of a ``RawServer``, used on the thread that serves it.
private final class RawConnection {
    let fd: CInt
    /// The connection's place among those the server accepted, from 0.
    let index: Int
    private let server: RawServer
    private var buffer: [UInt8] = []

    init(fd: CInt, index: Int, server: RawServer) {
        self.fd = fd
        self.index = index
        self.server = server
    }

    /// The next request: its head (without the empty line) and its body (by Content-Length);
    /// nil when the client closed the connection, or after the receive timeout.
    func readRequest() -> (head: String, body: [UInt8])? {
        while true {
            if let end = headEnd() {
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 4)
                var length = 0
                for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    length = Int(line.dropFirst(15).trimmingPrefix(" ")) ?? 0
                }
                while buffer.count < length {
                    guard fill() else { return nil }
                }
                let body = Array(buffer[..<length])
                buffer.removeFirst(length)
                return (head, body)
            }
            guard fill() else { return nil }
        }
    }

    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }

    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return false }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    /// Writes all of `bytes`; false when the connection failed (the client left).
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return false }
            offset += count
            server.written.add(count, ordering: .relaxed)
        }
        return true
    }

    @discardableResult
    func write(_ text: String) -> Bool { write(Array(text.utf8)) }

    /// Ends the connection both ways: the client reads its end (the descriptor itself is
    /// closed once the handler returns).
    func close() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Waits until the client closes the connection (or the receive timeout).
    func waitForClose() {
        while fill() { buffer.removeAll() }
    }

    /// Answers every request on the connection with `body`, kept alive, until the client closes.
    func answerEach(_ body: (_ request: Int) -> String) {
        var request = 0
        while readRequest() != nil {
            guard write(okResponse(body(request))) else { return }
            request += 1
        }
    }
}

/// A server whose first connection answers its first request `first`, reads the second and
/// closes unanswered; later connections answer one request `answer`. Each request read is
/// given to `note` with its connection's index.
private func closingSecondUnanswered(
    then answer: String, _ note: @escaping @Sendable (Int, (head: String, body: [UInt8])) -> Void
) -> @Sendable (RawConnection) -> Void {
    { connection in
        if connection.index == 0 {
            guard let first = connection.readRequest() else { return }
            note(0, first)
            connection.write(okResponse("first"))
            // The second request is read, then the connection closed without a byte of answer.
            guard let second = connection.readRequest() else { return }
            note(0, second)
            connection.close()
        } else {
            guard let request = connection.readRequest() else { return }
            note(connection.index, request)
            connection.write(okResponse(answer))
            connection.waitForClose()
        }
    }
}

private func okResponse(_ body: String, fields: [String] = []) -> String {
    "HTTP/1.1 200 OK\r\n" + fields.map { $0 + "\r\n" }.joined() + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
}

/// Runs `body` with a ``RawServer`` serving each connection with `handle`, and its base URL;
/// returns the server once stopped, its counts final.
@discardableResult
private func withRawServer(
    sendBufferBytes: Int? = nil,
    _ handle: @escaping @Sendable (RawConnection) -> Void,
    _ body: (RawServer, String) async throws -> Void
) async throws -> RawServer {
    let server = try RawServer(sendBufferBytes: sendBufferBytes, handle)
    do {
        try await body(server, "http://127.0.0.1:\(server.port)")
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
    return server
}

/// The error `body` throws, failing the test when it throws none or another type.
private func plainClientError(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
) async -> HTTPClientError? {
    do {
        try await body()
        Issue.record("expected an HTTPClientError, got success", sourceLocation: sourceLocation)
    } catch let error as HTTPClientError {
        return error
    } catch {
        Issue.record("expected an HTTPClientError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// `count` bytes of a pattern that shows a lost, doubled or reordered piece.
private func pattern(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 % 251) }
}

/// Bytes queued in the kernel on the loopback connection to `port` (from /proc/self/net/tcp):
/// written by the server but not yet acknowledged by the client, and received by the client
/// but not yet read by it.
private func kernelQueues(serverPort port: Int) -> (unacknowledged: Int, unread: Int) {
    let portHex = String(port, radix: 16, uppercase: true)
    let suffix = ":" + String(repeating: "0", count: max(0, 4 - portHex.count)) + portHex
    var unacknowledged = 0
    var unread = 0
    guard let file = fopen("/proc/self/net/tcp", "r") else { return (0, 0) }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 512)
    while fgets(&line, 512, file) != nil {
        let fields = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .split(separator: " ", omittingEmptySubsequences: true)
        // local address, remote address, state (01: established), tx_queue:rx_queue
        guard fields.count > 4, fields[3] == "01" else { continue }
        let queues = fields[4].split(separator: ":")
        guard queues.count == 2, let tx = Int(queues[0], radix: 16), let rx = Int(queues[1], radix: 16) else {
            continue
        }
        if fields[1].hasSuffix(suffix) { unacknowledged += tx } // the server's side
        if fields[2].hasSuffix(suffix) { unread += rx } // the client's side
    }
    return (unacknowledged, unread)
}

@Suite("The client's own HTTP/1.1 connections, against raw servers", .serialized)
struct PlainConnectionTests {
    @Test("a body that runs until the server closes arrives whole; each request on a connection of its own")
    func bodyUntilClose() async throws {
        let body = pattern(200_000)
        let server = try await withRawServer({ connection in
            guard connection.readRequest() != nil else { return }
            connection.write("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/octet-stream\r\n\r\n")
            for start in stride(from: 0, to: body.count, by: 30_000) {
                guard connection.write(Array(body[start..<min(start + 30_000, body.count)])) else { return }
            }
            connection.close()
        }) { _, base in
            try await withClient({ $0.timeout = .seconds(30) }) { client in
                for _ in 0..<2 {
                    let response = try await client.send(HTTPClientRequest(url: base + "/all"))
                    #expect(response.status == 200)
                    #expect(response.header("content-type") == "application/octet-stream")
                    #expect(response.body.count == body.count)
                    #expect(response.body == body)
                }
                #expect(await client.idleHandleCount() == 0, "curl carried a plain http request")
                #expect(await client.activeTransferCount() == 0)
            }
        }
        #expect(server.accepted.load(ordering: .relaxed) == 2)
    }

    @Test("a chunked body written in pieces with pauses is joined by send and yielded by stream, on one connection")
    func chunkedInPieces() async throws {
        // Cut inside the head, a chunk-size line, an extension, a chunk, the trailers.
        let pieces = [
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n", "\r\n5\r", "\nhello\r\n",
            "6;ext=1\r\n wor", "ld\r\n1", "0\r\n", String(repeating: "z", count: 16), "\r\n0\r\nX-T", "railer: 1\r\n",
            "\r\n",
        ]
        let expected = "hello world" + String(repeating: "z", count: 16)
        let server = try await withRawServer({ connection in
            while connection.readRequest() != nil {
                for piece in pieces {
                    guard connection.write(piece) else { return }
                    usleep(20_000) // the upstream's pace: the pieces arrive apart
                }
            }
        }) { _, base in
            try await withClient({ $0.timeout = .seconds(30) }) { client in
                let whole = try await client.send(HTTPClientRequest(url: base + "/chunked"))
                #expect(whole.status == 200)
                #expect(whole.header("content-type") == "text/plain")
                #expect(String(decoding: whole.body, as: UTF8.self) == expected)

                let streamed = try await client.stream(HTTPClientRequest(url: base + "/chunked"))
                #expect(streamed.status == 200)
                var text = ""
                var chunks = 0
                for try await chunk in streamed.body {
                    chunks += 1
                    text += String(decoding: chunk, as: UTF8.self)
                }
                #expect(text == expected)
                #expect(chunks >= 2, "the body came in one piece: not streamed as it arrived")
                #expect(await client.activeTransferCount() == 0)
            }
        }
        // The chunked response ended cleanly: its connection carried the second request.
        #expect(server.accepted.load(ordering: .relaxed) == 1)
    }

    @Test("a connection the server closes right after its first answer: the second request is answered on a new one")
    func closedAfterFirstAnswer() async throws {
        let server = try await withRawServer({ connection in
            if connection.index == 0 {
                guard connection.readRequest() != nil else { return }
                connection.write(okResponse("first"))
                connection.close()
            } else {
                connection.answerEach { _ in "second" }
            }
        }) { _, base in
            try await withClient({ $0.timeout = .seconds(30) }) { client in
                let first = try await client.send(HTTPClientRequest(url: base + "/one"))
                #expect(String(decoding: first.body, as: UTF8.self) == "first")
                let second = try await client.send(HTTPClientRequest(url: base + "/two"))
                #expect(second.status == 200)
                #expect(String(decoding: second.body, as: UTF8.self) == "second")
            }
        }
        #expect(server.accepted.load(ordering: .relaxed) == 2)
    }

    @Test("a request the server read on a kept-alive connection and closed unanswered goes again, whole, on a new one")
    func retriedOnFreshConnection() async throws {
        let seen = Mutex<[(connection: Int, head: String, body: [UInt8])]>([])
        let noted = closingSecondUnanswered(then: "second") { index, request in
            seen.withLock { $0.append((index, request.head, request.body)) }
        }
        let server = try await withRawServer(noted) { _, base in
            try await withClient({ $0.timeout = .seconds(30) }) { client in
                let first = try await client.send(
                    HTTPClientRequest(
                        method: "POST", url: base + "/a", headers: [("X-N", "1")], body: Array("one".utf8)))
                #expect(String(decoding: first.body, as: UTF8.self) == "first")
                let second = try await client.send(
                    HTTPClientRequest(
                        method: "POST", url: base + "/b", headers: [("X-N", "2")], body: Array("two".utf8)))
                #expect(second.status == 200)
                #expect(String(decoding: second.body, as: UTF8.self) == "second")
            }
        }
        #expect(server.accepted.load(ordering: .relaxed) == 2)
        let requests = seen.withLock { $0 }
        #expect(requests.map(\.connection) == [0, 0, 1])
        if requests.count == 3 {
            #expect(requests[1].head.hasPrefix("POST /b HTTP/1.1\r\n"))
            #expect(requests[2].head == requests[1].head, "the retry is the same request")
            #expect(requests[2].body == Array("two".utf8))
            #expect(requests[1].body == Array("two".utf8))
        }
    }

    @Test(
        "a body of megabytes, sent after its head from its own bytes, arrives whole, and again whole on a retry"
    )
    func largeBodyWhole() async throws {
        let body = (0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let seen = Mutex<[(connection: Int, head: String, body: [UInt8])]>([])
        let noted = closingSecondUnanswered(then: "again") { index, request in
            seen.withLock { $0.append((index, request.head, request.body)) }
        }
        let server = try await withRawServer(noted) { _, base in
            try await withClient({ $0.timeout = .seconds(60) }) { client in
                let first = try await client.send(HTTPClientRequest(method: "POST", url: base + "/a", body: body))
                #expect(String(decoding: first.body, as: UTF8.self) == "first")
                let second = try await client.send(HTTPClientRequest(method: "POST", url: base + "/b", body: body))
                #expect(String(decoding: second.body, as: UTF8.self) == "again")
            }
        }
        #expect(server.accepted.load(ordering: .relaxed) == 2)
        let requests = seen.withLock { $0 }
        #expect(requests.map(\.connection) == [0, 0, 1])
        for request in requests {
            #expect(request.head.contains("\r\nContent-Length: \(body.count)"))
            #expect(request.body.count == body.count)
            #expect(request.body == body)
        }
    }

    @Test("the retry on a new connection is made once: a fresh connection closed unanswered fails the request")
    func retriedOnlyOnce() async throws {
        let server = try await withRawServer({ connection in
            if connection.index == 0 {
                guard connection.readRequest() != nil else { return }
                connection.write(okResponse("first"))
                guard connection.readRequest() != nil else { return }
                connection.close()
            } else {
                guard connection.readRequest() != nil else { return }
                connection.close()
            }
        }) { _, base in
            try await withClient({ $0.timeout = .seconds(30) }) { client in
                let first = try await client.send(HTTPClientRequest(url: base + "/one"))
                #expect(String(decoding: first.body, as: UTF8.self) == "first")
                let error = await plainClientError { _ = try await client.send(HTTPClientRequest(url: base + "/two")) }
                #expect(error?.kind == .transport)
                #expect(error?.beforeResponse == true)
            }
        }
        #expect(server.accepted.load(ordering: .relaxed) == 2)
    }

    @Test("a fresh connection closed at once without an answer fails with transport, before any response")
    func freshConnectionClosed() async throws {
        let server = try await withRawServer({ connection in
            connection.close()
        }) { _, base in
            try await withClient({ $0.timeout = .seconds(30) }) { client in
                let error = await plainClientError { _ = try await client.send(HTTPClientRequest(url: base + "/x")) }
                #expect(error?.kind == .transport)
                #expect(error?.beforeResponse == true)
                #expect(await client.activeTransferCount() == 0)
            }
        }
        // No retry: the connection was new.
        #expect(server.accepted.load(ordering: .relaxed) == 1)
    }

    @Test("half a Content-Length body then the end of the connection fails with transport, after the response began")
    func truncatedBody() async throws {
        let server = try await withRawServer({ connection in
            guard connection.readRequest() != nil else { return }
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + String(repeating: "h", count: 50))
            connection.close()
        }) { _, base in
            try await withClient({ $0.timeout = .seconds(30) }) { client in
                let error = await plainClientError { _ = try await client.send(HTTPClientRequest(url: base + "/x")) }
                #expect(error?.kind == .transport)
                #expect(error?.beforeResponse == false)

                let streamed = try await client.stream(HTTPClientRequest(url: base + "/x"))
                #expect(streamed.status == 200)
                var received = 0
                let streamError = await plainClientError {
                    for try await chunk in streamed.body { received += chunk.count }
                }
                #expect(streamError?.kind == .transport)
                #expect(streamError?.beforeResponse == false)
                #expect(received <= 50)
            }
        }
        #expect(server.accepted.load(ordering: .relaxed) == 2)
    }

    @Test("a response head trickled slower than the head timeout fails with timedOut, long before the total timeout")
    func headTrickled() async throws {
        try await withRawServer({ connection in
            guard connection.readRequest() != nil else { return }
            guard connection.write("HTTP/1.1 200 OK\r\nX-Slow: ") else { return }
            // A byte every 100 ms, for up to 30 s: the head never ends in time.
            for _ in 0..<300 {
                guard connection.write("a") else { return }
                usleep(100_000)
            }
        }) { _, base in
            try await withClient({ $0.timeout = .seconds(60) }) { client in
                let start = MonotonicInstant.now()
                let error = await plainClientError {
                    _ = try await client.send(
                        HTTPClientRequest(url: base + "/slow", timeout: .seconds(60), headTimeout: .milliseconds(500)))
                }
                #expect(error?.kind == .timedOut)
                #expect(start.nanoseconds(until: .now()) < 20_000_000_000, "not ended by the head timeout")
                #expect(await client.activeTransferCount() == 0)
            }
        }
    }

    @Test("a reply that is not HTTP fails with transport")
    func garbageReply() async throws {
        try await withRawServer({ connection in
            guard connection.readRequest() != nil else { return }
            connection.write("hello\r\n\r\n")
            connection.waitForClose()
        }) { _, base in
            try await withClient({ $0.timeout = .seconds(30) }) { client in
                let error = await plainClientError { _ = try await client.send(HTTPClientRequest(url: base + "/x")) }
                #expect(error?.kind == .transport)
                #expect(await client.activeTransferCount() == 0)
            }
        }
    }

    @Test("bytes past a response's end keep its connection from being used again")
    func strayBytesEndConnection() async throws {
        let server = try await withRawServer({ connection in
            if connection.index == 0 {
                guard connection.readRequest() != nil else { return }
                // One write: the answer and a second one nobody asked for arrive together.
                connection.write(okResponse("first") + okResponse("stray"))
                connection.answerEach { _ in "reused" }
            } else {
                connection.answerEach { _ in "second" }
            }
        }) { _, base in
            try await withClient({ $0.timeout = .seconds(30) }) { client in
                let first = try await client.send(HTTPClientRequest(url: base + "/one"))
                #expect(String(decoding: first.body, as: UTF8.self) == "first")
                let second = try await client.send(HTTPClientRequest(url: base + "/two"))
                #expect(String(decoding: second.body, as: UTF8.self) == "second")
            }
        }
        #expect(server.accepted.load(ordering: .relaxed) == 2)
    }

    @Test("with ownHTTP1Connections off, curl carries the same plain URL; on, curl carries none")
    func curlPath() async throws {
        try await withRawServer({ connection in
            connection.answerEach { request in "plain \(request)" }
        }) { _, base in
            try await withClient({
                $0.ownHTTP1Connections = false
                $0.timeout = .seconds(30)
            }) { client in
                for index in 0..<2 {
                    let response = try await client.send(HTTPClientRequest(url: base + "/p"))
                    #expect(response.status == 200)
                    #expect(String(decoding: response.body, as: UTF8.self) == "plain \(index)")
                    #expect(response.head.httpVersion == .http1_1)
                }
                #expect(await client.idleHandleCount() > 0, "curl did not carry the request")
            }
            try await withClient({ $0.timeout = .seconds(30) }) { client in
                let response = try await client.send(HTTPClientRequest(url: base + "/p"))
                #expect(response.status == 200)
                #expect(String(decoding: response.body, as: UTF8.self) == "plain 0")
                #expect(response.head.httpVersion == .http1_1)
                #expect(await client.idleHandleCount() == 0, "curl carried the request")
            }
        }
    }

    @Test("a slowly read stream holds no more than its high watermark and one read; the rest waits upstream")
    func streamBackpressure() async throws {
        let total = 8 * 1024 * 1024
        let highWatermark = 64 * 1024
        let head = "HTTP/1.1 200 OK\r\nContent-Length: \(total)\r\n\r\n"
        let body = pattern(total)
        try await withRawServer(
            sendBufferBytes: 64 * 1024,
            { connection in
                guard connection.readRequest() != nil, connection.write(head) else { return }
                // As fast as the connection takes it.
                for start in stride(from: 0, to: total, by: 64 * 1024) {
                    guard connection.write(Array(body[start..<min(start + 64 * 1024, total)])) else { return }
                }
                connection.waitForClose()
            }
        ) { server, base in
            try await withClient({
                $0.streamHighWatermark = highWatermark
                $0.timeout = .seconds(60)
            }) { client in
                let response = try await client.stream(HTTPClientRequest(url: base + "/big"))
                #expect(response.status == 200)
                var iterator = response.body.makeAsyncIterator()
                var received = try await iterator.next() ?? []
                // What the client took off its socket and holds, beyond the piece it handed out.
                func heldBytes(written: Int, unacknowledged: Int, unread: Int) -> Int {
                    written - head.utf8.count - unacknowledged - unread - received.count
                }
                // The consumer now reads nothing: the server writes until every buffer on the
                // way is full, then its writes block. Settled once neither the writes nor the
                // kernel's queues have moved for a second, and no byte is counted twice: a
                // receiver's ACK not yet taken in by the sender (late on a loaded machine, by
                // seconds in CI) leaves bytes counted both unacknowledged and unread until it is.
                var last = (written: -1, unacknowledged: -1, unread: -1)
                var since = MonotonicInstant.now()
                await eventually(
                    "the server's writes stop growing, every byte counted once", within: .seconds(60),
                    every: .milliseconds(20)
                ) {
                    let queues = kernelQueues(serverPort: server.port)
                    let now = (server.written.load(ordering: .relaxed), queues.unacknowledged, queues.unread)
                    if now != last {
                        last = now
                        since = .now()
                        return false
                    }
                    let countedOnce = heldBytes(written: now.0, unacknowledged: now.1, unread: now.2) >= 0
                    return countedOnce && since.nanoseconds(until: .now()) >= 1_000_000_000
                }
                let written = server.written.load(ordering: .relaxed)
                let queues = kernelQueues(serverPort: server.port)
                let held = heldBytes(written: written, unacknowledged: queues.unacknowledged, unread: queues.unread)
                let seen = "written \(written), in the kernel \(queues), handed out \(received.count), held \(held)"
                #expect(written < total / 4, "\(seen)")
                #expect(held <= highWatermark + 64 * 1024, "\(seen)")
                if server.written.load(ordering: .relaxed) == written {
                    // Measured while nothing moved: the kernel's queues and the counts agree.
                    #expect(held >= 0, "\(seen)")
                }

                while let chunk = try await iterator.next() { received.append(contentsOf: chunk) }
                #expect(received.count == total)
                #expect(received == body, "the body came back whole and in order")
                #expect(await client.activeTransferCount() == 0)
            }
        }
    }
}
