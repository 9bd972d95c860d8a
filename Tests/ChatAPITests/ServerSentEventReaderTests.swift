import ChatAPI
import Testing

/// Reads `bytes` in one feed, then finishes.
func readAll(_ bytes: [UInt8], reader: ServerSentEventReader = ServerSentEventReader()) throws -> [ServerSentEvent] {
    var reader = reader
    return try reader.feed(bytes) + reader.finish()
}

@Suite("ServerSentEventReader")
struct ServerSentEventReaderTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var input: [UInt8]
        var events: [ServerSentEvent]
        var comments = 0

        init(_ name: String, _ input: String, _ events: [ServerSentEvent], comments: Int = 0) {
            self.init(name, Array(input.utf8), events, comments: comments)
        }

        init(_ name: String, _ input: [UInt8], _ events: [ServerSentEvent], comments: Int = 0) {
            self.name = name
            self.input = input
            self.events = events
            self.comments = comments
        }

        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case("one data line", "data: hello\n\n", [.init(data: "hello")]),
        Case("data lines join with LF", "data: a\ndata: b\ndata: c\n\n", [.init(data: "a\nb\nc")]),
        Case("CRLF line breaks", "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", [.init(data: "a\nb"), .init(data: "c")]),
        Case("CR line breaks", "data: a\rdata: b\r\rdata: c\r\r", [.init(data: "a\nb"), .init(data: "c")]),
        Case("mixed line breaks", "data: a\r\ndata: b\rdata: c\n\r\n", [.init(data: "a\nb\nc")]),
        Case("no space after the colon", "data:a\n\n", [.init(data: "a")]),
        Case("only one space is stripped", "data:  a \n\n", [.init(data: " a ")]),
        Case("a tab is not stripped", "data:\ta\n\n", [.init(data: "\ta")]),
        Case("colons in the value are kept", "data: {\"a\":\"b:c\"}\n\n", [.init(data: "{\"a\":\"b:c\"}")]),
        Case("comments are counted and ignored", ": ping\ndata: x\n:\n\n", [.init(data: "x")], comments: 2),
        Case("a comment between data lines", "data: a\n: keep-alive\ndata: b\n\n", [.init(data: "a\nb")], comments: 1),
        Case("a comment block dispatches nothing", ": ping\n\n: ping\n\n", [], comments: 2),
        Case("event type", "event: delta\ndata: x\n\n", [.init(event: "delta", data: "x")]),
        Case("an empty event type is the default", "event:\ndata: x\n\n", [.init(data: "x")]),
        Case("an explicit message type is kept", "event: message\ndata: x\n\n", [.init(event: "message", data: "x")]),
        Case(
            "the event type resets after dispatch", "event: e\ndata: a\n\ndata: b\n\n",
            [.init(event: "e", data: "a"), .init(data: "b")]),
        Case(
            "the last event id carries over until reset",
            "id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: 2\ndata: d\n\n",
            [.init(data: "a", id: "1"), .init(data: "b", id: "1"), .init(data: "c"), .init(data: "d", id: "2")]
        ),
        Case(
            "an id with NUL is ignored", "id: 1\ndata: a\n\nid: 2\u{0}x\ndata: b\n\n",
            [.init(data: "a", id: "1"), .init(data: "b", id: "1")]),
        Case(
            "retry needs digits only and belongs to its block",
            "retry: 3000\ndata: a\n\nretry: 3x\ndata: b\n\nretry:\ndata: c\n\n"
                + "retry: 99999999999999999999999\ndata: d\n\n",
            [.init(data: "a", retry: 3000), .init(data: "b"), .init(data: "c"), .init(data: "d")]
        ),
        Case(
            "a block without data dispatches nothing", "retry: 10\n\nevent: e\n\nid: 5\n\ndata: x\n\n",
            [.init(data: "x", id: "5")]),
        Case("data without a colon is an empty data line", "data\n\n", [.init(data: "")]),
        Case("data with an empty value", "data:\n\n", [.init(data: "")]),
        Case("two empty data lines are one LF", "data:\ndata:\n\n", [.init(data: "\n")]),
        Case("unknown fields are ignored", "foo: bar\ndata: x\nDATA: y\nData: z\n\n", [.init(data: "x")]),
        Case("blank lines alone dispatch nothing", "\n\n\r\n\r\r", []),
        Case("a BOM at the start is skipped", "\u{FEFF}data: x\n\n", [.init(data: "x")]),
        Case("a BOM later is part of the field name", "\u{FEFF}data: x\n\n\u{FEFF}data: y\n\n", [.init(data: "x")]),
        Case("only one BOM is skipped", "\u{FEFF}\u{FEFF}data: x\n\n", []),
        Case("Persian text", "data: سلام دنیا\n\n", [.init(data: "سلام دنیا")]),
        Case(
            "invalid UTF-8 becomes U+FFFD", Array("data: a".utf8) + [0xFF] + Array("b\n\n".utf8),
            [.init(data: "a\u{FFFD}b")]),
        Case("a partial BOM is content", [0xEF, 0xBB] + Array("\ndata: x\n\n".utf8), [.init(data: "x")]),
        Case(
            "end of stream dispatches a last event without its blank line", "data: a\n\ndata: b\n",
            [.init(data: "a"), .init(data: "b")]),
        Case(
            "end of stream ends an unterminated last line", "data: a\n\ndata: b", [.init(data: "a"), .init(data: "b")]),
        Case("end of stream after a CR", "data: a\r", [.init(data: "a")]),
        Case("an empty stream", "", []),
    ]

    @Test("reads the WHATWG event-stream format", arguments: cases)
    func table(_ testCase: Case) throws {
        var reader = ServerSentEventReader()
        let events = try reader.feed(testCase.input) + reader.finish()
        #expect(events == testCase.events)
        #expect(reader.commentCount == testCase.comments)
    }

    @Test("every case reads the same when fed byte by byte", arguments: cases)
    func tableByteByByte(_ testCase: Case) throws {
        var reader = ServerSentEventReader()
        var events: [ServerSentEvent] = []
        for byte in testCase.input {
            events += try reader.feed(CollectionOfOne(byte))
        }
        events += reader.finish()
        #expect(events == testCase.events)
        #expect(reader.commentCount == testCase.comments)
    }

    @Test("a CR at the end of one feed and an LF at the start of the next are one line break")
    func carriageReturnSplitFromLineFeed() throws {
        var reader = ServerSentEventReader()
        #expect(try reader.feed(Array("data: a\r".utf8)).isEmpty)
        #expect(try reader.feed(Array("\ndata: b\r\n\r".utf8)) == [.init(data: "a\nb")])
        #expect(try reader.feed(Array("\ndata: c\r".utf8)).isEmpty)
        #expect(try reader.feed(Array("\n\r".utf8)) == [.init(data: "c")])
        #expect(try reader.feed(Array("\n".utf8)).isEmpty)
        #expect(reader.finish().isEmpty)
    }

    @Test("an event is returned by the feed that completes it, not before")
    func dispatchTiming() throws {
        var reader = ServerSentEventReader()
        #expect(try reader.feed(Array("data: a\n".utf8)).isEmpty)
        #expect(try reader.feed(Array("\ndata: b\n".utf8)) == [.init(data: "a")])
        #expect(try reader.feed(Array("\n".utf8)) == [.init(data: "b")])
    }

    @Test("a BOM split across feeds is skipped")
    func splitByteOrderMark() throws {
        var reader = ServerSentEventReader()
        #expect(try reader.feed([0xEF]).isEmpty)
        #expect(try reader.feed([]).isEmpty)
        #expect(try reader.feed([0xBB]).isEmpty)
        #expect(try reader.feed([0xBF] + Array("data: x\n\n".utf8)) == [.init(data: "x")])
    }

    @Test("a line longer than the limit throws, in one feed or across several")
    func lineTooLong() throws {
        let limit = 16
        var exact = ServerSentEventReader(maximumLineLength: limit)
        #expect(try exact.feed(Array("data: 0123456789\n\n".utf8)) == [.init(data: "0123456789")])

        var oneFeed = ServerSentEventReader(maximumLineLength: limit)
        #expect(throws: ServerSentEventError.lineTooLong) { try oneFeed.feed(Array("data: 0123456789A\n\n".utf8)) }

        var split = ServerSentEventReader(maximumLineLength: limit)
        #expect(try split.feed(Array("data: 01234".utf8)).isEmpty)
        #expect(throws: ServerSentEventError.lineTooLong) { try split.feed(Array("56789AB".utf8)) }

        var comment = ServerSentEventReader(maximumLineLength: limit)
        #expect(throws: ServerSentEventError.lineTooLong) {
            try comment.feed(Array(": a very long comment line\n".utf8))
        }

        var unterminated = ServerSentEventReader(maximumLineLength: limit)
        for _ in 0..<16 {
            _ = try unterminated.feed([UInt8(ascii: "x")])
        }
        #expect(throws: ServerSentEventError.lineTooLong) { try unterminated.feed([UInt8(ascii: "x")]) }
    }

    @Test("the default limit is 1 MiB")
    func defaultLimit() throws {
        #expect(ServerSentEventReader().maximumLineLength == 1_048_576)
        let prefix = Array("data: ".utf8)
        let fits = prefix + [UInt8](repeating: UInt8(ascii: "a"), count: 1_048_576 - prefix.count)
        var reader = ServerSentEventReader()
        #expect(try reader.feed(fits + [0x0A, 0x0A]).first?.data.utf8.count == fits.count - prefix.count)
        var tooLong = ServerSentEventReader()
        #expect(throws: ServerSentEventError.lineTooLong) { try tooLong.feed(fits + [UInt8(ascii: "a")]) }
    }

    @Test("an event whose data is over the limit throws")
    func eventTooLarge() throws {
        var fits = ServerSentEventReader(maximumEventLength: 11)
        #expect(try fits.feed(Array("data: 12345\ndata: 12345\n\n".utf8)) == [.init(data: "12345\n12345")])
        var tooLarge = ServerSentEventReader(maximumEventLength: 10)
        #expect(throws: ServerSentEventError.eventTooLarge) {
            try tooLarge.feed(Array("data: 12345\ndata: 12345\n".utf8))
        }
    }

    @Test("after an error the reader keeps failing and finishes empty")
    func errorIsFinal() throws {
        var reader = ServerSentEventReader(maximumLineLength: 8)
        #expect(throws: ServerSentEventError.lineTooLong) { try reader.feed(Array("data: 0123456789\n\n".utf8)) }
        #expect(throws: ServerSentEventError.lineTooLong) { try reader.feed(Array("data: a\n\n".utf8)) }
        #expect(reader.finish().isEmpty)
        #expect(try reader.feed(Array("data: a\n\n".utf8)) == [.init(data: "a")])
    }

    @Test("finish resets the reader for a new stream")
    func finishResets() throws {
        var reader = ServerSentEventReader()
        #expect(
            try reader.feed(Array("id: 1\n: c\ndata: a\n\nevent: e\ndata: partial".utf8)) == [.init(data: "a", id: "1")]
        )
        #expect(reader.finish() == [.init(event: "e", data: "partial", id: "1")])
        #expect(try reader.feed(Array("\u{FEFF}data: b\n\n".utf8)) == [.init(data: "b")])
        #expect(reader.commentCount == 1)
    }

    @Test("accepts any byte collection")
    func collections() throws {
        var reader = ServerSentEventReader()
        let bytes = Array("xxdata: a\n\n".utf8)
        #expect(try reader.feed(bytes[2...]) == [.init(data: "a")])
        #expect(try reader.feed("data: b\n\n".utf8) == [.init(data: "b")])
    }
}
