import Testing

@testable import HTTPClient

/// What reading one response gave: its head and body as the sink holds them, how it ended, and
/// whether the connection may carry another request; only the error's kind when it failed.
private struct Reading: Equatable, Sendable, CustomStringConvertible {
    var status = 0
    var version = ""
    var headComplete = false
    var fields: [String] = []
    var body: [UInt8] = []
    /// The reader said the response is complete.
    var ended = false
    var endsAtClose = false
    var keepAlive = false
    /// Bytes offered past the response's end (left unconsumed).
    var trailing = 0
    var error: HTTPClientError.Kind?

    static func failed(_ kind: HTTPClientError.Kind) -> Reading {
        Reading(error: kind)
    }

    var description: String {
        if let error { return "error \(error)" }
        let text = String(decoding: body, as: UTF8.self).debugDescription
        return "\(status) HTTP/\(version) head \(headComplete) \(fields) body \(text)"
            + " ended \(ended) endsAtClose \(endsAtClose) keepAlive \(keepAlive) trailing \(trailing)"
    }
}

/// Reads `pieces` one after another as `PlainConnections.feed` does: what the reader leaves
/// unconsumed (an unfinished line) is offered again with the next piece; feeding stops once
/// the reader says the response ended.
private func readResponse(_ pieces: [[UInt8]], headRequest: Bool = false, maxBodyBytes: Int = 1 << 20) async -> Reading
{
    let sink = ResponseSink(streaming: false, maxBodyBytes: maxBodyBytes, highWatermark: 64 * 1024)
    var reader = ResponseReader(headRequest: headRequest)
    var leftover: [UInt8] = []
    var reading = Reading()
    do {
        for (index, piece) in pieces.enumerated() {
            let step: ResponseReader.Step
            if leftover.isEmpty {
                step = try piece.withUnsafeBytes { try reader.read($0, into: sink) }
                if step.ended {
                    reading.trailing = piece.count - step.consumed
                } else if step.consumed < piece.count {
                    leftover.append(contentsOf: piece[step.consumed...])
                }
            } else {
                leftover.append(contentsOf: piece)
                step = try leftover.withUnsafeBytes { try reader.read($0, into: sink) }
                if step.ended { reading.trailing = leftover.count - step.consumed }
                leftover.removeFirst(step.consumed)
            }
            if step.ended {
                reading.ended = true
                reading.trailing += pieces[(index + 1)...].reduce(0) { $0 + $1.count }
                break
            }
        }
    } catch let error as HTTPClientError {
        return .failed(error.kind)
    } catch {
        Issue.record("not an HTTPClientError: \(error)")
        return .failed(.invalidRequest)
    }
    if !reading.ended { reading.trailing = leftover.count }
    reading.status = sink.status
    reading.version = sink.version.description
    reading.headComplete = sink.headComplete
    reading.endsAtClose = reader.endsAtClose
    reading.keepAlive = reader.keepAlive
    // The fields and body only leave the sink in the response it hands its waiter at the end.
    let response = try? await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<HTTPClientResponse, any Error>) in
        sink.waitForResponse(continuation)
        sink.finish(.success(()))
    }
    reading.fields = response?.head.headers.map { "\($0.name): \($0.value)" } ?? ["(no response)"]
    reading.body = response?.body ?? []
    return reading
}

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// One response to read, and what reading it must give.
struct ReaderCase: Sendable, CustomTestStringConvertible {
    let name: String
    let input: [UInt8]
    let headRequest: Bool
    let maxBodyBytes: Int
    fileprivate let expected: Reading

    fileprivate init(
        _ name: String, _ input: String, headRequest: Bool = false, maxBodyBytes: Int = 1 << 20, _ expected: Reading
    ) {
        self.name = name
        self.input = Array(input.utf8)
        self.headRequest = headRequest
        self.maxBodyBytes = maxBodyBytes
        self.expected = expected
    }

    var testDescription: String { name }

    /// A complete final response.
    fileprivate static func done(
        _ status: Int, _ fields: [String], _ body: String, version: String = "1.1", keepAlive: Bool = true,
        trailing: Int = 0
    ) -> Reading {
        Reading(
            status: status, version: version, headComplete: true, fields: fields, body: bytes(body), ended: true,
            endsAtClose: false, keepAlive: keepAlive, trailing: trailing)
    }

    /// A response whose body runs until the connection closes (all of `body` read so far).
    fileprivate static func untilClose(_ status: Int, _ fields: [String], _ body: String, version: String = "1.1")
        -> Reading
    {
        Reading(
            status: status, version: version, headComplete: true, fields: fields, body: bytes(body), ended: false,
            endsAtClose: true, keepAlive: false, trailing: 0)
    }

    static let all: [ReaderCase] = [
        ReaderCase(
            "a Content-Length body",
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world",
            done(200, ["Content-Type: text/plain", "Content-Length: 11"], "hello world")),
        ReaderCase(
            "bytes past a Content-Length body are left unconsumed",
            "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n",
            done(201, ["Content-Length: 2"], "ok", trailing: 17)),
        ReaderCase(
            "an empty Content-Length body",
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
            done(200, ["Content-Length: 0"], "")),
        ReaderCase(
            "a chunked body with extensions, upper and lower case sizes, and trailers",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n5;name=value\r\nhello\r\n1 ; x\r\n \r\n"
                + "A\r\n0123456789\r\nb;q=\"a;b\"\r\n-abcdefghij\r\n0;last\r\nX-Trailer: t\r\nX-Other: u\r\n\r\n",
            done(200, ["Transfer-Encoding: chunked", "X-A: 1"], "hello 0123456789-abcdefghij")),
        ReaderCase(
            "chunked wins over Content-Length",
            "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
            done(200, ["Content-Length: 100", "Transfer-Encoding: chunked"], "ok")),
        ReaderCase(
            "a body until close, without Content-Length or Transfer-Encoding",
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: 1\n\ndata: 2\n\n",
            untilClose(200, ["Content-Type: text/event-stream"], "data: 1\n\ndata: 2\n\n")),
        ReaderCase(
            "100 Continue and 103 Early Hints are skipped before the final response",
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
                + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            done(200, ["Content-Length: 2"], "ok")),
        ReaderCase(
            "an interim response's Connection: close does not carry over",
            "HTTP/1.1 100 Continue\r\nConnection: close\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            done(200, ["Content-Length: 2"], "ok")),
        ReaderCase(
            "204 has no body, even with Content-Length",
            "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
            done(204, ["Content-Length: 5"], "")),
        ReaderCase(
            "304 has no body, even with Content-Length",
            "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\nETag: \"x\"\r\n\r\n",
            done(304, ["Content-Length: 5", "ETag: \"x\""], "")),
        ReaderCase(
            "a response to HEAD has no body, even with Content-Length",
            "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n", headRequest: true,
            done(200, ["Content-Length: 12"], "")),
        ReaderCase(
            "a response to HEAD has no body, even chunked",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", headRequest: true,
            done(200, ["Transfer-Encoding: chunked"], "")),
        ReaderCase(
            "Connection: close ends the connection's use",
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
            done(200, ["Connection: close", "Content-Length: 2"], "ok", keepAlive: false)),
        ReaderCase(
            "close among Connection's options, in any case, ends it too",
            "HTTP/1.1 200 OK\r\nconnection: Keep-Alive, CLOSE\r\nContent-Length: 2\r\n\r\nok",
            done(200, ["connection: Keep-Alive, CLOSE", "Content-Length: 2"], "ok", keepAlive: false)),
        ReaderCase(
            "HTTP/1.0 is not kept alive by default",
            "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
            done(200, ["Content-Length: 2"], "ok", version: "1.0", keepAlive: false)),
        ReaderCase(
            "HTTP/1.0 with Connection: keep-alive is kept alive",
            "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
            done(200, ["Connection: keep-alive", "Content-Length: 2"], "ok", version: "1.0")),
        ReaderCase(
            "HTTP/1.0 without a length runs until close",
            "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\nrest",
            untilClose(200, ["Connection: keep-alive"], "rest", version: "1.0")),
        ReaderCase(
            "a transfer coding after chunked runs until close, the body as sent",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\nContent-Length: 3\r\n\r\n2\r\nok\r\n0\r\n\r\n",
            untilClose(
                200, ["Transfer-Encoding: chunked, gzip", "Content-Length: 3"], "2\r\nok\r\n0\r\n\r\n")),
        ReaderCase(
            "chunked last after another coding is read as chunked",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
            done(200, ["Transfer-Encoding: gzip, Chunked"], "ok")),
        ReaderCase(
            "Content-Length: 5, 5 is one length",
            "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello",
            done(200, ["Content-Length: 5, 5"], "hello")),
        ReaderCase(
            "two Content-Length fields that agree are one length",
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\nhello",
            done(200, ["Content-Length: 5", "content-length: 5"], "hello")),
        ReaderCase(
            "LF-only line ends with a Content-Length body",
            "HTTP/1.1 200 OK\nContent-Length: 2\nX-B: b\n\nok",
            done(200, ["Content-Length: 2", "X-B: b"], "ok")),
        ReaderCase(
            "LF-only line ends with a chunked body",
            "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n2\nok\n3;e\n!!!\n0\nX-T: 1\n\n",
            done(200, ["Transfer-Encoding: chunked"], "ok!!!")),
        ReaderCase(
            "a body exactly at the limit is taken",
            "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789", maxBodyBytes: 10,
            done(200, ["Content-Length: 10"], "0123456789")),
        ReaderCase(
            "Content-Length of letters fails",
            "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nabc", .failed(.transport)),
        ReaderCase(
            "Content-Length: 5, 6 fails",
            "HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello!", .failed(.transport)),
        ReaderCase(
            "two Content-Length fields that differ fail",
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", .failed(.transport)),
        ReaderCase(
            "a negative Content-Length fails",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", .failed(.transport)),
        ReaderCase(
            "a chunk size of letters fails",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", .failed(.transport)),
        ReaderCase(
            "an empty chunk size line fails",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", .failed(.transport)),
        ReaderCase(
            "a chunk size of only an extension fails",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n;a=b\r\n", .failed(.transport)),
        ReaderCase(
            "a negative chunk size fails",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n", .failed(.transport)),
        ReaderCase(
            "a chunk size of 16 hex digits fails",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n", .failed(.transport)),
        ReaderCase(
            "chunk data longer than its size fails",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokay\r\n0\r\n\r\n", .failed(.transport)),
        ReaderCase("a first line that is not HTTP fails", "hello\r\n\r\n", .failed(.transport)),
        ReaderCase("an HTTP/2 status line fails", "HTTP/2 200\r\n\r\n", .failed(.transport)),
        ReaderCase("another protocol's status line fails", "ICY 200 OK\r\n\r\n", .failed(.transport)),
        ReaderCase("a two-digit status fails", "HTTP/1.1 20 OK\r\n\r\n", .failed(.transport)),
        ReaderCase("a four-digit status fails", "HTTP/1.1 2000 OK\r\n\r\n", .failed(.transport)),
        ReaderCase(
            "101 Switching Protocols, never asked for, fails",
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
            .failed(.transport)),
        ReaderCase(
            "a Content-Length body over the limit fails",
            "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n0123456789a", maxBodyBytes: 10, .failed(.responseTooLarge)),
        ReaderCase(
            "a chunked body over the limit fails",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n012345\r\n6\r\n6789ab\r\n0\r\n\r\n",
            maxBodyBytes: 10, .failed(.responseTooLarge)),
        ReaderCase(
            "a body until close over the limit fails",
            "HTTP/1.1 200 OK\r\n\r\n0123456789a", maxBodyBytes: 10, .failed(.responseTooLarge)),
    ]
}

@Suite("Reading an HTTP/1.x response", .serialized)
struct ResponseReaderTests {
    @Test("reads each response as expected, fed whole", arguments: ReaderCase.all)
    func readsWhole(_ response: ReaderCase) async {
        let reading = await readResponse(
            [response.input], headRequest: response.headRequest, maxBodyBytes: response.maxBodyBytes)
        #expect(reading == response.expected)
    }

    @Test(
        "reads each response the same fed byte by byte and split in two anywhere, unfinished lines offered again",
        arguments: ReaderCase.all)
    func readsInPieces(_ response: ReaderCase) async {
        let input = response.input
        let byByte = await readResponse(
            input.map { [$0] }, headRequest: response.headRequest, maxBodyBytes: response.maxBodyBytes)
        #expect(byByte == response.expected, "byte by byte")
        var failures = 0
        for split in 1..<input.count {
            let reading = await readResponse(
                [Array(input[..<split]), Array(input[split...])], headRequest: response.headRequest,
                maxBodyBytes: response.maxBodyBytes)
            if reading != response.expected, failures < 3 {
                failures += 1
                Issue.record("split at \(split): \(reading), expected \(response.expected)")
            }
        }
    }

    @Test(
        "long field lines and a long chunk extension, delivered in small pieces, read as they do whole",
        arguments: [
            (617, 1), (617, 10), (16_400, 1448), // a field line of that many bytes, line end included
            (-128, 1), (-128, 10), // (negative) a chunk-size line of that many bytes
        ])
    func longLinesInPieces(_ lineBytes: Int, _ pieceBytes: Int) async {
        // Real upstreams send such lines (a cookie, a content security policy; an extension
        // naming a signature), and a slow connection delivers them in pieces: one TCP segment
        // (1,448 bytes) at a time, or less.
        let input: [UInt8]
        let expected: Reading
        if lineBytes > 0 {
            let cookie = "id=" + String(repeating: "c", count: lineBytes - 17)
            input = bytes("HTTP/1.1 200 OK\r\nSet-Cookie: \(cookie)\r\nContent-Length: 2\r\n\r\nok")
            expected = ReaderCase.done(200, ["Set-Cookie: \(cookie)", "Content-Length: 2"], "ok")
        } else {
            let signature = "sig=" + String(repeating: "e", count: -lineBytes - 8)
            input = bytes(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;\(signature)\r\nhello\r\n0\r\n\r\n")
            expected = ReaderCase.done(200, ["Transfer-Encoding: chunked"], "hello")
        }
        let whole = await readResponse([input])
        #expect(whole == expected, "whole")
        let pieces = stride(from: 0, to: input.count, by: pieceBytes).map {
            Array(input[$0..<min($0 + pieceBytes, input.count)])
        }
        let inPieces = await readResponse(pieces)
        #expect(inPieces == expected, "in pieces of \(pieceBytes) bytes")
    }

    @Test("a head over 100 KiB fails; one just under it is read, fed whole or in 1,000-byte pieces")
    func headLimit() async {
        let line = "X-Filler: " + String(repeating: "f", count: 1000) + "\r\n" // 1,012 bytes
        let over = bytes("HTTP/1.1 200 OK\r\n" + String(repeating: line, count: 102) + "Content-Length: 0\r\n\r\n")
        #expect(over.count > ResponseReader.headLimit)
        let overReading = await readResponse([over])
        #expect(overReading == .failed(.transport))
        // A flood without a line end fails once it passes the limit, before any line is whole.
        let flood = bytes("HTTP/1.1 200 OK\r\nX-Flood: " + String(repeating: "x", count: 101 * 1024))
        let floodReading = await readResponse([flood])
        #expect(floodReading == .failed(.transport))

        let fieldsUnder = String(repeating: line, count: 95)
        let under = bytes("HTTP/1.1 200 OK\r\n" + fieldsUnder + "Content-Length: 2\r\n\r\nok")
        #expect(under.count < ResponseReader.headLimit - 2 * 1024)
        let fields =
            Array(repeating: "X-Filler: " + String(repeating: "f", count: 1000), count: 95) + [
                "Content-Length: 2"
            ]
        let expected = ReaderCase.done(200, fields, "ok")
        let whole = await readResponse([under])
        #expect(whole == expected, "whole")
        let pieces = stride(from: 0, to: under.count, by: 1000).map { Array(under[$0..<min($0 + 1000, under.count)]) }
        let inPieces = await readResponse(pieces)
        #expect(inPieces == expected, "in 1,000-byte pieces")
    }
}

@Suite("Splitting plain http URLs", .serialized)
struct PlainTargetTests {
    @Test("splits host, port, key, Host field and target")
    func splits() throws {
        let api = try #require(PlainTarget(url: "http://127.0.0.1:8080/v1/chat/completions"))
        #expect(api.host == "127.0.0.1")
        #expect(api.port == 8080)
        #expect(api.key == "127.0.0.1:8080")
        #expect(api.hostField == "127.0.0.1:8080")
        #expect(api.target == "/v1/chat/completions")

        let bare = try #require(PlainTarget(url: "http://example.com"))
        #expect(bare.host == "example.com")
        #expect(bare.port == 80)
        #expect(bare.key == "example.com:80")
        #expect(bare.hostField == "example.com")
        #expect(bare.target == "/")

        let explicit80 = try #require(PlainTarget(url: "http://example.com:80/a"))
        #expect(explicit80.hostField == "example.com")
        #expect(explicit80.key == "example.com:80")

        let v6 = try #require(PlainTarget(url: "http://[::1]:9000/x?y=1#frag"))
        #expect(v6.host == "::1")
        #expect(v6.port == 9000)
        #expect(v6.key == "[::1]:9000")
        #expect(v6.hostField == "[::1]:9000")
        #expect(v6.target == "/x?y=1")

        let v6Default = try #require(PlainTarget(url: "http://[::1]/"))
        #expect(v6Default.hostField == "[::1]")
        #expect(v6Default.key == "[::1]:80")

        let query = try #require(PlainTarget(url: "HTTP://Host:81?q"))
        #expect(query.host == "Host")
        #expect(query.port == 81)
        #expect(query.key == "Host:81")
        #expect(query.hostField == "Host:81")
        #expect(query.target == "/?q")

        let fragmentOnly = try #require(PlainTarget(url: "http://h#top"))
        #expect(fragmentOnly.target == "/")
        #expect(PlainTarget(url: "http://h:65535/")?.port == 65535)
        #expect(PlainTarget(url: "http://h:1/")?.port == 1)
    }

    @Test(
        "leaves to curl what it does not take",
        arguments: [
            "https://example.com/", "HTTPS://example.com/", "ftp://example.com/", "http://", "http:///path",
            "http://u:p@h/", "http://u@h/", "http://a b/", "http://h/a b", "http://h/\u{e9}", "http://h:0/",
            "http://h:70000/", "http://h:/", "http://h:123456/", "http://h:8a/", "http://[::1/", "http://[::1]x/",
            "http://h\u{1}/",
        ])
    func refuses(_ url: String) {
        #expect(PlainTarget(url: url) == nil)
        #expect(!PlainTarget.takes(url))
    }
}

@Suite("Encoding a plain request", .serialized)
struct PlainRequestTests {
    private let target = PlainTarget(url: "http://127.0.0.1:8080/v1/chat/completions")!

    private func encoded(_ request: HTTPClientRequest) -> String {
        String(decoding: PlainRequest.encode(request, target: target).bytes, as: UTF8.self)
    }

    @Test("writes the request line, Host first, the fields in order, Accept when none, the length and the body")
    func exactBytes() throws {
        let request = HTTPClientRequest(
            method: "POST", url: "http://127.0.0.1:8080/v1/chat/completions",
            headers: [("Content-Type", "application/json"), ("Authorization", "Bearer k"), ("X-Id", "7")],
            body: bytes("{\"a\":1}"))
        #expect(
            encoded(request)
                == "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n"
                + "Authorization: Bearer k\r\nX-Id: 7\r\nAccept: */*\r\nContent-Length: 7\r\n\r\n{\"a\":1}")
        let bare = try #require(PlainTarget(url: "http://example.com"))
        #expect(
            String(
                decoding: PlainRequest.encode(HTTPClientRequest(url: "http://example.com"), target: bare).bytes,
                as: UTF8.self
            )
                == "GET / HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n")
    }

    @Test("a POST without a body says Content-Length: 0; a GET without one sends no length; a PUT with one does")
    func lengths() {
        #expect(
            encoded(HTTPClientRequest(method: "POST", url: ""))
                == "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n"
                + "Content-Length: 0\r\n\r\n")
        #expect(
            encoded(HTTPClientRequest(method: "GET", url: ""))
                == "GET /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n\r\n")
        #expect(
            encoded(HTTPClientRequest(method: "PUT", url: "", body: [0x41, 0x42]))
                == "PUT /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n"
                + "Content-Length: 2\r\n\r\nAB")
    }

    @Test("the caller's own Accept replaces the default, and its own Host is used instead, where it stands")
    func ownAcceptAndHost() {
        let request = HTTPClientRequest(
            method: "GET", url: "", headers: [("accept", "text/event-stream"), ("host", "upstream.example")])
        #expect(
            encoded(request)
                == "GET /v1/chat/completions HTTP/1.1\r\naccept: text/event-stream\r\nhost: upstream.example\r\n\r\n")
    }

    @Test("CR and LF are dropped from names and values, and colons from names")
    func cleaned() {
        let request = HTTPClientRequest(
            method: "GET", url: "", headers: [("X-Note", "one\r\nX-Injected: yes\rtwo\nthree"), ("X:A\r\nB", "c")])
        #expect(
            encoded(request)
                == "GET /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-Note: oneX-Injected: yestwothree\r\n"
                + "XAB: c\r\nAccept: */*\r\n\r\n")
    }

    @Test("a field whose value is empty, or only line ends, is left out, and so is a field without a name")
    func emptyLeftOut() {
        let request = HTTPClientRequest(
            method: "GET", url: "",
            headers: [("X-Empty", ""), ("X-Lines", "\r\n"), ("", "v"), (":", "w"), ("X-B", "b")])
        #expect(
            encoded(request)
                == "GET /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-B: b\r\nAccept: */*\r\n\r\n")
    }

    @Test("the request's own Content-Length, Transfer-Encoding and Expect are not sent")
    func framingFieldsSkipped() {
        let request = HTTPClientRequest(
            method: "POST", url: "",
            headers: [
                ("Content-Length", "99"), ("transfer-encoding", "chunked"), ("EXPECT", "100-continue"), ("X-K", "k"),
            ],
            body: bytes("abc"))
        #expect(
            encoded(request)
                == "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-K: k\r\nAccept: */*\r\n"
                + "Content-Length: 3\r\n\r\nabc")
    }

    @Test("many fields are written whole; a body over 16 KiB is left to be written after the head, one at it is not")
    func largeRequest() {
        let headers = (0..<50).map { (name: "X-Field-\($0)", value: String(repeating: "v", count: $0 * 10)) }
        for size in [300_000, PlainRequest.bodyApartBytes + 1, PlainRequest.bodyApartBytes] {
            let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 % 251) }
            let encoded = PlainRequest.encode(
                HTTPClientRequest(method: "POST", url: "", headers: headers, body: body), target: target)
            var head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
            for field in headers where !field.value.isEmpty { head += "\(field.name): \(field.value)\r\n" }
            head += "Accept: */*\r\nContent-Length: \(size)\r\n\r\n"
            #expect(String(decoding: encoded.bytes.prefix(head.utf8.count), as: UTF8.self) == head)
            if size > PlainRequest.bodyApartBytes {
                #expect(encoded.bodyApart)
                #expect(encoded.bytes.count == head.utf8.count)
            } else {
                #expect(!encoded.bodyApart)
                #expect(encoded.bytes.count == head.utf8.count + body.count)
                #expect(Array(encoded.bytes.suffix(body.count)) == body)
            }
        }
    }
}
