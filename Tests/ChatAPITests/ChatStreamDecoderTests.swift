import ChatAPI
import JSON
import Testing

@Suite("ChatStreamDecoder")
struct ChatStreamDecoderTests {
    private func chunk(_ json: String) throws -> ChatStreamEvent {
        .chunk(try JSON.decode(ChatCompletionChunk.self, from: Array(json.utf8)))
    }

    @Test("reads chunks and [DONE], then ignores whatever follows")
    func ignoresAfterDone() throws {
        var decoder = ChatStreamDecoder()
        let events = try decoder.feed(
            Array("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\ndata: not json\n\n".utf8))
        #expect(events == [try chunk(#"{"choices":[{"delta":{"content":"a"}}]}"#), .done])
        #expect(decoder.isDone)
        #expect(try decoder.feed(Array("data: {broken\n\n".utf8)).isEmpty)
        #expect(try decoder.feed([UInt8](repeating: 0x61, count: 4 << 20)).isEmpty)
        #expect(try decoder.finish().isEmpty)
    }

    @Test("[DONE] may be surrounded by whitespace, and a last [DONE] needs no blank line")
    func doneVariants() throws {
        var spaced = ChatStreamDecoder()
        #expect(try spaced.feed(Array("data:  [DONE] \n\n".utf8)) == [.done])
        var unterminated = ChatStreamDecoder()
        #expect(try unterminated.feed(Array("data: [DONE]".utf8)).isEmpty)
        #expect(try unterminated.finish() == [.done])
    }

    @Test(
        "a stream that ends without [DONE] is truncated",
        arguments: [
            "",
            ": ping\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"cont",
            "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n",
            "data: [DO",
        ])
    func truncated(text: String) throws {
        var decoder = ChatStreamDecoder()
        _ = try decoder.feed(Array(text.utf8))
        #expect(throws: ChatStreamError.truncated) { try decoder.finish() }
        #expect(throws: ChatStreamError.truncated) { try decoder.finish() }
    }

    @Test(
        "data that is not a chunk is malformed, and the error names only its length",
        arguments: [
            "not json",
            "[1,2]",
            "\"text\"",
            "{\"choices\":\"x\"}",
            "{\"choices\":[{\"delta\":{\"content\":7}}]}",
            "{\"secret user text\": ",
        ])
    func malformed(data: String) throws {
        var decoder = ChatStreamDecoder()
        let error = #expect(throws: ChatStreamError.self) { try decoder.feed(Array("data: \(data)\n\n".utf8)) }
        #expect(error == .malformedChunk(length: data.utf8.count))
        #expect(error.map { String(describing: $0) } == "malformed stream chunk (\(data.utf8.count) bytes)")
        #expect(throws: ChatStreamError.malformedChunk(length: data.utf8.count)) {
            try decoder.feed(Array("data: [DONE]\n\n".utf8))
        }
        #expect(throws: ChatStreamError.malformedChunk(length: data.utf8.count)) { try decoder.finish() }
    }

    @Test(
        "an error object in the stream is an upstream error",
        arguments: [
            (
                "data: {\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\",\"param\":null,"
                    + "\"code\":\"rate_limit_exceeded\"}}\n\n",
                UpstreamErrorBody(message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded")
            ),
            (
                "event: error\ndata: {\"error\":{\"message\":\"overloaded\",\"code\":503}}\n\n",
                UpstreamErrorBody(message: "overloaded", code: "503")
            ),
            (
                "event: error\ndata: upstream exploded\n\n",
                UpstreamErrorBody(message: "upstream exploded")
            ),
            (
                "data: {\"object\":\"error\",\"message\":\"bad\",\"type\":\"BadRequestError\",\"code\":400}\n\n",
                UpstreamErrorBody(message: "bad", type: "BadRequestError", code: "400")
            ),
        ])
    func upstreamError(text: String, body: UpstreamErrorBody) throws {
        var decoder = ChatStreamDecoder()
        let prefix = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
        #expect(try decoder.feed(Array(prefix.utf8)).count == 1)
        #expect(throws: ChatStreamError.upstreamError(body)) { try decoder.feed(Array(text.utf8)) }
        #expect(throws: ChatStreamError.upstreamError(body)) { try decoder.finish() }
    }

    @Test(
        "chunks that merely mention error stay chunks",
        arguments: [
            #"{"choices":[{"delta":{"content":"error"}}]}"#,
            #"{"choices":[{"delta":{"content":"\"error\" is a word"}}]}"#,
            #"{"error":null,"choices":[{"delta":{"content":"x"}}]}"#,
            #"{"object":"chat.completion.chunk","choices":[{"delta":{"content":"error: none"}}]}"#,
        ])
    func mentionsError(json: String) throws {
        var decoder = ChatStreamDecoder()
        let events = try decoder.feed(Array("data: \(json)\n\ndata: [DONE]\n\n".utf8))
        #expect(events == [try chunk(json), .done])
    }

    @Test("the upstream error's description carries no message text")
    func upstreamErrorDescription() {
        let error = ChatStreamError.upstreamError(UpstreamErrorBody(message: "sk-secret", type: "t", code: "c"))
        #expect(String(describing: error) == "upstream error in stream (type: t, code: c)")
    }

    @Test("blank data, other event types and comments are ignored")
    func ignored() throws {
        var decoder = ChatStreamDecoder()
        let text = ": ping\n\ndata:\n\ndata:  \n\nevent: ping\ndata: {}\n\nevent: message\ndata: {}\n\ndata: [DONE]\n\n"
        #expect(try decoder.feed(Array(text.utf8)) == [try chunk("{}"), .done])
        #expect(decoder.commentCount == 1)
    }

    @Test("an over-long line is an event-stream error")
    func lineTooLong() throws {
        var decoder = ChatStreamDecoder(maximumLineLength: 32)
        #expect(throws: ChatStreamError.eventStream(.lineTooLong)) {
            try decoder.feed(Array("data: {\"choices\":[{\"delta\":{\"content\":\"0123456789\"}}]}\n\n".utf8))
        }
        #expect(throws: ChatStreamError.eventStream(.lineTooLong)) { try decoder.finish() }
        #expect(String(describing: ChatStreamError.eventStream(.lineTooLong)) == "event-stream line too long")
        #expect(String(describing: ChatStreamError.truncated) == "stream ended before [DONE]")
    }
}
