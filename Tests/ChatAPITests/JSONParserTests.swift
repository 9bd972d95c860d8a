import Testing

@testable import ChatAPI
@testable import JSON

@Suite("JSONValue parser")
struct JSONParserTests {
    typealias Value = JSONValue

    @Test(
        "parses valid documents",
        arguments: [
            (
                #"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
                Value.object([
                    "a": .number(1), "b": .array([.bool(true), .bool(false), .null]), "c": .object(["d": .string("e")]),
                ])
            ),
            (#" [ -0 , 1.5e3 , 0.1 , 2E-2 ] "#, .array([.number(0), .number(1500), .number(0.1), .number(0.02)])),
            (#""\u00e9\ud83d\ude00\n\t\"\\\/""#, .string("é😀\n\t\"\\/")),
            (#""سلام \u200c دنیا""#, .string("سلام \u{200C} دنیا")),
            ("{}", .object([:])),
            ("[]", .array([])),
            ("\"\"", .string("")),
        ]
    )
    func valid(text: String, expected: Value) throws {
        #expect(try Value.parse(Array(text.utf8)) == expected)
    }

    @Test(
        "refuses invalid documents",
        arguments: [
            "", " ", "[1,]", "{\"a\":1,}", "01", "+1", ".5", "1.", "-", "1e", "tru", "nul", "'a'", "{a:1}", "[1 2]",
            "\"a", "\"\u{1}\"", "\"\\x\"", "\"\\u12\"", "{\"a\"}", "{\"a\":}", "[1]]", "1 2", "NaN", "Infinity",
            "1e999",
        ]
    )
    func invalid(text: String) {
        #expect(throws: JSONParseError.self) { try Value.parse(Array(text.utf8)) }
    }

    @Test("reads whole numbers of every length as the text-to-double conversion does")
    func wholeNumbers() throws {
        var generator = SystemRandomNumberGenerator()
        for digits in 1...20 {
            for _ in 0..<200 {
                var text = Bool.random(using: &generator) ? "-" : ""
                text += String(Int.random(in: 1...9, using: &generator))
                for _ in 1..<digits { text += String(Int.random(in: 0...9, using: &generator)) }
                let parsed = try Value.parse(Array(text.utf8))
                #expect(parsed == .number(try #require(Double(text))), "\(text)")
            }
        }
        #expect(try Value.parse(Array("-0".utf8)) == .number(-0.0))
        #expect(try Value.parse(Array("[0,7,-7]".utf8)) == .array([.number(0), .number(7), .number(-7)]))
    }

    @Test("reads chosen members and validates as the whole parse does, on 20,000 generated documents")
    func membersAgreeWithTheWholeParse() {
        let names: [StaticString] = ["task", "text", "tone", "stream"]
        // Repeated names, escaped spellings of a name and canonically equivalent names (U+212A
        // KELVIN SIGN is "K"; "é" and "e" with U+0301) among them.
        let keys = [
            #""task""#, #""text""#, #""tone""#, #""stream""#, #""other""#, #""t\u0061sk""#, #""\u00e9""#, "\"\u{E9}t\"",
            "\"k\u{FF}\"",
            #""K""#, #""\u212a""#, "\"\u{212A}\"", "\"e\u{301}\"", "\"\u{E9}\"",
        ]
        let values = [
            #""summarize""#, #""متن""#, "null", "true", "1.5", "[1,{\"a\":[]}]", #"{"task":"x"}"#, #""a\"b""#,
            "[[[[]]]]",
            #"{"a":1,"\u0061":2}"#, #""\ud800""#, #""\ud83d\ude00""#,
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            var members: [String] = []
            for _ in 0..<Int.random(in: 0...5, using: &generator) {
                members.append(
                    keys.randomElement(using: &generator)! + " : " + values.randomElement(using: &generator)!)
            }
            var text =
                Int.random(in: 0..<20, using: &generator) == 0
                ? values.randomElement(using: &generator)! : "{" + members.joined(separator: ",") + "} "
            var bytes = Array(text.utf8)
            if Int.random(in: 0..<6, using: &generator) == 0, !bytes.isEmpty {
                let at = Int.random(in: 0..<bytes.count, using: &generator)
                if Bool.random(using: &generator) {
                    bytes.removeSubrange(at...)
                } else {
                    bytes.insert(UInt8.random(in: 0...0xFF, using: &generator), at: at)
                }
            }
            text = String(decoding: bytes, as: UTF8.self)
            let whole = try? Value.parse(bytes, maximumDepth: 4)
            #expect(
                ((try? Value.validate(bytes, maximumDepth: 4)) != nil) == (whole != nil),
                "validate and parse disagree: \(text)")
            let chosen = Result { () throws(JSONParseError) in
                try Value.parseMembers(of: bytes, named: names, maximumDepth: 4)
            }
            switch (whole, chosen) {
            case (nil, .failure): break
            case (.object(let object)?, .success(let found?)):
                #expect(found == [object["task"], object["text"], object["tone"], object["stream"]], "\(text)")
            case (_?, .success(nil)):
                if case .object = whole { Issue.record("an object read as not one: \(text)") }
            default: Issue.record("the whole parse gave \(String(describing: whole)), the members \(chosen): \(text)")
            }
        }
    }

    @Test("refuses invalid UTF-8 and nesting past the limit")
    func limits() {
        #expect(throws: JSONParseError.self) { try Value.parse([0x22, 0xC3, 0x28, 0x22]) }
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONParseError.self) { try Value.parse(Array(deep.utf8)) }
        let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect((try? Value.parse(Array(fine.utf8))) != nil)
    }

    @Test(
        "reads completions from the bytes exactly as the general reading through JSONValue does",
        arguments: [
            #"{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"#
                + #""message":{"role":"assistant","content":"سلام"},"finish_reason":"stop"}],"#
                + #""usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7},"extra":{"deep":[1]}}"#,
            #"{"choices":[{"message":{"content":null}}]}"#,
            #"{"choices":null,"usage":null}"#,
            #"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"text":"b"}]}}]}"#,
            #"{}"#,
        ]
    )
    func completionShape(text: String) throws {
        let bytes = Array(text.utf8)
        #expect(try ChatCompletion(jsonBytes: bytes) == ChatCompletion(jsonValueBytes: bytes))
    }

    @Test(
        "refuses completions of the wrong shape, on the fast reading and the general one",
        arguments: [
            #"[]"#, #"{"choices":{}}"#, #"{"usage":{"prompt_tokens":"3"}}"#,
            #"{"choices":[{"message":{"content":[{"type":"image_url"}]}}]}"#,
            #"{"id":5}"#, #"<html>"#,
        ]
    )
    func completionWrongShape(text: String) {
        let bytes = Array(text.utf8)
        #expect(throws: JSONShapeError.self) { try ChatCompletion(jsonBytes: bytes) }
        #expect(throws: JSONShapeError.self) { try ChatCompletion(jsonValueBytes: bytes) }
    }
}
