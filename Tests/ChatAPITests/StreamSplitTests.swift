import ChatAPI
import Testing

@Suite("Streams split at every position")
struct StreamSplitTests {
    static let lineBreaks = ["\n", "\r\n", "\r"]

    @Test("the reader gives the same events for one feed, every two-feed split and byte by byte", arguments: lineBreaks)
    func readerSplits(lineBreak: String) throws {
        let bytes = StreamFixtures.bytes(lineBreak: lineBreak)
        let whole = try readAll(bytes)
        #expect(whole == StreamFixtures.events)

        for split in 0...bytes.count {
            var reader = ServerSentEventReader()
            let events = try reader.feed(bytes[..<split]) + reader.feed(bytes[split...]) + reader.finish()
            #expect(events == whole, "split at \(split)")
            #expect(reader.commentCount == 1)
        }

        var reader = ServerSentEventReader()
        var events: [ServerSentEvent] = []
        for byte in bytes {
            events += try reader.feed([byte])
        }
        #expect(events + reader.finish() == whole)
    }

    @Test(
        "the chat decoder gives the same events for one feed, every two-feed split and byte by byte",
        arguments: lineBreaks)
    func decoderSplits(lineBreak: String) throws {
        let bytes = StreamFixtures.bytes(lineBreak: lineBreak)
        let expected = try StreamFixtures.chatEvents()
        var oneFeed = ChatStreamDecoder()
        #expect(try oneFeed.feed(bytes) + oneFeed.finish() == expected)

        for split in 0...bytes.count {
            var decoder = ChatStreamDecoder()
            let events = try decoder.feed(bytes[..<split]) + decoder.feed(bytes[split...]) + decoder.finish()
            #expect(events == expected, "split at \(split)")
        }

        var decoder = ChatStreamDecoder()
        var events: [ChatStreamEvent] = []
        for byte in bytes {
            events += try decoder.feed([byte])
        }
        #expect(events + (try decoder.finish()) == expected)
    }

    @Test("the stream's text and usage come out whole")
    func assembledContent() throws {
        var decoder = ChatStreamDecoder()
        var text = ""
        var usage: Usage?
        for event in try decoder.feed(StreamFixtures.bytes()) + decoder.finish() {
            if case .chunk(let chunk) = event {
                text += chunk.firstDeltaContent ?? ""
                usage = chunk.usage ?? usage
            }
        }
        #expect(text == "سلام دنیا!\nخط دوم")
        #expect(usage == Usage(promptTokens: 141, completionTokens: 37, totalTokens: 178, cachedPromptTokens: 0))
        #expect(decoder.isDone)
        #expect(decoder.commentCount == 1)
    }
}
