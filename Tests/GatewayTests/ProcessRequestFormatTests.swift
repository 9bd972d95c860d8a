import Testing

@testable import Gateway
@testable import TextTasks

/// `format` in the `POST /api/process` body.
@Suite("POST /api/process body: format")
struct ProcessRequestFormatTests {
    static func parse(_ rest: String, task: String = "summarize", text: String = ProcessRequestTests.text)
        throws(GatewayError) -> ProcessRequest
    {
        try ProcessRequest.parse(
            body: Array((#"{"task":"\#(task)","text":"\#(text)""# + rest + "}").utf8), contentType: "application/json")
    }

    @Test(
        "reads format: absent, null and text are text, json is json",
        arguments: [
            ("", OutputFormat.text), (#","format":null"#, .text), (#","format":"text""#, .text),
            (#","format":"json""#, .json),
        ]
    )
    func formats(rest: String, expected: OutputFormat) throws {
        #expect(try Self.parse(rest).format == expected)
    }

    @Test(
        "refuses a format string it does not know as invalid_format",
        arguments: [#""xml""#, #""JSON""#, #""""#, #"" json""#, #""json_schema""#])
    func unknown(format: String) {
        #expect(throws: GatewayError.invalidFormat) { try Self.parse(#","format":"# + format) }
    }

    @Test(
        "refuses a format of the wrong type as invalid_json",
        arguments: ["5", "true", #"["json"]"#, #"{"type":"json"}"#])
    func wrongType(format: String) {
        #expect(throws: GatewayError.invalidJSON) { try Self.parse(#","format":"# + format) }
    }

    @Test("checks the format after the task and the tone, before the text's length")
    func order() {
        #expect(throws: GatewayError.invalidTask) { try Self.parse(#","format":"xml""#, task: "translate") }
        #expect(throws: GatewayError.invalidTone) { try Self.parse(#","tone":"angry","format":"xml""#) }
        #expect(throws: GatewayError.invalidFormat) { try Self.parse(#","format":"xml""#, text: "کوتاه") }
    }

    @Test("says invalid_format in Persian and in English")
    func messages() {
        #expect(GatewayError.invalidFormat.status.code == 400)
        #expect(GatewayError.invalidFormat.message(.persian) == "قالب پاسخ معتبر نیست.")
        #expect(GatewayError.invalidFormat.message(.english) == "The response format is not valid.")
        #expect(GatewayError.invalidModelOutput.status.code == 502)
        #expect(GatewayError.invalidModelOutput.code == .invalidModelOutput)
        #expect(
            GatewayError.invalidModelOutput.message(.english)
                == "The model's answer did not match the requested format.")
    }
}
