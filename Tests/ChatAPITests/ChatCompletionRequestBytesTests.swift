import ChatAPI
import JSON
import Testing

@Suite("ChatCompletionRequest written directly")
struct ChatCompletionRequestBytesTests {
    static let requests: [ChatCompletionRequest] = [
        ChatCompletionRequest(model: "m", messages: [ChatMessage(role: .user, content: "hi")]),
        ChatCompletionRequest(
            model: "mode\"l/1",
            messages: [
                ChatMessage(role: .system, content: "شما یک دستیار حرفه‌ای هستید.\nقواعد:\t«نقل»"),
                ChatMessage(role: .user, content: "<user_text>\n\u{1}\\ \"quoted\" 👨‍👩‍👧‍👦\n</user_text>", name: "ali"),
                ChatMessage(role: .assistant, content: nil),
            ],
            temperature: 0.7, topP: 1, maxTokens: 1200, maxCompletionTokens: 900, stream: true,
            streamOptions: .init(includeUsage: true), stop: .multiple(["\n\n", "END"]),
            presencePenalty: -0.5, frequencyPenalty: 1e-5, user: "u-1"
        ),
        ChatCompletionRequest(
            model: "m", messages: [ChatMessage(role: .tool, content: "")], temperature: 0.2,
            streamOptions: .init(includeUsage: nil), stop: .single("x")),
    ]

    @Test("is the same JSON document as the Codable encoding", arguments: requests)
    func sameAsCodable(request: ChatCompletionRequest) throws {
        let direct = String(decoding: request.jsonBytes(), as: UTF8.self)
        #expect(try JSONTree(parsing: direct) == JSONTree(encoding: request))
        #expect(try JSON.decode(ChatCompletionRequest.self, from: request.jsonBytes()) == request)
    }
}
