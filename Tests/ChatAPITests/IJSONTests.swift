import Testing

@testable import ChatAPI
@testable import JSON

/// What clients send is read as I-JSON (RFC 7493): a repeated member name or a lone surrogate
/// escape is an error, in the whole parse, in the members reading, in the validation and in
/// the decoding of a chat completions request.
@Suite("I-JSON: repeated names and lone surrogates")
struct IJSONTests {
    typealias Value = JSONValue

    /// Seventeen distinct members and more: past the names compared one by one.
    static func manyMembers(_ count: Int, then extra: String = "") -> String {
        "{" + (0..<count).map { #""m\#($0)":\#($0)"# }.joined(separator: ",") + extra + "}"
    }

    static let refused: [String] = [
        #"{"k":1,"k":2}"#,
        #"{"k":1,"k":1}"#,
        #"{"k":1,"other":true,"k":null}"#,
        #"{"task":"a","t\u0061sk":"b"}"#,
        #"{"\u0074ask":"a","task":"b"}"#,
        #"{"":1,"":2}"#,
        #"{"é":1,"\u00e9":2}"#,
        "{\"\u{E9}\":1,\"e\u{301}\":2}",
        #"{"K":1,"\u212a":2}"#,
        "{\"\u{212A}\":1,\"K\":2}",
        #"{"a":{"k":1,"k":2}}"#,
        #"[{"k":1,"k":2}]"#,
        #"{"a":[1,{"b":{"k":1,"k":2}}]}"#,
        manyMembers(16, then: #","m3":0"#),
        manyMembers(20, then: #","m19":0"#),
        manyMembers(40, then: #","m0":0"#),
        #""\ud800""#,
        #""\ud800x""#,
        #""\udbff""#,
        #""\udc00""#,
        #""\udfff\ud800""#,
        #""a\ud800\u0041""#,
        #""\ud800\ud800""#,
        #""\ud800\\udc00""#,
        #"{"\ud800":1}"#,
        #"{"k":["\udc00"]}"#,
    ]

    static let accepted: [String] = [
        #"{"k":1,"K":2}"#,
        #"{"a":{"k":1},"b":{"k":1}}"#,
        #"[{"k":1},{"k":2}]"#,
        #"{"k":{"k":{"k":1}}}"#,
        #"{"e":1,"é":2,"ê":3}"#,
        manyMembers(16),
        manyMembers(17),
        manyMembers(40),
        #""\ud83d\ude00""#,
        #""\uDBFF\uDFFF""#,
        #""\u0000""#,
        #""\ufffd""#,
    ]

    @Test("the whole parse refuses a repeated name or a lone surrogate", arguments: refused)
    func parseRefuses(text: String) {
        #expect(throws: JSONParseError.self) { try Value.parse(Array(text.utf8)) }
    }

    @Test(
        "the whole parse accepts distinct names, the same name in other objects, and surrogate pairs",
        arguments: accepted)
    func parseAccepts(text: String) throws {
        _ = try Value.parse(Array(text.utf8))
    }

    @Test("validation gives the whole parse's verdict", arguments: refused + accepted)
    func validateAgrees(text: String) {
        let bytes = Array(text.utf8)
        let parsed = (try? Value.parse(bytes)) != nil
        let validated = (try? Value.validate(bytes)) != nil
        #expect(parsed == validated)
    }

    @Test(
        "the members reading refuses any name repeated at the top level, known or not, and repeats inside values",
        arguments: [
            #"{"task":"a","text":"b","task":"c"}"#,
            #"{"text":"b","t\u0065xt":"c"}"#,
            #"{"stream":true,"stream":false}"#,
            #"{"task":"a","other":1,"other":2}"#,
            #"{"K":1,"\u212a":2}"#,
            #"{"task":"a","meta":{"x":1,"x":2}}"#,
            #"{"task":"a","list":[{"x":1,"x":2}]}"#,
            #"{"tone":{"x":1,"x":2}}"#,
            #"{"task":"\ud800"}"#,
            #"{"other":"\udc00"}"#,
            manyMembers(30, then: #","m7":0"#),
            manyMembers(30, then: #","task":1,"task":2"#),
        ]
    )
    func membersRefuse(text: String) {
        #expect(throws: JSONParseError.self) {
            try Value.parseMembers(of: Array(text.utf8), named: ["task", "text", "tone", "stream"])
        }
    }

    @Test("the members reading finds its names among many distinct members")
    func membersAmongMany() throws {
        let members = try Value.parseMembers(
            of: Array(Self.manyMembers(30, then: #","task":"x""#).utf8), named: ["task", "m29"])
        #expect(members == [.string("x"), .number(29)])
    }

    @Test("the upstream's answer is still read leniently: the last repeated name wins, a lone surrogate is U+FFFD")
    func lenientReading() throws {
        #expect(try Value.parse(Array(#"{"k":1,"k":2}"#.utf8), strictness: .lenient) == .object(["k": .number(2)]))
        #expect(try Value.parse(Array(#""\ud800x\udc00""#.utf8), strictness: .lenient) == .string("\u{FFFD}x\u{FFFD}"))
        let completion = try ChatCompletion(
            jsonBytes: Array(#"{"id":"a","id":"b","choices":[{"message":{"content":"\ud800"}}]}"#.utf8))
        #expect(completion.id == "b")
        #expect(completion.choices.first?.message?.content == "\u{FFFD}")
    }

    static let request = #""model":"fast","messages":[{"role":"user","content":"hi"}]"#

    @Test(
        "a chat completions request that is not I-JSON, or has a field of the wrong type, does not decode",
        arguments: [
            #"{"model":"fast","model":"other","messages":[{"role":"user","content":"hi"}]}"#,
            #"{\#(request),"messages":[]}"#,
            #"{\#(request),"stream":true,"stream":false}"#,
            #"{"model":"fast","messages":[{"role":"user","role":"system","content":"hi"}]}"#,
            #"{"model":"fast","messages":[{"role":"user","content":"hi","content":"there"}]}"#,
            #"{\#(request),"tools":[{"function":{"parameters":{"a":1,"a":2}}}]}"#,
            #"{\#(request),"unknown":1,"unknown":2}"#,
            #"{"model":"fast","messages":[{"role":"user","content":"\ud800"}]}"#,
            #"{"model":"fast","messages":[{"role":"user","content":"a\udc00b"}]}"#,
            #"{\#(request),"user":"\ud800"}"#,
            #"{\#(request),"stream":"true"}"#,
            #"{\#(request),"stream":1}"#,
        ]
    )
    func chatRequestRefused(text: String) {
        #expect(throws: DecodingError.self) { try JSON.decode(ChatCompletionRequest.self, from: Array(text.utf8)) }
    }

    @Test(
        "a chat completions request that is I-JSON decodes as before",
        arguments: [
            #"{\#(request)}"#,
            #"{\#(request),"stream":true,"stream_options":{"include_usage":true}}"#,
            #"{\#(request),"stream":null}"#,
            #"{"model":"fast","messages":[{"role":"user","content":"\ud83d\ude00 \u0000"}]}"#,
            #"{\#(request),"tools":[{"function":{"parameters":{"a":{"a":1}}}}]}"#,
            "{\(request),\"deep\":\(String(repeating: "[", count: 500))\(String(repeating: "]", count: 500))}",
        ]
    )
    func chatRequestAccepted(text: String) throws {
        let request = try JSON.decode(ChatCompletionRequest.self, from: Array(text.utf8))
        #expect(request.model == "fast")
    }
}
