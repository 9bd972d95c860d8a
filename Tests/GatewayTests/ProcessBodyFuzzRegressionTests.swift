@testable import Gateway
import Testing

/// Inputs the ProcessBody fuzz target (Fuzz/ProcessBodyFuzz) found.
@Suite("POST /api/process body: fuzz findings")
struct ProcessBodyFuzzRegressionTests {
    static let body = Array(#"{"task":"summarize","text":"this text is long enough to be processed"}"#.utf8)

    /// Found as the input 8e 3b 3b 61 70 70 6c 69 63 61 74 69 6f 6e 2f 6a 73 6f 6e 3b 2c:
    /// `split(separator: ";")` drops empty pieces, so the media type of `;application/json`
    /// was read as `application/json`. An empty media type is not JSON.
    @Test(
        "refuses a content type whose media type is empty",
        arguments: [";;application/json;,", ";application/json", "; application/json; charset=utf-8"]
    )
    func emptyMediaType(contentType: String) {
        #expect(!ProcessRequest.isJSON(contentType))
        #expect(throws: GatewayError.unsupportedMediaType) {
            try ProcessRequest.parse(body: Self.body, contentType: contentType)
        }
    }

    @Test(
        "still accepts application/json in any case, with or without parameters",
        arguments: ["application/json", "Application/JSON", "application/json;charset=utf-8", " application/json ; q=1"]
    )
    func jsonMediaType(contentType: String) throws {
        #expect(ProcessRequest.isJSON(contentType))
        #expect(try ProcessRequest.parse(body: Self.body, contentType: contentType).task == .summarize)
    }
}
