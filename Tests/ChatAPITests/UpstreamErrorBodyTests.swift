import ChatAPI
import JSON
import Testing

@Suite("UpstreamErrorBody")
struct UpstreamErrorBodyTests {
    @Test(
        "reads the error shapes OpenAI-compatible servers send",
        arguments: [
            (
                #"{"error": {"message": "This model's maximum context length is 128000 tokens.","#
                    + #" "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}"#,
                UpstreamErrorBody(
                    message: "This model's maximum context length is 128000 tokens.", type: "invalid_request_error",
                    code: "context_length_exceeded", param: "messages")
            ),
            (
                #"{"error": {"message": "Rate limit reached", "type": "requests", "param": null, "code": null}}"#,
                UpstreamErrorBody(message: "Rate limit reached", type: "requests")
            ),
            (
                #"{"error": {"message": "Too many requests", "code": 429, "metadata": {"raw": "x"}}}"#,
                UpstreamErrorBody(message: "Too many requests", code: "429")
            ),
            (
                #"{"error": {"code": "invalid_api_key"}}"#,
                UpstreamErrorBody(message: nil, code: "invalid_api_key")
            ),
            (
                #"{"error": {"message": 42, "type": ["x"], "code": true, "param": {"a": 1}}}"#,
                UpstreamErrorBody(message: "42")
            ),
            (
                #"{"error": "Invalid model"}"#,
                UpstreamErrorBody(message: "Invalid model")
            ),
            (
                #"{"error": 503}"#,
                UpstreamErrorBody(message: "503")
            ),
            (
                #"{"error": ["weird"]}"#,
                UpstreamErrorBody(message: nil)
            ),
            (
                #"{"object": "error", "message": "The model `x` does not exist.", "type": "NotFoundError","#
                    + #" "param": null, "code": 404}"#,
                UpstreamErrorBody(message: "The model `x` does not exist.", type: "NotFoundError", code: "404")
            ),
        ])
    func decodes(json: String, expected: UpstreamErrorBody) {
        #expect(UpstreamErrorBody.decode(from: Array(json.utf8)) == expected)
    }

    @Test(
        "anything that is not an error body is nil, never a throw",
        arguments: [
            "",
            "not json",
            "<html><body>502 Bad Gateway</body></html>",
            "[]",
            "null",
            #""error""#,
            "{}",
            #"{"error": null}"#,
            #"{"object": "chat.completion", "choices": []}"#,
            #"{"error": {"message": "unterminated"#,
        ])
    func notAnErrorBody(text: String) {
        #expect(UpstreamErrorBody.decode(from: Array(text.utf8)) == nil)
    }

    @Test("invalid UTF-8 is nil")
    func invalidUTF8() {
        #expect(UpstreamErrorBody.decode(from: [0x7B, 0xFF, 0xFE, 0x7D]) == nil)
    }

    @Test("encodes OpenAI's nested shape with null for missing fields")
    func encodes() throws {
        let body = UpstreamErrorBody(message: "m", code: "c")
        #expect(
            try JSONTree(encoding: body)
                == (try JSONTree(parsing: #"{"error":{"message":"m","type":null,"param":null,"code":"c"}}"#)))
        #expect(UpstreamErrorBody.decode(from: try JSON.encode(body)) == body)
    }
}
