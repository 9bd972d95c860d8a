import ChatAPI
import JSON
import Testing

@Suite("ChatCompletionRequest")
struct ChatCompletionRequestTests {
    private func decode(_ text: String) throws -> ChatCompletionRequest {
        try JSON.decode(ChatCompletionRequest.self, from: Array(text.utf8))
    }

    @Test("the gateway's upstream request encodes exactly as the contract shows, without nulls")
    func encodesContractBody() throws {
        let request = ChatCompletionRequest(
            model: "gpt-4o-mini",
            messages: [
                ChatMessage(role: .system, content: "شما یک دستیار هستید."),
                ChatMessage(role: .user, content: "متن ورودی:\n\n<user_text>\nسلام\n</user_text>"),
            ],
            temperature: 0.2,
            maxTokens: 1200
        )
        let expected = try JSONTree(
            parsing: #"""
                {"model": "gpt-4o-mini",
                 "messages": [{"role": "system", "content": "شما یک دستیار هستید."},
                              {"role": "user", "content": "متن ورودی:\n\n<user_text>\nسلام\n</user_text>"}],
                 "temperature": 0.2, "max_tokens": 1200}
                """#)
        #expect(try JSONTree(encoding: request) == expected)
        let text = String(decoding: try JSON.encode(request), as: UTF8.self)
        #expect(!text.contains("null"))
    }

    @Test("every field encodes under OpenAI's snake_case key")
    func encodesSnakeCase() throws {
        let request = ChatCompletionRequest(
            model: "m",
            messages: [ChatMessage(role: .user, content: "hi", name: "ali")],
            temperature: 0.7,
            topP: 0.9,
            maxTokens: 100,
            maxCompletionTokens: 90,
            stream: true,
            streamOptions: .init(includeUsage: true),
            stop: .multiple(["\n\n", "END"]),
            presencePenalty: 0.5,
            frequencyPenalty: -0.5,
            user: "u-1"
        )
        let expected = try JSONTree(
            parsing: #"""
                {"model": "m", "messages": [{"role": "user", "content": "hi", "name": "ali"}],
                 "temperature": 0.7, "top_p": 0.9, "max_tokens": 100, "max_completion_tokens": 90,
                 "stream": true, "stream_options": {"include_usage": true}, "stop": ["\n\n", "END"],
                 "presence_penalty": 0.5, "frequency_penalty": -0.5, "user": "u-1"}
                """#)
        #expect(try JSONTree(encoding: request) == expected)
        #expect(try JSON.decode(ChatCompletionRequest.self, from: JSON.encode(request)) == request)
    }

    @Test("a single stop string keeps its shape")
    func singleStop() throws {
        let request = ChatCompletionRequest(model: "m", messages: [], stop: .single("END"))
        #expect(
            try JSONTree(encoding: request) == (try JSONTree(parsing: #"{"model":"m","messages":[],"stop":"END"}"#)))
        #expect(try decode(#"{"model":"m","messages":[],"stop":"END"}"#).stop == .single("END"))
        #expect(try decode(#"{"model":"m","messages":[],"stop":["a","b"]}"#).stop?.sequences == ["a", "b"])
        #expect(try decode(#"{"model":"m","messages":[],"stop":null}"#).stop == nil)
    }

    @Test("decodes an OpenAI SDK request: content parts, null content, names, unknown fields")
    func decodesSDKRequest() throws {
        let request = try decode(
            #"""
            {"model": "gpt-4o", "n": 1, "tools": [], "logprobs": false, "temperature": null,
             "messages": [
               {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
               {"role": "user", "name": "sara", "content": [{"type": "text", "text": "line one"}, {"type": "text",\#
             "text": "line two"}]},
               {"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function"}]},
               {"role": "tool", "content": "42", "tool_call_id": "1"},
               {"role": "user", "content": ""}
             ],
             "stream": true, "stream_options": {"include_usage": true, "future_option": 1}}
            """#)
        #expect(request.model == "gpt-4o")
        #expect(request.temperature == nil)
        #expect(request.stream == true)
        #expect(request.streamOptions == .init(includeUsage: true))
        #expect(
            request.messages == [
                ChatMessage(role: .developer, content: "Be brief."),
                ChatMessage(role: .user, content: "line one\nline two", name: "sara"),
                ChatMessage(role: .assistant, content: nil),
                ChatMessage(role: .tool, content: "42"),
                ChatMessage(role: .user, content: ""),
            ])
        #expect(request.messages[1].role.rawValue == "user")
    }

    @Test("a message with a nil content encodes without the key")
    func nilContentOmitted() throws {
        #expect(
            try JSONTree(encoding: ChatMessage(role: .assistant, content: nil))
                == .object(["role": .string("assistant")]))
    }

    @Test(
        "requests without their required fields, or with non-text parts, fail",
        arguments: [
            #"{"messages": [{"role": "user", "content": "hi"}]}"#,
            #"{"model": "m"}"#,
            #"{"model": "m", "messages": [{"content": "hi"}]}"#,
            #"{"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url","#
                + #" "image_url": {"url": "https://x/y.png"}}]}]}"#,
            #"{"model": "m", "messages": [{"role": "user", "content": [{"type": "text"}]}]}"#,
            #"{"model": "m", "messages": [{"role": "user", "content": 5}]}"#,
            #"{"model": "m", "messages": [], "max_tokens": "100"}"#,
            #"{"model": "m", "messages": [], "stop": 3}"#,
            #"{"model": 1, "messages": []}"#,
        ])
    func rejects(json: String) {
        #expect(throws: (any Error).self) { try decode(json) }
    }
}
