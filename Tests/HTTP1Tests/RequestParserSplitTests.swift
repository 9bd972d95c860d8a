import Testing

@testable import HTTP1

/// Every input must give the same events (bodies merged) and the same error however its
/// bytes are split across reads.
@Suite("RequestParser: same outcome at every byte split")
struct RequestParserSplitTests {
    /// Inputs up to this size are split at every position; larger ones at a stride.
    static let exhaustiveSplitLimit = 4096

    static func splitPositions(_ count: Int) -> [Int] {
        if count <= exhaustiveSplitLimit { return Array(0...count) }
        return Array(stride(from: 0, through: count, by: 61)) + [count - 2, count - 1, count].filter { $0 >= 0 }
    }

    @Test("valid inputs: every split and byte by byte equal a single feed", arguments: RequestParserCases.valid)
    func validInputs(_ testCase: ValidCase) {
        let whole = ParserHarness.parse(testCase.bytes, limits: testCase.limits)
        #expect(whole.error == nil)
        for index in Self.splitPositions(testCase.bytes.count) {
            let split = ParserHarness.parse(testCase.bytes, splitAt: index, limits: testCase.limits)
            #expect(split == whole, "split at \(index): \(split)")
            if split != whole { return }
        }
        #expect(ParserHarness.parseByteByByte(testCase.bytes, limits: testCase.limits) == whole)
    }

    @Test("error inputs: the same error and prior events at every split", arguments: RequestParserCases.errors)
    func errorInputs(_ testCase: ErrorCase) {
        let whole = ParserHarness.parse(testCase.bytes, limits: testCase.limits)
        #expect(whole.error == testCase.error)
        for index in Self.splitPositions(testCase.bytes.count) {
            let split = ParserHarness.parse(testCase.bytes, splitAt: index, limits: testCase.limits)
            #expect(split == whole, "split at \(index): \(split)")
            if split != whole { return }
        }
        #expect(ParserHarness.parseByteByByte(testCase.bytes, limits: testCase.limits) == whole)
    }

    @Test("all valid cases pipelined in one stream, split in three everywhere near the joins")
    func pipelinedValidCases() {
        let cases = RequestParserCases.valid.filter { $0.limits == RequestParser.Limits() }
        let stream = cases.flatMap(\.bytes)
        let whole = ParserHarness.parse(stream)
        #expect(whole.error == nil)
        #expect(whole.heads == cases.flatMap(\.heads))
        #expect(whole.bodies == cases.flatMap(\.bodies))
        for first in stride(from: 0, to: stream.count, by: 7) {
            let second = min(stream.count, first + 13)
            let pieces = [Array(stream[..<first]), Array(stream[first..<second]), Array(stream[second...])]
            #expect(ParserHarness.parse(pieces) == whole, "split at \(first), \(second)")
        }
        #expect(ParserHarness.parseByteByByte(stream) == whole)
    }
}
