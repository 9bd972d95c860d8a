import Testing

@testable import ChatAPI
@testable import JSON

@Suite("ChatCompletionPassThrough: a /v1 body passed through as it came")
struct ChatCompletionPassThroughTests {
    typealias Value = JSONValue

    static let messages = #""messages":[{"role":"user","content":"hi"}]"#

    static func read(_ body: String, maximumMessages: Int = 8) throws(ChatCompletionPassThroughError)
        -> ChatCompletionPassThrough
    {
        try ChatCompletionPassThrough(jsonBytes: Array(body.utf8), maximumMessages: maximumMessages)
    }

    static func written(_ body: String, model: String = "up", cap: Int = 1000, addUsage: Bool = false) throws -> String
    {
        String(decoding: try read(body).body(model: model, maxTokensCap: cap, addUsageOption: addUsage), as: UTF8.self)
    }

    /// Members the gateway does not read, each as a client's SDK spells it: they come out
    /// byte for byte, in place.
    static let untouched: [String] = [
        #""tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","#
            + #""parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"#
            + #""additionalProperties":false},"strict":true}}]"#,
        #""tool_choice":"auto""#,
        #""tool_choice":{"type":"function","function":{"name":"get_weather"}}"#,
        #""n":2"#,
        #""seed":18446744073709551615"#,
        #""seed":-9007199254740993"#,
        #""logprobs":true,"top_logprobs":3"#,
        #""logit_bias":{"50256":-100,"12345678901234567890":1.5e2}"#,
        #""response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"},"#
            + #""strict":true}}"#,
        #""parallel_tool_calls":false"#,
        #""temperature":1e-7"#,
        #""top_p":0.1"#,
        #""frequency_penalty":-0.000000000000000000001"#,
        #""presence_penalty":2.50E+0"#,
        #""stop":["\n\n","END"]"#,
        #""user":"u-\u00e9\/\"x\"""#,
        #""metadata":{"a":null,"b":[true,false,{}],"c":{ "spaced" : [ 1 , 2 ] }}"#,
        #""x_vendor_extension":{"deep":[[[["ok"]]]]}"#,
        #""stream":false"#,
        #""modalities":["text"],"audio":null,"store":true,"reasoning_effort":"low","service_tier":"auto","#
            + #""prediction":{"type":"content","content":"x"}"#,
    ]

    @Test("writes every member it does not rewrite exactly as it came", arguments: untouched)
    func untouchedMembers(member: String) throws {
        let body = #"{"model":"alias",\#(Self.messages),\#(member)}"#
        #expect(try Self.written(body) == #"{"model":"up",\#(Self.messages),\#(member),"max_tokens":1000}"#)
    }

    /// Histories an agent sends: tool calls, tool results, image and audio parts, names,
    /// refusals, content null, and roles the gateway does not know.
    static let histories: [String] = [
        #"[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":null,"#
            + #""tool_calls":[{"id":"call_abc123","type":"function","function":{"name":"get_weather","#
            + #""arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_abc123","#
            + #""content":"{\"celsius\":21.50}"}]"#,
        #"[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","#
            + #""image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"high"}}]}]"#,
        #"[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}]},"#
            + #"{"role":"assistant","refusal":"no","content":null}]"#,
        #"[{"role":"developer","content":"Be brief.","name":"ops"},{"role":"function","name":"f","content":"1"},"#
            + #"{"role":"some-new-role","content":""}]"#,
        #"[ { "role" : "user" , "content" : "spaced\u0020out" } ]"#,
    ]

    @Test("writes the history exactly as it came", arguments: histories)
    func history(history: String) throws {
        let body = #"{"messages":\#(history),"model":"alias"}"#
        #expect(try Self.written(body) == #"{"messages":\#(history),"model":"up","max_tokens":1000}"#)
    }

    @Test(
        "rewrites the model, caps the token limit as the gateway does, and merges include_usage when asked",
        arguments: [
            // (members after model and messages, cap, addUsage, expected members after them)
            ("", 1000, false, #","max_tokens":1000"#),
            (#","max_tokens":99999"#, 500, false, #","max_tokens":500"#),
            (#","max_tokens":10"#, 500, false, #","max_tokens":10"#),
            (#","max_tokens":0"#, 500, false, #","max_tokens":0"#),
            (#","max_tokens":1e3"#, 500, false, #","max_tokens":500"#),
            (#","max_tokens":null"#, 500, false, #","max_tokens":500"#),
            (#","max_completion_tokens":99999"#, 500, false, #","max_completion_tokens":500"#),
            (#","max_completion_tokens":20"#, 500, false, #","max_completion_tokens":20"#),
            (
                #","max_completion_tokens":20,"max_tokens":99999"#, 500, false,
                #","max_completion_tokens":20,"max_tokens":500"#
            ),
            (
                #","max_completion_tokens":20,"max_tokens":null"#, 500, false,
                #","max_completion_tokens":20,"max_tokens":null"#
            ),
            (#","max_completion_tokens":null"#, 500, false, #","max_completion_tokens":null,"max_tokens":500"#),
            (
                #","stream":true"#, 500, true,
                #","stream":true,"max_tokens":500,"stream_options":{"include_usage":true}"#
            ),
            (
                #","stream":true,"stream_options":{"include_usage":true}"#, 500, true,
                #","stream":true,"stream_options":{"include_usage":true},"max_tokens":500"#
            ),
            (
                #","stream":true,"stream_options":{"include_usage":false,"include_obfuscation":false}"#, 500, true,
                #","stream":true,"stream_options":{"include_obfuscation":false,"include_usage":true},"max_tokens":500"#
            ),
            (
                #","stream":true,"stream_options":{ "x" : [ 1 ] }"#, 500, true,
                #","stream":true,"stream_options":{"x":[ 1 ],"include_usage":true},"max_tokens":500"#
            ),
            (
                #","stream":true,"stream_options":null"#, 500, true,
                #","stream":true,"stream_options":{"include_usage":true},"max_tokens":500"#
            ),
            (
                #","stream_options":{"include_usage":false}"#, 500, false,
                #","stream_options":{"include_usage":false},"max_tokens":500"#
            ),
        ] as [(String, Int, Bool, String)]
    )
    func rewrites(members: String, cap: Int, addUsage: Bool, expected: String) throws {
        let body = #"{"model":"alias",\#(Self.messages)\#(members)}"#
        let written = try Self.written(body, cap: cap, addUsage: addUsage)
        #expect(written == #"{"model":"up",\#(Self.messages)\#(expected)}"#)
        #expect(throws: Never.self) { try Value.parse(Array(written.utf8)) }
    }

    @Test("writes the upstream model and the member names as JSON strings")
    func escaping() throws {
        let body = #"{"\u006dodel":"alias",\#(Self.messages),"t\u00e9st":1,"max_tokens":5}"#
        #expect(
            try Self.written(body, model: "up\"/\u{1}")
                == #"{"model":"up\"/\u0001",\#(Self.messages),"tést":1,"max_tokens":5}"#)
    }

    @Test("reads what the gateway needs: the alias, stream, include_usage and the token fields")
    func fields() throws {
        let plain = try Self.read(#"{"model":"fast",\#(Self.messages)}"#)
        #expect(plain.model == "fast")
        #expect(!plain.stream && !plain.includeUsage)
        #expect(plain.maxTokens == nil && plain.maxCompletionTokens == nil)
        let streamed = try Self.read(
            #"{"model":"fast",\#(Self.messages),"stream":true,"stream_options":{"include_usage":true},"max_tokens":7,"#
                + #""max_completion_tokens":9}"#
        )
        #expect(streamed.stream && streamed.includeUsage)
        #expect(streamed.maxTokens == 7 && streamed.maxCompletionTokens == 9)
        let nulls = try Self.read(
            #"{"model":"fast",\#(Self.messages),"stream":null,"stream_options":{"include_usage":null},"#
                + #""max_tokens":null}"#
        )
        #expect(!nulls.stream && !nulls.includeUsage && nulls.maxTokens == nil)
    }

    @Test(
        "refuses a body the gateway cannot pass through",
        arguments: [
            ("", .invalidJSON(JSONParseError(offset: 0, reason: "unexpected end"))),
            (#"["model"]"#, .notAnObject),
            (#""model""#, .notAnObject),
            (#"{"messages":[{"role":"user"}]}"#, .invalidField("model")),
            (#"{"model":7,"messages":[{"role":"user"}]}"#, .invalidField("model")),
            (#"{"model":null,"messages":[{"role":"user"}]}"#, .invalidField("model")),
            (#"{"model":"m"}"#, .invalidField("messages")),
            (#"{"model":"m","messages":{"role":"user"}}"#, .invalidField("messages")),
            (#"{"model":"m","messages":null}"#, .invalidField("messages")),
            (#"{"model":"m","messages":[]}"#, .messageCount(0)),
            (#"{"model":"m","messages":[{"role":"user"},{"role":"user"},{"role":"user"}]}"#, .messageCount(3)),
            (#"{"model":"m","messages":[{"role":"user"},"hi"]}"#, .invalidField("messages[1]")),
            (#"{"model":"m","messages":[[]]}"#, .invalidField("messages[0]")),
            (#"{"model":"m","messages":[{"content":"x"}]}"#, .invalidField("messages[0].role")),
            (#"{"model":"m","messages":[{"role":"user"},{"role":1}]}"#, .invalidField("messages[1].role")),
            (#"{"model":"m","messages":[{"role":null}]}"#, .invalidField("messages[0].role")),
            (#"{"model":"m","messages":[{"role":"user"}],"stream":"true"}"#, .invalidField("stream")),
            (#"{"model":"m","messages":[{"role":"user"}],"stream":1}"#, .invalidField("stream")),
            (#"{"model":"m","messages":[{"role":"user"}],"max_tokens":"5"}"#, .invalidField("max_tokens")),
            (#"{"model":"m","messages":[{"role":"user"}],"max_tokens":1.5}"#, .invalidField("max_tokens")),
            (#"{"model":"m","messages":[{"role":"user"}],"max_tokens":-1}"#, .invalidField("max_tokens")),
            (#"{"model":"m","messages":[{"role":"user"}],"max_tokens":1e300}"#, .invalidField("max_tokens")),
            (
                #"{"model":"m","messages":[{"role":"user"}],"max_completion_tokens":-3}"#,
                .invalidField("max_completion_tokens")
            ),
            (
                #"{"model":"m","messages":[{"role":"user"}],"max_completion_tokens":true}"#,
                .invalidField("max_completion_tokens")
            ),
            (#"{"model":"m","messages":[{"role":"user"}],"stream_options":true}"#, .invalidField("stream_options")),
            (
                #"{"model":"m","messages":[{"role":"user"}],"stream_options":{"include_usage":"yes"}}"#,
                .invalidField("stream_options.include_usage")
            ),
        ] as [(String, ChatCompletionPassThroughError)]
    )
    func refused(body: String, expected: ChatCompletionPassThroughError) {
        #expect(throws: expected) { try Self.read(body, maximumMessages: 2) }
    }

    @Test(
        "refuses what is not I-JSON anywhere in the body, as the rest of the gateway does",
        arguments: [
            #"{"model":"m""#,
            #"{"model":"m","model":"n","messages":[{"role":"user"}]}"#,
            #"{"model":"m","m\u006fdel":"n","messages":[{"role":"user"}]}"#,
            #"{"model":"m","messages":[{"role":"user","role":"system"}]}"#,
            #"{"model":"m","messages":[{"role":"user","content":[{"type":"text","type":"image_url"}]}]}"#,
            #"{"model":"m","messages":[{"role":"user","content":"x\ud800"}]}"#,
            #"{"model":"m","messages":[{"role":"user"}],"tools":[{"a":1,"a":2}]}"#,
            #"{"model":"m","messages":[{"role":"user"}],"n":01}"#,
            #"{"model":"m","messages":[{"role":"user"}]} x"#,
            #"{"model":"m","messages":[{"role":"user"},]}"#,
            "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\u{1}\"}]}",
        ]
    )
    func notIJSON(body: String) {
        #expect {
            try Self.read(body)
        } throws: { error in
            guard case .invalidJSON? = error as? ChatCompletionPassThroughError else { return false }
            return true
        }
    }

    @Test("refuses invalid UTF-8 in a member name or a string")
    func invalidUTF8() {
        let prefix = Array(#"{"model":"m","messages":[{"role":"user"}],""#.utf8)
        for bytes in [
            prefix + [0xFF] + Array(#"":1}"#.utf8),
            Array(#"{"model":"m","messages":[{"role":"user","c"#.utf8) + [0xC0, 0x80] + Array(#"":1}]}"#.utf8),
        ] {
            #expect {
                try ChatCompletionPassThrough(jsonBytes: bytes, maximumMessages: 8)
            } throws: { error in
                guard case .invalidJSON? = error as? ChatCompletionPassThroughError else { return false }
                return true
            }
        }
    }

    @Test("refuses a body nested past the client depth")
    func depth() {
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect {
            try Self.read(#"{"model":"m","messages":[{"role":"user"}],"x":\#(deep)}"#)
        } throws: { error in
            guard case .invalidJSON? = error as? ChatCompletionPassThroughError else { return false }
            return true
        }
    }

    @Test("agrees with the whole parse on 10,000 generated bodies, broken ones included, and writes what it read")
    func agreesWithTheWholeParse() throws {
        let keys = [
            #""model""#, #""messages""#, #""stream""#, #""max_tokens""#, #""max_completion_tokens""#,
            #""stream_options""#,
            #""tools""#, #""n""#, #""m\u006fdel""#, #""x""#, "\"\u{E9}\"",
        ]
        let values = [
            #""alias""#, #"[{"role":"user","content":"hi"}]"#,
            #"[{"role":"tool","tool_call_id":"c","content":[{"type":"image_url","image_url":{"url":"u"}}]}]"#,
            #"[]"#, #"[{"content":"x"}]"#, #"[1]"#, "true", "null", "12", "-3", "1.5", "1e-7", "18446744073709551615",
            #"{"include_usage":true}"#,
            #"{"include_usage":"x","o":[1]}"#, #"{"a":1,"a":2}"#, #""\ud800""#, #"[[[[{"k":"v"}]]]]"#, #""a\"b\u00e9""#,
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<10_000 {
            var members: [String] = []
            for _ in 0..<Int.random(in: 0...6, using: &generator) {
                members.append(keys.randomElement(using: &generator)! + ":" + values.randomElement(using: &generator)!)
            }
            if Bool.random(using: &generator) {
                members.insert(#""model":"alias","messages":[{"role":"user"}]"#, at: 0)
            }
            let text =
                Int.random(in: 0..<20, using: &generator) == 0
                ? values.randomElement(using: &generator)! : "{" + members.joined(separator: ",") + "}"
            var bytes = Array(text.utf8)
            if Int.random(in: 0..<6, using: &generator) == 0, !bytes.isEmpty {
                let at = Int.random(in: 0..<bytes.count, using: &generator)
                if Bool.random(using: &generator) {
                    bytes.removeSubrange(at...)
                } else {
                    bytes.insert(UInt8.random(in: 0...0xFF, using: &generator), at: at)
                }
            }
            let shown = String(decoding: bytes, as: UTF8.self)
            let whole = try? Value.parse(bytes, maximumDepth: 512)
            let read = Result { () throws(ChatCompletionPassThroughError) in
                try ChatCompletionPassThrough(jsonBytes: bytes, maximumMessages: 8)
            }
            switch (whole, read) {
            case (nil, .failure(.invalidJSON)): break
            case (.object(var object)?, .success(let chat)):
                let written = chat.body(model: "up", maxTokensCap: 100, addUsageOption: false)
                object["model"] = .string("up")
                if let asked = object["max_completion_tokens"]?.intValue {
                    object["max_completion_tokens"] = .number(Double(min(asked, 100)))
                }
                if let asked = object["max_tokens"]?.intValue {
                    object["max_tokens"] = .number(Double(min(asked, 100)))
                } else if chat.maxCompletionTokens == nil {
                    object["max_tokens"] = .number(100)
                }
                #expect(try Value.parse(written) == .object(object), "\(shown)")
            case (.object?, .failure(let error)):
                if case .invalidJSON = error { Issue.record("valid JSON refused as invalid: \(shown)") }
                if case .notAnObject = error { Issue.record("an object read as not one: \(shown)") }
            case (_?, .failure(.notAnObject)): break
            default:
                Issue.record("the whole parse gave \(String(describing: whole)), the pass-through \(read): \(shown)")
            }
        }
    }
}
