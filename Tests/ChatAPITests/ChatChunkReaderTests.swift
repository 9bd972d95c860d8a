import Testing

@testable import ChatAPI
@testable import JSON

@Suite("Reading a stream's chunk straight from its bytes")
struct ChatChunkReaderTests {
    /// Chunks as providers send them, and shapes at the edges: whatever the byte reader gives
    /// must be what `JSONDecoder` gives, and what it leaves, `JSONDecoder` decides.
    static let chunks: [String] = [
        #"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","syst"#
            + #"em_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logp"#
            + #"robs":null,"finish_reason":null}]}"#,
        #"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choi"#
            + #"ces":[{"index":0,"delta":{"content":"سلام \"دنیا\"\n\u0041\ud83d\ude00"},"finish_reason":n"#
            + #"ull}]}"#,
        #"{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        #"{"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17"#
            + #","prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0},"completion_tokens_details":"#
            + #"{"reasoning_tokens":0}}}"#,
        #"{"choices":null,"usage":null}"#,
        #"{}"#,
        #" {"choices":[{"delta":null}]} "#,
        #"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"#
            + #""f","arguments":"{\"a\":1}"}}]}}]}"#,
        #"{"choices":[{"index":0,"delta":{"tool_calls":null,"content":"x"}}]}"#,
        #"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":null}}]}"#,
        #"{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}"#,
        #"{"created":-5,"choices":[]}"#,
        #"{"created":0,"choices":[]}"#,
        #"{"created":-0,"choices":[]}"#,
        #"{"usage":{"total_tokens":123456789012345678},"choices":[]}"#,
        // Left to JSONDecoder: numbers of other spellings, repeated keys, escaped keys, parts, wrong types.
        #"{"created":1.0,"choices":[]}"#,
        #"{"created":1e3,"choices":[]}"#,
        #"{"created":01,"choices":[]}"#,
        #"{"created":99999999999999999999,"choices":[]}"#,
        #"{"id":"a","id":"b","choices":[]}"#,
        #"{"choices":[{"index":0,"index":1,"delta":{}}]}"#,
        #"{"\u0069d":"a","choices":[]}"#,
        #"{"choices":[{"delta":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}"#,
        #"{"choices":[{"delta":{"content":[{"type":"image_url","image_url":{}}]}}]}"#,
        #"{"model":3,"choices":[]}"#,
        #"{"choices":{}}"#,
        #"{"choices":[{"delta":"x"}]}"#,
        #"{"usage":{"prompt_tokens":"3"},"choices":[]}"#,
        #"{"usage":{"prompt_tokens_details":"none"},"choices":[]}"#,
        #"{"usage":{"prompt_tokens_details":{"cached_tokens":1.5}},"choices":[]}"#,
        // Not JSON, or not only JSON.
        #"{"choices":[]"#, #"{"choices":[]}x"#, #"{"id":"\ud800"}"#, #"{"id":"a\u0000"}"#, "[]", "\"text\"",
    ]

    @Test("a chunk read from its bytes is the chunk JSONDecoder reads", arguments: chunks)
    func sameAsJSONDecoder(text: String) throws {
        let bytes = Array(text.utf8)
        let decoded = try? JSON.decode(ChatCompletionChunk.self, from: bytes)
        let fast = bytes.withUnsafeBufferPointer { try? ChatCompletionReader.readChunk($0) }
        if let fast { #expect(fast == decoded, "\(text)") }
        // Through the stream's decoder, whichever way the chunk goes.
        let event = ServerSentEvent(event: nil, data: text, id: nil)
        switch Result(catching: { () throws(ChatStreamError) in try ChatStreamDecoder.interpret(event) }) {
        case .success(let item):
            #expect(item == decoded.map(ChatStreamEvent.chunk), "\(text)")
        case .failure(let error):
            #expect(decoded == nil, "\(text): \(error)")
            #expect(error == .malformedChunk(length: bytes.count))
        }
    }

    @Test("the chunks providers send are read without JSONDecoder")
    func usualShapesTakeTheFastWay() {
        for text in Self.chunks.prefix(15) {
            let read = Array(text.utf8).withUnsafeBufferPointer { try? ChatCompletionReader.readChunk($0) }
            #expect(read != nil, "\(text)")
        }
    }

    @Test(
        "an error object is an upstream error wherever its token lies; a chunk that only names it is a chunk",
        arguments: [
            (#"{"error":{"message":"rate limited","type":"rate_limit"}}"#, true),
            (#"  {"choices":[],"error":{"message":"late"}}"#, true),
            (#"{"choices":[{"delta":{"content":"the word \"error\""}}]}"#, false),
            (#"{"choices":[],"error":null}"#, false),
            (#"{"choices":[{"delta":{"content":"\"error"}}]}"#, false),
        ])
    func errorObjects(text: String, isError: Bool) throws {
        let event = ServerSentEvent(event: nil, data: text, id: nil)
        let result = Result(catching: { () throws(ChatStreamError) in try ChatStreamDecoder.interpret(event) })
        switch result {
        case .success(let item):
            #expect(!isError, "\(text)")
            #expect(
                item == (try? JSON.decode(ChatCompletionChunk.self, from: Array(text.utf8))).map(ChatStreamEvent.chunk))
        case .failure(let error):
            #expect(isError, "\(text): \(error)")
            guard case .upstreamError = error else {
                Issue.record("\(text): \(error)")
                return
            }
        }
    }
}
