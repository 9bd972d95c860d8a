import Testing

@testable import HTTP1

@Suite("ResponseEncoder")
struct ResponseEncoderTests {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test("writes the status line, the fields in order and the empty line")
    func head() {
        var buffer: [UInt8] = []
        let headers = HTTPHeaders([
            ("Content-Type", "application/json"), ("Content-Length", "2"), ("X-A", "1"), ("x-a", "2"),
        ])
        ResponseEncoder.writeHead(status: .ok, version: .http1_1, headers: headers, into: &buffer)
        #expect(
            text(buffer) == "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                + "X-A: 1\r\nx-a: 2\r\n\r\n")
    }

    @Test("appends to the buffer; an unknown code keeps the space before an empty phrase")
    func appendsAndEmptyPhrase() {
        var buffer = Array(raw: "prefix")
        ResponseEncoder.writeHead(status: HTTPStatus(code: 599), version: .http1_0, headers: [:], into: &buffer)
        #expect(text(buffer) == "prefixHTTP/1.0 599 \r\n\r\n")
    }

    @Test("decimal fields are written digit for digit, as String(Int) would")
    func decimals() {
        for value in [0, 1, 9, 10, 99, 100, 101, 12_345, 1_000_000, -1, -10, Int.max, Int.min] {
            var buffer: [UInt8] = []
            ResponseEncoder.writeField(name: "Content-Length", value: value, into: &buffer)
            #expect(text(buffer) == "Content-Length: \(String(value))\r\n")
        }
    }

    @Test("CR, LF and NUL in the phrase, names and values are written as spaces")
    func noResponseSplitting() {
        var buffer: [UInt8] = []
        let headers = HTTPHeaders([("X-Evil\r\nSet-Cookie", "a\r\n\r\nHTTP/1.1 200 OK\u{0}")])
        let status = HTTPStatus(code: 400, reasonPhrase: "Bad\r\nX: y")
        ResponseEncoder.writeHead(status: status, version: .http1_1, headers: headers, into: &buffer)
        #expect(text(buffer) == "HTTP/1.1 400 Bad  X: y\r\nX-Evil  Set-Cookie: a    HTTP/1.1 200 OK \r\n\r\n")
    }

    @Test("chunks: lower-case hex size, CRLF, data, CRLF; empty chunk writes nothing; last chunk")
    func chunks() {
        var buffer: [UInt8] = []
        ResponseEncoder.writeChunk(Array(raw: "hello"), into: &buffer)
        ResponseEncoder.writeChunk([UInt8](), into: &buffer)
        ResponseEncoder.writeChunk([UInt8](repeating: UInt8(ascii: "x"), count: 26), into: &buffer)
        ResponseEncoder.writeChunk("abc".utf8, into: &buffer)
        ResponseEncoder.writeLastChunk(into: &buffer)
        #expect(text(buffer) == "5\r\nhello\r\n1a\r\n\(String(repeating: "x", count: 26))\r\n3\r\nabc\r\n0\r\n\r\n")
    }

    @Test(
        "chunk sizes in hex",
        arguments: [
            (1, "1"), (15, "f"), (16, "10"), (255, "ff"), (4096, "1000"), (65535, "ffff"),
        ])
    func chunkSizes(_ count: Int, _ hex: String) {
        var buffer: [UInt8] = []
        ResponseEncoder.writeChunk([UInt8](repeating: 0, count: count), into: &buffer)
        #expect(buffer.starts(with: Array(raw: hex + "\r\n")))
        #expect(buffer.count == hex.utf8.count + 2 + count + 2)
    }

    @Test("our chunked output parses back to the same body")
    func roundTrip() throws {
        var buffer = Array(raw: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
        let body = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var offset = 0
        for size in [1, 10, 100, 1000, 3889] {
            ResponseEncoder.writeChunk(body[offset..<offset + size], into: &buffer)
            offset += size
        }
        ResponseEncoder.writeLastChunk(into: &buffer)
        let outcome = ParserHarness.parse(buffer)
        #expect(outcome.error == nil)
        #expect(outcome.bodies == [body])
    }
}
