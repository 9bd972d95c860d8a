import Testing

@testable import ChatAPI
@testable import JSON

@Suite("Reading a completion straight from its bytes")
struct ChatCompletionReaderTests {
    @Test("reads a typical answer, unknown members included, without the general reading")
    func typicalAnswer() throws {
        let text = #"""
            {"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m","system_fingerprint":null,
             "choices":[{"index":0,"message":{"role":"assistant","content":"سلام \"دنیا\"\n","refusal":null,\#
            "annotations":[]},
                         "logprobs":null,"finish_reason":"stop"}],
             "usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,\#
            "prompt_tokens_details":{"cached_tokens":0}},
             "service_tier":"default"}
            """#
        let completion = try ChatCompletionReader.read(Array(text.utf8))
        #expect(
            completion
                == ChatCompletion(
                    id: "chatcmpl-1", created: 1_700_000_000, model: "m",
                    choices: [
                        .init(
                            index: 0, message: .init(role: .assistant, content: "سلام \"دنیا\"\n"), finishReason: "stop"
                        )
                    ],
                    usage: Usage(promptTokens: 12, completionTokens: 5, totalTokens: 17, cachedPromptTokens: 0)
                ))
        #expect(try ChatCompletion(jsonValueBytes: Array(text.utf8)) == completion)
    }

    @Test(
        "reads the prompt's cached tokens as the general reading does; details of another shape are no cached count",
        arguments: [
            (#"{"prompt_tokens":100,"prompt_tokens_details":{"cached_tokens":60,"audio_tokens":0}}"#, 60 as Int?),
            (#"{"prompt_tokens":100,"prompt_tokens_details":{"cached_tokens":null}}"#, nil),
            (#"{"prompt_tokens":100,"prompt_tokens_details":null}"#, nil),
            (#"{"prompt_tokens":100,"prompt_tokens_details":{}}"#, nil),
            (#"{"prompt_tokens":100,"prompt_tokens_details":"none"}"#, nil),
            (#"{"prompt_tokens":100,"prompt_tokens_details":{"cached_tokens":"60"}}"#, nil),
            (#"{"prompt_tokens":100,"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}"#, 2),
        ])
    func cachedTokens(usage: String, cached: Int?) throws {
        let bytes = Array(#"{"choices":[],"usage":\#(usage)}"#.utf8)
        let general = try ChatCompletion(jsonValueBytes: bytes)
        #expect(general.usage?.promptTokens == 100)
        #expect(general.usage?.cachedPromptTokens == cached)
        if let fast = try? ChatCompletionReader.read(bytes) { #expect(fast == general) }
        // A stream's usage chunk is decoded through Codable (which refuses a repeated key): the same count.
        guard !usage.contains(#""cached_tokens":1,"#) else { return }
        let chunk = try JSON.decode(ChatCompletionChunk.self, from: Array(#"{"choices":[],"usage":\#(usage)}"#.utf8))
        #expect(chunk.usage?.cachedPromptTokens == cached)
    }

    @Test(
        "leaves escaped keys, other types and content parts to the general reading",
        arguments: [
            #"{"\u0069d":"a"}"#, #"{"id":"a","id":1}"#, #"{"id":1,"id":"a"}"#, #"{"created":1.5}"#, #"{"model":3}"#,
            #"{"choices":[{"message":{"content":[{"type":"text","text":"x"}]}}]}"#, #"{"choices":{}}"#, #"[]"#,
        ]
    )
    func unhandledShapes(text: String) {
        #expect(throws: ChatCompletionReader.Failure.unhandled) { try ChatCompletionReader.read(Array(text.utf8)) }
    }

    @Test("keeps the last of a repeated key, as the general reading does")
    func repeatedKeys() throws {
        let text = #"{"id":"a","usage":{"total_tokens":1,"total_tokens":2},"id":"b","choices":[{"index":1,"index":2}]}"#
        let completion = try ChatCompletionReader.read(Array(text.utf8))
        #expect(completion.id == "b")
        #expect(completion.usage?.totalTokens == 2)
        #expect(completion.choices.first?.index == 2)
        #expect(try ChatCompletion(jsonValueBytes: Array(text.utf8)) == completion)
    }

    @Test("gives the general reading's result on 20,000 generated documents, broken ones included")
    func agreesWithTheGeneralReading() {
        var generator = SystemRandomNumberGenerator()
        var fastPathTaken = 0
        for _ in 0..<20_000 {
            var document = Array(DocumentMaker().completion().utf8)
            if Int.random(in: 0..<8, using: &generator) == 0, !document.isEmpty { // truncated or with a stray byte
                let at = Int.random(in: 0..<document.count, using: &generator)
                if Bool.random(using: &generator) {
                    document.removeSubrange(at...)
                } else {
                    document.insert(UInt8.random(in: 0...0xFF, using: &generator), at: at)
                }
            }
            let fast = try? ChatCompletion(jsonBytes: document)
            let general = try? ChatCompletion(jsonValueBytes: document)
            #expect(fast == general, "\(String(decoding: document, as: UTF8.self))")
            if (try? ChatCompletionReader.read(document)) != nil { fastPathTaken += 1 }
        }
        #expect(fastPathTaken > 2_000) // the generator mostly makes shapes the fast reading takes
    }
}

/// Random chat-completion-like JSON: the right types mostly, sometimes others, repeated and
/// escaped keys, unknown members, nulls and whitespace.
private final class DocumentMaker {
    var generator = SystemRandomNumberGenerator()

    func chance(_ oneIn: Int) -> Bool { Int.random(in: 0..<oneIn, using: &generator) == 0 }
    func space() -> String { chance(4) ? [" ", "\n", "\t ", "\r\n"].randomElement(using: &generator)! : "" }

    func string() -> String {
        [#""a""#, #""""#, #""chat.completion""#, #""سلام""#, #""q\"uote\n""#, #""\u00e9\ud83d\ude00""#, #""stop""#]
            .randomElement(using: &generator)!
    }

    func number() -> String {
        ["0", "7", "-3", "1700000000", "1.5", "2e3", "1e20", "-0", "123456789012345678"].randomElement(
            using: &generator)!
    }

    func anyValue(depth: Int = 0) -> String {
        switch Int.random(in: 0..<7, using: &generator) {
        case 0: return "null"
        case 1: return Bool.random(using: &generator) ? "true" : "false"
        case 2: return number()
        case 3 where depth < 3:
            return "["
                + (0..<Int.random(in: 0...2, using: &generator)).map { _ in anyValue(depth: depth + 1) }.joined(
                    separator: ",") + "]"
        case 4 where depth < 3: return "{" + space() + #""k":"# + anyValue(depth: depth + 1) + "}"
        default: return string()
        }
    }

    /// The expected kind most of the time, anything sometimes.
    func value(_ expected: () -> String) -> String {
        chance(10) ? anyValue() : chance(6) ? "null" : expected()
    }

    func object(_ members: [(String, () -> String)]) -> String {
        var fields: [String] = []
        for (key, makeValue) in members where !chance(5) {
            var name = key
            // the same key, escaped
            if chance(40) { name = "\\u00" + String(key.utf8.first!, radix: 16) + key.dropFirst() }
            fields.append(space() + "\"" + name + "\"" + space() + ":" + space() + makeValue() + space())
            if chance(30) { fields.append("\"" + key + "\":" + makeValue()) } // repeated
        }
        if chance(3) {
            fields.insert(#""extra":"# + anyValue(), at: Int.random(in: 0...fields.count, using: &generator))
        }
        fields.shuffle(using: &generator)
        return "{" + fields.joined(separator: ",") + "}"
    }

    func completion() -> String {
        if chance(50) { return anyValue() }
        return object([
            ("id", { self.value { self.string() } }),
            ("object", { self.value { self.string() } }),
            ("created", { self.value { self.number() } }),
            ("model", { self.value { self.string() } }),
            (
                "choices",
                {
                    self.value {
                        "[" + (0..<Int.random(in: 0...2)).map { _ in self.choice() }.joined(separator: ",") + "]"
                    }
                }
            ),
            ("usage", { self.value { self.usage() } }),
        ])
    }

    func choice() -> String {
        return object([
            ("index", { self.value { self.number() } }),
            ("finish_reason", { self.value { self.string() } }),
            ("message", { self.value { self.message() } }),
        ])
    }

    func message() -> String {
        return object([
            ("role", { self.value { self.string() } }),
            (
                "content",
                { self.value { self.chance(5) ? #"[{"type":"text","text":"a"},{"text":"b"}]"# : self.string() } }
            ),
        ])
    }

    func usage() -> String {
        return object([
            ("prompt_tokens", { self.value { self.number() } }),
            ("completion_tokens", { self.value { self.number() } }),
            ("total_tokens", { self.value { self.number() } }),
        ])
    }
}
