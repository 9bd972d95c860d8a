import ChatAPI
import JSON
import Testing

@Suite("ServerSentEventWriter")
struct ServerSentEventWriterTests {
    private func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    @Test(
        "writes events, comments and [DONE] byte for byte",
        arguments: [
            (ServerSentEventWriter.event(name: "delta", data: "x"), "event: delta\ndata: x\n\n"),
            (ServerSentEventWriter.event(name: nil, data: "{\"a\":1}"), "data: {\"a\":1}\n\n"),
            (ServerSentEventWriter.event(name: "done", data: "x", id: "7"), "event: done\nid: 7\ndata: x\n\n"),
            (ServerSentEventWriter.event(name: nil, data: "a\nb"), "data: a\ndata: b\n\n"),
            (ServerSentEventWriter.event(name: nil, data: "a\r\nb\rc\n"), "data: a\ndata: b\ndata: c\ndata: \n\n"),
            (ServerSentEventWriter.event(name: nil, data: ""), "data: \n\n"),
            (ServerSentEventWriter.event(name: "", data: "x"), "data: x\n\n"),
            (ServerSentEventWriter.event(name: "del\r\nta\n", data: "x"), "event: delta\ndata: x\n\n"),
            (ServerSentEventWriter.event(name: "\n", data: "x"), "data: x\n\n"),
            (ServerSentEventWriter.event(name: nil, data: "x", id: "1\n2\u{0}3"), "id: 123\ndata: x\n\n"),
            (ServerSentEventWriter.comment("ping"), ": ping\n\n"),
            (ServerSentEventWriter.comment("a\nb"), ": a\n: b\n\n"),
            (ServerSentEventWriter.done(), "data: [DONE]\n\n"),
        ])
    func exactBytes(bytes: [UInt8], expected: String) {
        #expect(text(bytes) == expected)
    }

    static let roundTrip: [(name: String?, data: String, id: String?)] = [
        (nil, "x", nil),
        ("start", "{\"requestId\":\"0B9C\"}", nil),
        ("delta", "{\"delta\":\"سلام\\nدنیا\",\"text\":\"…\"}", "1"),
        ("delta", "line one\nline two\n\nline four", "2"),
        (nil, "", "3"),
        (nil, "\n", "4"),
        (nil, "\n\n", "5"),
        (nil, " leading space", "6"),
        (nil, "  two leading spaces\n trailing  ", "7"),
        (nil, "trailing newline\n", "8"),
        ("error", "data: not a field\n: not a comment\nevent: nope", "9"),
        (nil, ":colon first", "10"),
        ("message", "[DONE] is only data", "11"),
        (nil, "\u{FEFF}BOM inside data", "12"),
        ("\u{FEFF}", "a BOM as event name", "13"),
    ]

    @Test("what the writer writes the reader reads back unchanged")
    func roundTripThroughReader() throws {
        var stream: [UInt8] = ServerSentEventWriter.comment("opening")
        for event in Self.roundTrip {
            stream += ServerSentEventWriter.event(name: event.name, data: event.data, id: event.id)
            stream += ServerSentEventWriter.comment("ping")
        }
        stream += ServerSentEventWriter.done()

        let expected =
            Self.roundTrip.map { ServerSentEvent(event: $0.name, data: $0.data, id: $0.id) }
            + [ServerSentEvent(data: "[DONE]", id: "13")]
        var reader = ServerSentEventReader()
        #expect(try reader.feed(stream) + reader.finish() == expected)
        #expect(reader.commentCount == Self.roundTrip.count + 1)

        var byteByByte = ServerSentEventReader()
        var events: [ServerSentEvent] = []
        for byte in stream {
            events += try byteByByte.feed([byte])
        }
        #expect(events + byteByByte.finish() == expected)
    }

    @Test(
        "line breaks in data come back as LF",
        arguments: [
            ("a\r\nb", "a\nb"),
            ("a\rb", "a\nb"),
            ("a\r\n\r\nb\r", "a\n\nb\n"),
            ("\r\n", "\n"),
            ("\n\r", "\n\n"),
        ])
    func normalisedLineBreaks(data: String, expected: String) throws {
        #expect(try readAll(ServerSentEventWriter.event(name: nil, data: data)) == [ServerSentEvent(data: expected)])
    }

    @Test("chunks encoded by the module and written by the writer decode back", arguments: [0, 1, 2, 3, 4])
    func chunkRoundTrip(index: Int) throws {
        let chunk = try JSON.decode(ChatCompletionChunk.self, from: Array(StreamFixtures.chunkJSON[index].utf8))
        let data = String(decoding: try JSON.encode(chunk), as: UTF8.self)
        var decoder = ChatStreamDecoder()
        let events = try decoder.feed(ServerSentEventWriter.event(name: nil, data: data) + ServerSentEventWriter.done())
        #expect(events == [.chunk(chunk), .done])
    }
}
