import ChatAPI
import JSON
import Testing

@Suite("ChatCompletion and ChatCompletionChunk decoding")
struct ChatCompletionTests {
    private func decode(_ text: String) throws -> ChatCompletion {
        try ChatCompletion(jsonBytes: Array(text.utf8))
    }

    private func decode<T: Decodable>(_ text: String) throws -> T {
        try JSON.decode(T.self, from: Array(text.utf8))
    }

    @Test("decodes a real OpenAI response with fields this module does not know")
    func realResponse() throws {
        let completion: ChatCompletion = try decode(
            #"""
            {
              "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
              "object": "chat.completion",
              "created": 1741569952,
              "model": "gpt-4o-2024-08-06",
              "choices": [
                {
                  "index": 0,
                  "message": {"role": "assistant", "content": "Hello! How can I assist you today?", "refusal": null,\#
             "annotations": []},
                  "logprobs": null,
                  "finish_reason": "stop"
                }
              ],
              "usage": {
                "prompt_tokens": 19,
                "completion_tokens": 10,
                "total_tokens": 29,
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "accepted_prediction_tokens": 0}
              },
              "service_tier": "default",
              "system_fingerprint": "fp_6ec83003ad"
            }
            """#)
        #expect(completion.id == "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT")
        #expect(completion.object == "chat.completion")
        #expect(completion.created == 1_741_569_952)
        #expect(completion.model == "gpt-4o-2024-08-06")
        #expect(completion.choices.count == 1)
        #expect(completion.choices[0].index == 0)
        #expect(completion.choices[0].message?.role == .assistant)
        #expect(completion.choices[0].finishReason == "stop")
        #expect(completion.firstContent == "Hello! How can I assist you today?")
        #expect(
            completion.usage == Usage(promptTokens: 19, completionTokens: 10, totalTokens: 29, cachedPromptTokens: 0))
    }

    @Test(
        "fields a compatible server omits decode as nil or empty",
        arguments: [
            (#"{"choices": [{"message": {"content": "hi"}}]}"#, "hi", false),
            (
                #"{"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],"#
                    + #" "usage": null}"#,
                "hi", false
            ),
            (
                #"{"choices": [{"message": {"role": "assistant", "content": null},"#
                    + #" "finish_reason": "content_filter"}]}"#,
                nil, false
            ),
            (#"{"choices": [{"message": {"role": "assistant"}}]}"#, nil, false),
            (#"{"choices": [{"finish_reason": "length"}]}"#, nil, false),
            (#"{"choices": []}"#, nil, false),
            (#"{"choices": null}"#, nil, false),
            (#"{}"#, nil, false),
            (
                #"{"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text","#
                    + #" "text": "b"}]}}]}"#,
                "a\nb", false
            ),
            (#"{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": 5}}"#, "x", true),
        ] as [(String, String?, Bool)])
    func tolerantDecoding(json: String, content: String?, hasUsage: Bool) throws {
        let completion: ChatCompletion = try decode(json)
        #expect(completion.firstContent == content)
        #expect((completion.usage != nil) == hasUsage)
    }

    @Test(
        "JSON of the wrong shape fails",
        arguments: [
            #"[]"#,
            #""text""#,
            #"{"choices": {}}"#,
            #"{"choices": [1]}"#,
            #"{"choices": [{"message": "hi"}]}"#,
            #"{"choices": [{"message": {"content": 5}}]}"#,
            #"{"usage": {"prompt_tokens": "12"}}"#,
            #"{"choices": [{"message": {"content": "hi"}}]"#,
        ])
    func wrongShapeFails(json: String) {
        #expect(throws: (any Error).self) { try ChatCompletion(jsonBytes: Array(json.utf8)) }
    }

    @Test("usage counts are each optional, and the total can be derived")
    func usage() throws {
        let partial: Usage = try decode(#"{"prompt_tokens": 7, "completion_tokens": 3}"#)
        #expect(partial == Usage(promptTokens: 7, completionTokens: 3, totalTokens: nil))
        #expect(partial.effectiveTotalTokens == 10)
        let reported: Usage = try decode(#"{"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 11}"#)
        #expect(reported.effectiveTotalTokens == 11)
        let empty: Usage = try decode(#"{}"#)
        #expect(empty == Usage(promptTokens: nil, completionTokens: nil, totalTokens: nil))
        #expect(empty.effectiveTotalTokens == nil)
        #expect(Usage(promptTokens: .max, completionTokens: 1, totalTokens: nil).effectiveTotalTokens == nil)
    }

    @Test("decodes real OpenAI stream chunks, including the usage chunk with no choices")
    func chunks() throws {
        let first: ChatCompletionChunk = try decode(
            #"""
            {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini",\#
            "service_tier":"default","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant",\#
            "content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}
            """#)
        #expect(first.choices.first?.delta == ChatCompletionChunk.Delta(role: .assistant, content: ""))
        #expect(first.choices.first?.finishReason == nil)
        #expect(first.usage == nil)

        let last: ChatCompletionChunk = try decode(
            #"""
            {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini",\#
            "choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}
            """#)
        #expect(last.choices.first?.finishReason == "stop")
        #expect(last.firstDeltaContent == nil)

        let usage: ChatCompletionChunk = try decode(
            #"""
            {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini",\#
            "choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21,\#
            "prompt_tokens_details":{"cached_tokens":0}}}
            """#)
        #expect(usage.choices.isEmpty)
        #expect(usage.usage?.totalTokens == 21)

        let bare: ChatCompletionChunk = try decode(#"{"choices":[{"index":0}]}"#)
        #expect(bare.choices.first?.delta == ChatCompletionChunk.Delta())
    }

    @Test(
        "a chunk carries output when any choice adds text or a tool call",
        arguments: [
            (
                #"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"#
                    + #""id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}"#,
                true
            ),
            (
                #"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}}]}"#,
                true
            ),
            (#"{"choices":[{"index":0,"delta":{"content":""}},{"index":1,"delta":{"content":"x"}}]}"#, true),
            (#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":null}}]}"#, false),
            (#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#, false),
            (#"{"choices":[],"usage":{"total_tokens":3}}"#, false),
        ] as [(String, Bool)]
    )
    func carriesOutput(text: String, expected: Bool) throws {
        let chunk: ChatCompletionChunk = try decode(text)
        #expect(chunk.carriesOutput == expected)
    }

    @Test("a completion encodes in OpenAI's shape and decodes back equal")
    func completionRoundTrip() throws {
        let completion = ChatCompletion(
            id: "chatcmpl-1",
            created: 1_700_000_000,
            model: "m",
            choices: [.init(message: .init(content: "متن / text"), finishReason: "stop")],
            usage: Usage(promptTokens: 1, completionTokens: 2, totalTokens: 3)
        )
        let json = try JSONTree(encoding: completion)
        #expect(
            json
                == (try JSONTree(
                    parsing: #"""
                        {"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m",
                         "choices":[{"index":0,"message":{"role":"assistant","content":"متن / text"},\#
                        "finish_reason":"stop"}],
                         "usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}
                        """#)))
        #expect(try ChatCompletion(jsonBytes: JSON.encode(completion)) == completion)
    }

    @Test("a chunk encodes delta always and finish_reason as null, and decodes back equal")
    func chunkRoundTrip() throws {
        let chunk = ChatCompletionChunk(id: "c", created: 1, model: "m", choices: [.init(delta: .init(content: "hi"))])
        #expect(
            try JSONTree(encoding: chunk)
                == (try JSONTree(
                    parsing: #"""
                        {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",
                         "choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}
                        """#)))
        #expect(try JSON.decode(ChatCompletionChunk.self, from: JSON.encode(chunk)) == chunk)

        let usageChunk = ChatCompletionChunk(
            id: "c", choices: [], usage: Usage(promptTokens: 1, completionTokens: 1, totalTokens: 2))
        #expect(
            try JSONTree(encoding: usageChunk)
                == (try JSONTree(
                    parsing: #"""
                        {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1,\#
                        "completion_tokens":1,"total_tokens":2}}
                        """#)))
    }
}
