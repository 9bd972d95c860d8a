import Testing

@testable import TextGatewayClient

@Suite("The client's server-sent event parser")
struct ServerSentEventParserTests {
    static let body = Array(
        "event: start\ndata: {\"a\":1}\n\n: ping\n\nevent: delta\r\ndata: one\r\ndata: two\r\n\r\ndata:x\r\r".utf8)
    static let expected = [
        ServerSentEvent(name: "start", data: "{\"a\":1}"),
        ServerSentEvent(name: "delta", data: "one\ntwo"),
        ServerSentEvent(name: "message", data: "x"),
    ]

    @Test("parses LF, CRLF and CR line ends, comments and multi-line data, split at every byte")
    func everySplit() {
        for split in 0...Self.body.count {
            var parser = ServerSentEventParser()
            let events = parser.feed(Self.body[..<split]) + parser.feed(Self.body[split...])
            #expect(events == Self.expected, "split at \(split)")
        }
    }

    @Test("an event without its blank line is given at the end of the body")
    func unterminated() {
        var parser = ServerSentEventParser()
        #expect(parser.feed(Array("event: done\ndata: {}".utf8)).isEmpty)
        #expect(parser.finish() == ServerSentEvent(name: "done", data: "{}"))
    }
}
