import ChatAPI
import Testing

@Suite("A request body encoded once but for the user's text")
struct ChatRequestBodyTemplateTests {
    private static func request(_ text: String, system: String = "شما یک دستیار هستید.\nقواعد:\t«نقل» \\u0000")
        -> ChatCompletionRequest
    {
        ChatCompletionRequest(
            model: "m\"odel/1",
            messages: [
                ChatMessage(role: .system, content: system),
                ChatMessage(role: .user, content: "متن ورودی:\n\n<user_text>\n" + text + "\n</user_text>"),
            ],
            temperature: 0.2, maxTokens: 1200
        )
    }

    static let texts = [
        "", "x", "plain ASCII text", "شهرداری تهران اعلام کرد که ۱۲۰ دستگاه اتوبوس برقی",
        "\"quoted\" and \\backslashed\\", "\\u0000 written out", "tab\there, CR\r, LF\n, CRLF\r\n",
        "\u{1}\u{1F}\u{7F}", "a NUL \u{0} inside", "👨‍👩‍👧‍👦 e\u{301}",
        String(repeating: "long line with \"quotes\" ", count: 200),
    ]

    @Test("fills in the text byte for byte as the request's own encoding", arguments: texts)
    func sameBytes(text: String) throws {
        let template = try #require(ChatRequestBodyTemplate(Self.request(ChatRequestBodyTemplate.placeholder)))
        #expect(template.body(filling: text) == Self.request(text).jsonBytes())
    }

    @Test("is refused when the placeholder is missing or appears twice; written-out \\u0000 is not one")
    func placeholderOnce() {
        #expect(ChatRequestBodyTemplate(Self.request("no placeholder")) == nil)
        #expect(
            ChatRequestBodyTemplate(Self.request(ChatRequestBodyTemplate.placeholder, system: "a \u{0} NUL")) == nil)
        #expect(
            ChatRequestBodyTemplate(Self.request(ChatRequestBodyTemplate.placeholder, system: "\\u0000\\\\u0000"))
                != nil)
    }
}
