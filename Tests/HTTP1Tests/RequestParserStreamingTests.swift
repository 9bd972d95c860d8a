import Testing

@testable import HTTP1

@Suite("RequestParser: streaming behaviour")
struct RequestParserStreamingTests {
    private func feed(_ parser: inout RequestParser, _ string: String) {
        parser.append(Array(raw: string))
    }

    @Test("yields body bytes as they arrive without waiting for the whole body")
    func yieldsBodyAsItArrives() throws {
        var parser = RequestParser()
        feed(&parser, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
        guard case .head(let head)? = try parser.next() else {
            Issue.record("expected head")
            return
        }
        #expect(head.framing == .contentLength(10))
        #expect(try parser.next() == .body(Array(raw: "abc")))
        #expect(try parser.next() == nil)
        feed(&parser, "defghij")
        #expect(try parser.next() == .body(Array(raw: "defghij")))
        #expect(try parser.next() == .end)
        #expect(try parser.next() == nil)
        #expect(parser.isAwaitingRequest)
    }

    @Test("never yields more body than declared; the rest is the next request")
    func bodyStopsAtContentLength() throws {
        var parser = RequestParser()
        feed(&parser, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nokGET /next HTTP/1.1\r\n")
        _ = try parser.next()
        #expect(try parser.next() == .body(Array(raw: "ok")))
        #expect(try parser.next() == .end)
        #expect(try parser.next() == nil)
        #expect(!parser.isAwaitingRequest)
        feed(&parser, "Host: h\r\n\r\n")
        guard case .head(let next)? = try parser.next() else {
            Issue.record("expected head")
            return
        }
        #expect(next.path == "/next")
        #expect(try parser.next() == .end)
    }

    @Test("a Content-Length over the limit yields the head, then throws bodyTooLarge (413) for ever")
    func bodyTooLargeAfterHead() throws {
        var parser = RequestParser(limits: .init(maxBodyBytes: 4))
        feed(&parser, "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n")
        guard case .head(let head)? = try parser.next() else {
            Issue.record("expected head")
            return
        }
        #expect(head.path == "/upload")
        #expect(throws: HTTPParseError.bodyTooLarge) { try parser.next() }
        feed(&parser, "hello")
        #expect(throws: HTTPParseError.bodyTooLarge) { try parser.next() }
        #expect(HTTPParseError.bodyTooLarge.status == .contentTooLarge)
    }

    @Test("an error is sticky and later bytes are dropped")
    func errorIsSticky() throws {
        var parser = RequestParser()
        feed(&parser, "GET / HTTP/1.1\r\nHost : h\r\n\r\n")
        #expect(throws: HTTPParseError.whitespaceBeforeColon) { try parser.next() }
        feed(&parser, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(parser.bufferedByteCount == 0)
        #expect(throws: HTTPParseError.whitespaceBeforeColon) { try parser.next() }
        #expect(!parser.isAwaitingRequest)
    }

    @Test("a request line over the limit is rejected as bytes arrive, before any CRLF")
    func requestLineLimitWithoutCRLF() throws {
        var parser = RequestParser()
        feed(&parser, "GET /")
        #expect(try parser.next() == nil)
        parser.append([UInt8](repeating: UInt8(ascii: "a"), count: 8188))
        #expect(try parser.next() == nil) // 8193 bytes: could still be 8192 + CR.
        feed(&parser, "a")
        #expect(throws: HTTPParseError.requestLineTooLong) { try parser.next() }
        #expect(HTTPParseError.requestLineTooLong.status == .uriTooLong)
    }

    @Test("a header section over the limit is rejected as bytes arrive, before any CRLF")
    func headerLimitWithoutCRLF() throws {
        var parser = RequestParser()
        feed(&parser, "GET / HTTP/1.1\r\nX-Big: ")
        #expect(try parser.next() == nil)
        parser.append([UInt8](repeating: UInt8(ascii: "b"), count: 32768))
        #expect(throws: HTTPParseError.headerSectionTooLarge) { try parser.next() }
        #expect(HTTPParseError.headerSectionTooLarge.status == .requestHeaderFieldsTooLarge)
    }

    @Test("a chunk extension over 4 KiB is rejected before its CRLF")
    func chunkLineLimitWithoutCRLF() throws {
        var parser = RequestParser()
        feed(&parser, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1;a=")
        _ = try parser.next()
        parser.append([UInt8](repeating: UInt8(ascii: "b"), count: 5000))
        #expect(throws: HTTPParseError.invalidChunkFraming) { try parser.next() }
    }

    @Test("a chunk size over the limit is rejected before its data arrives")
    func chunkSizeOverLimit() throws {
        var parser = RequestParser(limits: .init(maxBodyBytes: 100))
        feed(&parser, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n")
        _ = try parser.next()
        #expect(throws: HTTPParseError.bodyTooLarge) { try parser.next() }
    }

    @Test("chunk data is yielded as it arrives")
    func chunkDataStreams() throws {
        var parser = RequestParser()
        feed(&parser, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\na\r\n01234")
        _ = try parser.next()
        #expect(try parser.next() == .body(Array(raw: "01234")))
        #expect(try parser.next() == nil)
        feed(&parser, "56789\r\n0\r\n")
        #expect(try parser.next() == .body(Array(raw: "56789")))
        #expect(try parser.next() == nil)
        feed(&parser, "\r\n")
        #expect(try parser.next() == .end)
    }

    @Test("isAwaitingRequest is true only between requests with nothing of the next one buffered")
    func awaitingRequest() throws {
        var parser = RequestParser()
        #expect(parser.isAwaitingRequest)
        feed(&parser, "G")
        #expect(try parser.next() == nil)
        #expect(!parser.isAwaitingRequest)
        feed(&parser, "ET / HTTP/1.1\r\nHost: h\r\n\r\n")
        _ = try parser.next()
        #expect(!parser.isAwaitingRequest)
        #expect(try parser.next() == .end)
        #expect(parser.isAwaitingRequest)
        #expect(try parser.next() == nil)
        feed(&parser, "\r\n")
        #expect(try parser.next() == nil)
        #expect(parser.isAwaitingRequest)
    }

    @Test("bufferedByteCount counts bytes not yet consumed")
    func bufferedByteCount() throws {
        var parser = RequestParser()
        let request = "GET / HTTP/1.1\r\nHost: h\r\n\r\n"
        feed(&parser, request + request)
        #expect(parser.bufferedByteCount == 2 * request.utf8.count)
        _ = try parser.next()
        #expect(parser.bufferedByteCount == request.utf8.count)
        _ = try parser.next()
        _ = try parser.next()
        #expect(parser.bufferedByteCount == 0)
    }

    @Test("many pipelined requests through a long-lived parser are all parsed, in order")
    func manyPipelinedRequests() throws {
        var parser = RequestParser()
        var paths: [String] = []
        for round in 0..<200 {
            var batch = ""
            for index in 0..<10 {
                batch += "POST /\(round)/\(index) HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
            }
            let bytes = Array(raw: batch)
            // Feed in uneven pieces so that partial requests stay buffered across appends.
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + 97)
                parser.append(Array(bytes[offset..<end]))
                offset = end
                while let event = try parser.next() {
                    if case .head(let head) = event { paths.append(head.path) }
                }
            }
        }
        #expect(paths.count == 2000)
        #expect(paths.first == "/0/0")
        #expect(paths.last == "/199/9")
        #expect(parser.isAwaitingRequest)
    }

    @Test("append from an UnsafeRawBufferPointer")
    func appendRawBuffer() throws {
        var parser = RequestParser()
        Array(raw: "GET / HTTP/1.1\r\nHost: h\r\n\r\n").withUnsafeBytes { parser.append($0) }
        guard case .head(let head)? = try parser.next() else {
            Issue.record("expected head")
            return
        }
        #expect(head.method == .GET)
    }

    @Test("negative limits count as zero and do not trap")
    func negativeLimits() throws {
        let negative = RequestParser.Limits(
            maxRequestLineBytes: -5, maxHeaderBytes: .min, maxHeaderCount: -1, maxBodyBytes: .min
        )
        var parser = RequestParser(limits: negative)
        feed(&parser, "GET / HTTP/1.1\r\n")
        #expect(throws: HTTPParseError.requestLineTooLong) { try parser.next() }

        let unlimited = RequestParser.Limits(
            maxRequestLineBytes: .max, maxHeaderBytes: .max, maxHeaderCount: .max, maxBodyBytes: .max
        )
        var huge = RequestParser(limits: unlimited)
        huge.append(Array(raw: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"))
        huge.append(Array(raw: "1\r\na\r\n7FFFFFFFFFFFFFFF\r\n"))
        _ = try huge.next()
        #expect(try huge.next() == .body(Array(raw: "a")))
        #expect(throws: HTTPParseError.bodyTooLarge) { try huge.next() }
    }
}
