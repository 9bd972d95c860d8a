import Testing

@testable import Gateway

/// Inputs the ProcessBody fuzz target (Fuzz/ProcessBodyFuzz) found.
@Suite("POST /api/process body: fuzz findings")
struct ProcessBodyFuzzRegressionTests {
    static let body = Array(#"{"task":"summarize","text":"this text is long enough to be processed"}"#.utf8)

    /// `contentType` is not JSON, and a body sent with it is refused with 415.
    private func expectRefused(_ contentType: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!ProcessRequest.isJSON(contentType), sourceLocation: sourceLocation)
        #expect(throws: GatewayError.unsupportedMediaType, sourceLocation: sourceLocation) {
            try ProcessRequest.parse(body: Self.body, contentType: contentType)
        }
    }

    /// Found as the input 8e 3b 3b 61 70 70 6c 69 63 61 74 69 6f 6e 2f 6a 73 6f 6e 3b 2c:
    /// `split(separator: ";")` drops empty pieces, so the media type of `;application/json`
    /// was read as `application/json`. An empty media type is not JSON.
    @Test(
        "refuses a content type whose media type is empty",
        arguments: [";;application/json;,", ";application/json", "; application/json; charset=utf-8"]
    )
    func emptyMediaType(contentType: String) {
        expectRefused(contentType)
    }

    /// Found as the input ff 61 70 70 6c 69 63 61 74 69 6f 6e 2f 6a 73 6f 6e cd be cd be 73 65
    /// 66 61 6c 73 65 (10 M runs after 2d82df1): U+037E GREEK QUESTION MARK is canonically
    /// equivalent to `;`, and the media type was cut at `Character`s, so
    /// `application/json\u{37E}\u{37E}sefalse` read as `application/json` with parameters.
    @Test(
        "refuses a media type followed by a canonical equivalent of ';' instead of ';'",
        arguments: [
            "application/json\u{37E}\u{37E}sefalse", "application/json\u{37E} charset=utf-8", "application/json\u{37E}",
        ]
    )
    func canonicalSemicolon(contentType: String) {
        expectRefused(contentType)
    }

    @Test("reads Accept and Accept-Language by bytes too")
    func otherHeaders() {
        #expect(ProcessRoute.acceptsEventStream("text/event-stream"))
        #expect(ProcessRoute.acceptsEventStream("application/json, Text/Event-Stream;q=0.5"))
        #expect(!ProcessRoute.acceptsEventStream("text/event-stream\u{37E}q=1"))
        #expect(Language(acceptLanguage: "en\u{37E}q=1") == .persian)
        #expect(Language(acceptLanguage: "fa;q=0.5, en-US;q=0.9") == .english)
        #expect(Language(acceptLanguage: "en;q\u{37E}0, fa;q=0.1") == .english) // a weight without `=`: 1
    }

    @Test(
        "still accepts application/json in any case, with or without parameters",
        arguments: [
            "application/json", "Application/JSON", "application/json;charset=utf-8", " application/json ; q=1",
        ]
    )
    func jsonMediaType(contentType: String) throws {
        #expect(ProcessRequest.isJSON(contentType))
        #expect(try ProcessRequest.parse(body: Self.body, contentType: contentType).task == .summarize)
    }
}
