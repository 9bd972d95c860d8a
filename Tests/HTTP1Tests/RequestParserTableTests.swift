import Testing

@testable import HTTP1

@Suite("RequestParser: table of requests fed in one piece")
struct RequestParserTableTests {
    @Test("accepts a valid request stream with the expected heads and bodies", arguments: RequestParserCases.valid)
    func acceptsValidRequests(_ testCase: ValidCase) {
        let outcome = ParserHarness.parse(testCase.bytes, limits: testCase.limits)
        #expect(outcome.error == nil)
        #expect(outcome.heads == testCase.heads)
        #expect(outcome.bodies == testCase.bodies)
        // Each request is head, at most one merged body, end.
        #expect(outcome.events.count(where: { $0 == .end }) == testCase.heads.count)
        #expect(outcome.events.last == .end)
    }

    @Test(
        "rejects a malformed or hostile request with the expected error and status",
        arguments: RequestParserCases.errors
    )
    func rejectsInvalidRequests(_ testCase: ErrorCase) {
        let outcome = ParserHarness.parse(testCase.bytes, limits: testCase.limits)
        #expect(outcome.error == testCase.error, "got \(outcome)")
        #expect(outcome.error?.status.code == testCase.status)
        #expect(outcome.events.count == testCase.eventsBeforeError, "got \(outcome)")
    }
}
