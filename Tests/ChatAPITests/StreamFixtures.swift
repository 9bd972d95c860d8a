import ChatAPI
import JSON

/// A realistic OpenAI stream: role chunk, two text chunks (one with an escaped newline
/// and Persian text), a finish chunk, the usage chunk with `choices: []`, a heartbeat
/// comment and `[DONE]`.
enum StreamFixtures {
    static let chunkJSON: [String] = [
        #"{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini","#
            + #""system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":"","#
            + #""refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
        #"{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini","#
            + #""system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"سلام"},"logprobs":null,"#
            + #""finish_reason":null}],"usage":null}"#,
        #"{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini","#
            + #""system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":" دنیا!\nخط دوم"},"#
            + #""logprobs":null,"finish_reason":null}],"usage":null}"#,
        #"{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini","#
            + #""system_fingerprint":"fp_1","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"#
            + #""usage":null}"#,
        #"{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini","#
            + #""system_fingerprint":"fp_1","choices":[],"usage":{"prompt_tokens":141,"completion_tokens":37,"#
            + #""total_tokens":178,"prompt_tokens_details":{"cached_tokens":0}}}"#,
    ]

    /// The stream text with LF line breaks.
    static let text: String = {
        var text = ""
        for (index, json) in chunkJSON.enumerated() {
            if index == 2 { text += ": ping\n\n" }
            text += "data: \(json)\n\n"
        }
        return text + "data: [DONE]\n\n"
    }()

    /// The stream with every LF replaced by `lineBreak`.
    static func bytes(lineBreak: String = "\n") -> [UInt8] {
        Array(text.replacingLineFeeds(with: lineBreak).utf8)
    }

    /// The server-sent events the stream holds.
    static var events: [ServerSentEvent] {
        chunkJSON.map { ServerSentEvent(data: $0) } + [ServerSentEvent(data: "[DONE]")]
    }

    /// The chat stream events the stream holds.
    static func chatEvents() throws -> [ChatStreamEvent] {
        try chunkJSON.map { .chunk(try JSON.decode(ChatCompletionChunk.self, from: Array($0.utf8))) } + [.done]
    }
}

extension String {
    func replacingLineFeeds(with lineBreak: String) -> String {
        split(separator: "\n", omittingEmptySubsequences: false).joined(separator: lineBreak)
    }
}
