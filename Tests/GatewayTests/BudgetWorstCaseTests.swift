import Testing

@testable import Gateway

/// What an `/api/process` body makes the budgets reserve beside its own bytes.
@Suite("Budgets: an /api/process request's worst case")
struct BudgetWorstCaseTests {
    @Test("a body may ask for JSON when it holds \"json\" or an escape that could spell it; never otherwise")
    func mayAskJSON() {
        for (body, expected) in [
            (#"{"task":"summarize","text":"…","format":"json"}"#, true),
            (#"{"format" : "json","task":"titles","text":"…"}"#, true),
            (#"{"task":"summarize","text":"…","format":"\u006Ason"}"#, true),
            // Quotes inside the text are escaped: no `"json"` among the body's bytes.
            (#"{"task":"summarize","text":"a json text, not \"json\" quoted"}"#, false),
            (#"{"task":"summarize","text":"the \"json\" word","format":"json"}"#, true),
            (#"{"task":"summarize","text":"a json text"}"#, false),
            (#"{"task":"summarize","text":"…","format":"text"}"#, false),
            (#"{"format":"jso"#, false),
            (#"\"#, false),
            ("", false),
        ] {
            #expect(BudgetMiddleware.mayAskJSON(Array(body.utf8)) == expected, "\(body)")
        }
    }
}
