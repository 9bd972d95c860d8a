import ChatAPI
import JSON
import Testing

@Suite("JSON test helper and shared coders")
struct JSONValueTests {
    @Test("booleans, numbers and null are told apart")
    func scalarKinds() throws {
        let value = try JSONTree(parsing: #"{"t": true, "one": 1, "zero": 0, "n": null, "s": "1"}"#)
        #expect(
            value == .object(["t": .bool(true), "one": .number(1), "zero": .number(0), "n": .null, "s": .string("1")]))
    }

    @Test("the encoder leaves slashes and non-ASCII text unescaped")
    func encoderOutput() throws {
        let bytes = try JSON.encode(ChatMessage(role: .user, content: "a/b سلام"))
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("a/b سلام"))
    }

    @Test("decode throws on bytes that are not JSON")
    func decodeThrows() {
        #expect(throws: (any Error).self) { try ChatCompletion(jsonBytes: Array("nope".utf8)) }
        #expect(throws: (any Error).self) { try ChatCompletion(jsonBytes: []) }
    }
}
