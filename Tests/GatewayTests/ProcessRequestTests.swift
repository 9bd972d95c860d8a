import Testing

@testable import Gateway
@testable import TextTasks

/// The `POST /api/process` body: its shape (I-JSON, known fields of the right type), then
/// the task, the tone and the text.
@Suite("POST /api/process body")
struct ProcessRequestTests {
    static let text = "این متن بیست کاراکتر بیشتر دارد حتما"

    /// A body with a valid task and text and `rest` appended as more members.
    static func body(_ rest: String = "") -> String {
        #"{"task":"summarize","text":"\#(text)""# + rest + "}"
    }

    @Test(
        "refuses a body that is not I-JSON or has a known field of the wrong type, as invalid_json",
        arguments: [
            // Known fields of the wrong type.
            #"{"task":5,"text":"\#(text)"}"#,
            #"{"task":null,"text":"\#(text)"}"#,
            #"{"task":"summarize","text":null}"#,
            #"{"task":"summarize","text":["a"]}"#,
            body(#","stream":"true""#),
            body(#","stream":1"#),
            body(#","stream":{}"#),
            body(#","tone":7"#),
            body(#","tone":true"#),
            body(#","tone":["formal"]"#),
            body(#","tone":{"name":"formal"}"#),
            // The shape is checked before the task's value.
            #"{"task":"translate","text":"\#(text)","stream":"yes"}"#,
            #"{"task":"translate","text":"\#(text)","tone":7}"#,
            // U+0000 in the text.
            #"{"task":"summarize","text":"\#(text)\u0000"}"#,
            #"{"task":"summarize","text":"\u0000\#(text)"}"#,
            #"{"task":"summarize","text":"این متن\u0000بیست کاراکتر بیشتر دارد"}"#,
            // A repeated name, known or not, at the top level or inside a value.
            #"{"task":"summarize","task":"rewrite","text":"\#(text)"}"#,
            #"{"task":"summarize","text":"short","text":"\#(text)"}"#,
            #"{"task":"summarize","t\u0065xt":"\#(text)","text":"\#(text)"}"#,
            body(#","tone":"formal","tone":null"#),
            body(#","stream":true,"stream":true"#),
            body(#","other":1,"other":2"#),
            body(#","meta":{"a":1,"a":2}"#),
            body(#","list":[{"a":1,"a":2}]"#),
            // A lone surrogate, in a known field or not.
            #"{"task":"summarize","text":"\#(text)\ud800"}"#,
            #"{"task":"summarize","text":"\udc00\#(text)"}"#,
            body(#","tone":"\ud800""#),
            body(#","other":"\udbff""#),
        ]
    )
    func invalidJSON(body: String) {
        #expect(throws: GatewayError.invalidJSON) {
            try ProcessRequest.parse(body: Array(body.utf8), contentType: "application/json")
        }
    }

    @Test(
        "refuses a tone string it does not know as invalid_tone",
        arguments: [body(#","tone":"angry""#), body(#","tone":"""#), body(#","tone":"Formal""#)]
    )
    func invalidTone(body: String) {
        #expect(throws: GatewayError.invalidTone) {
            try ProcessRequest.parse(body: Array(body.utf8), contentType: nil)
        }
    }

    @Test(
        "accepts absent or null tone and stream, a bool stream, and unknown fields of any type",
        arguments: [
            (body(), nil, false),
            (body(#","tone":null,"stream":null"#), nil, false),
            (body(#","tone":"formal","stream":true"#), Tone.formal, true),
            (body(#","stream":false"#), nil, false),
            (body(#","other":"x","Task":5,"meta":{"a":1,"b":{"a":2}},"list":[{"a":1},{"a":1}]"#), nil, false),
            (#"{"task":"summarize","text":"\#(text) \ud83d\ude00"}"#, nil, false),
        ] as [(String, Tone?, Bool)]
    )
    func accepted(body: String, tone: Tone?, stream: Bool) throws {
        let request = try ProcessRequest.parse(body: Array(body.utf8), contentType: "application/json")
        #expect(request.task == .summarize)
        #expect(request.tone == tone)
        #expect(request.stream == stream)
    }
}
