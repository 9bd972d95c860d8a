import ChatAPI
import JSON
import Testing

/// `response_format` on ``ChatCompletionRequest`` and the ``ChatAPI/JSONTree`` it holds.
@Suite("response_format and JSONValue written back")
struct ResponseFormatTests {
    static let format: JSONValue = .object([
        "type": .string("json_schema"),
        "json_schema": .object([
            "name": .string("key-points"), "strict": .bool(true),
            "schema": .object([
                "type": .string("array"), "minItems": .number(1), "maxItems": .number(20), "x": .number(0.5),
                "n": .null,
            ]),
        ]),
    ])

    @Test("is written by jsonBytes() as the Codable encoding writes it, and decodes back")
    func requestRoundTrip() throws {
        let request = ChatCompletionRequest(
            model: "m", messages: [ChatMessage(role: .user, content: "hi")], user: "u", responseFormat: Self.format)
        let direct = String(decoding: request.jsonBytes(), as: UTF8.self)
        #expect(try JSONTree(parsing: direct) == JSONTree(encoding: request))
        #expect(
            direct.hasSuffix(
                #","user":"u","response_format":{"json_schema":{"name":"key-points","schema":{"maxItems":20,"#
                    + #""minItems":1,"n":null,"type":"array","x":0.5},"strict":true},"type":"json_schema"}}"#
            ))
        #expect(try JSON.decode(ChatCompletionRequest.self, from: request.jsonBytes()) == request)
        #expect(
            !String(decoding: ChatCompletionRequest(model: "m", messages: []).jsonBytes(), as: UTF8.self).contains(
                "response_format"))
        #expect(
            try JSON.decode(
                ChatCompletionRequest.self, from: Array(#"{"model":"m","messages":[],"response_format":null}"#.utf8)
            ).responseFormat == nil)
    }

    @Test(
        "writes a value as compact JSON, members by name, whole numbers without a fraction, and parses back to it",
        arguments: [
            (
                #"{"b":[1,2.5,-3,true,false,null],"a":"x\"\n","ب":{}}"#,
                #"{"a":"x\"\n","b":[1,2.5,-3,true,false,null],"ب":{}}"#
            ),
            ("[]", "[]"),
            (#""\u0001""#, #""\u0001""#),
            ("1e300", "1e+300"),
        ]
    )
    func writing(input: String, expected: String) throws {
        let value = try JSONValue.parse(Array(input.utf8))
        #expect(String(decoding: value.jsonBytes(), as: UTF8.self) == expected)
        #expect(try JSONValue.parse(value.jsonBytes()) == value)
        #expect(try JSON.decode(JSONValue.self, from: try JSON.encode(value)) == value)
    }
}
