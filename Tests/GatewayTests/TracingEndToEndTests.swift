import Access
import Gateway
import HTTPClient
import TestSupport
import Testing

@testable import Tracing

/// Traces from a running gateway, into the mock upstream's OTLP endpoint (which keeps each
/// export's body): what is traced, whose context is joined, what the upstream is told, and what
/// a span may hold. `make traces-check` runs the same against a real collector.
@Suite("Traces end to end")
struct TracingEndToEndTests {
    static let callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let callerSpan = "00f067aa0ba902b7"
    static let text =
        "متن محرمانهٔ کاربر که هرگز نباید در هیچ ردی دیده شود، "
        + "نه در نام و نه در ویژگی‌ها."

    /// A gateway exporting every 20 ms to its mock upstream's `/v1/traces`, `configure` after.
    static func with(
        _ configure: @escaping (inout TracingSettings) -> Void = { _ in },
        gateway: @escaping (inout GatewayConfiguration) -> Void = { _ in },
        _ body: (GatewayHarness) async throws -> Void
    ) async throws {
        try await GatewayHarness.with(configure: { configuration in
            var settings = TracingSettings(endpoint: configuration.baseURL + "/traces")
            settings.scheduleDelay = .milliseconds(20)
            settings.resource = [SpanAttribute("service.name", .string("text-gateway-test"))]
            configure(&settings)
            configuration.tracing = settings
            gateway(&configuration)
        }) { harness in try await body(harness) }
    }

    static func traceparent(sampled: Bool = true) -> (name: String, value: String) {
        ("traceparent", "00-\(callerTrace)-\(callerSpan)-\(sampled ? "01" : "00")")
    }

    /// Every span the mock received so far, decoded.
    static func spans(_ harness: GatewayHarness) -> [DecodedSpan] {
        harness.mock.receivedTraceExports.flatMap(DecodedSpan.all)
    }

    /// Waits until at least `count` spans arrived; all of them.
    static func spans(_ harness: GatewayHarness, atLeast count: Int) async -> [DecodedSpan] {
        await eventually("\(count) spans exported", within: .seconds(20)) { spans(harness).count >= count }
        return spans(harness)
    }

    @Test("a request is one server span with its attempt as a child; the upstream is told the attempt's span")
    func requestAndAttempt() async throws {
        try await Self.with { harness in
            let response = try await harness.process(task: "summarize", text: Self.text)
            #expect(response.head.status == 200)
            let spans = await Self.spans(harness, atLeast: 2)
            let server = try #require(spans.first { $0.kind == 2 })
            let attempt = try #require(spans.first { $0.kind == 3 })
            #expect(server.name == "POST /api/process" && server.parent == nil)
            #expect(attempt.parent == server.spanID && attempt.traceID == server.traceID)
            #expect(attempt.name == "chat test-model")
            #expect(attempt.strings["gen_ai.request.model"] == "test-model")
            #expect(attempt.strings["gen_ai.response.model"] == "test-model")
            #expect(attempt.strings["gen_ai.operation.name"] == "chat")
            #expect(attempt.ints["gen_ai.usage.input_tokens"] ?? 0 > 0)
            #expect(attempt.strings["server.address"] == "127.0.0.1")
            #expect(attempt.arrays["gen_ai.response.finish_reasons"] == ["stop"])
            #expect(server.ints["http.response.status_code"] == 200)
            #expect(server.strings["textgateway.request_id"] == response.head.header("X-Request-Id"))
            #expect(server.strings["textgateway.outcome"] == "done")
            #expect(server.strings["textgateway.caller.kind"] == "guest")
            #expect(server.strings["http.request.method"] == "POST" && server.strings["http.route"] == "/api/process")
            // The upstream saw the attempt's span as its parent.
            #expect(harness.mock.receivedTraceparents == ["00-\(server.traceID)-\(attempt.spanID)-01"])
            // The access line names the trace.
            #expect(harness.logs.lines.contains { $0.contains("trace_id=\(server.traceID)") })
            // Nothing of the text or the answer, nor the upstream's key, in any span.
            let everything = spans.map(\.everyString).joined(separator: "\n")
            #expect(!everything.contains(String(Self.text.prefix(12))))
            #expect(!everything.contains(upstreamKey))
            let answer = try Body(response).result ?? ""
            #expect(!answer.isEmpty && !everything.contains(String(answer.prefix(12))))
        }
    }

    @Test("a caller's traceparent is joined only from a trusted proxy by default, from anyone with `any`")
    func contextSource() async throws {
        try await Self.with { harness in
            _ = try await harness.process(task: "summarize", text: Self.text, headers: [Self.traceparent()])
            let server = try #require(await Self.spans(harness, atLeast: 2).first { $0.kind == 2 })
            #expect(server.traceID != Self.callerTrace && server.parent == nil)
        }
        try await Self.with(gateway: { $0.trustedProxies = try! TrustedProxies.parse("127.0.0.1/32") }) { harness in
            _ = try await harness.process(task: "summarize", text: Self.text, headers: [Self.traceparent()])
            let server = try #require(await Self.spans(harness, atLeast: 2).first { $0.kind == 2 })
            #expect(server.traceID == Self.callerTrace && server.parent == Self.callerSpan)
            #expect(server.flags == 0x301) // sampled, and the parent known to be remote
        }
        try await Self.with({ $0.contextSource = .any }) { harness in
            _ = try await harness.process(task: "summarize", text: Self.text, headers: [Self.traceparent()])
            let server = try #require(await Self.spans(harness, atLeast: 2).first { $0.kind == 2 })
            #expect(server.traceID == Self.callerTrace)
            #expect(harness.mock.receivedTraceparents.allSatisfy { $0.hasPrefix("00-\(Self.callerTrace)-") })
        }
    }

    @Test("not sampled: no span, nothing sent upstream, no trace id in the log")
    func unsampled() async throws {
        // The caller's flag says not sampled, and parent-based sampling follows it.
        try await Self.with({ $0.contextSource = .any }) { harness in
            let unsampled = Self.traceparent(sampled: false)
            _ = try await harness.process(task: "summarize", text: Self.text, headers: [unsampled])
            // A second request, sampled, shows the exporter works: only its spans arrive.
            _ = try await harness.process(task: "summarize", text: Self.text)
            let spans = await Self.spans(harness, atLeast: 2)
            #expect(spans.count == 2 && spans.allSatisfy { $0.traceID != Self.callerTrace })
            #expect(harness.mock.receivedTraceparents.count == 1)
            #expect(harness.logs.lines.filter { $0.contains("trace_id=") }.count == 1)
        }
        try await Self.with({ $0.sampler = .alwaysOff }) { harness in
            _ = try await harness.process(task: "summarize", text: Self.text)
            try await Task.sleep(for: .milliseconds(100)) // several schedule delays: nothing to wait for
            #expect(Self.spans(harness).isEmpty && harness.mock.receivedTraceparents.isEmpty)
        }
    }

    @Test("an answer of several choices: every choice's finish reason, in order, on the attempt that answered")
    func severalFinishReasons() async throws {
        try await Self.with { harness in
            let body = #"{"model":"default","n":2,"messages":[{"role":"user","content":"سلام"}]}"#
            let response = try await harness.client.send(
                HTTPClientRequest(
                    method: "POST", url: harness.base + "/v1/chat/completions",
                    headers: [("Content-Type", "application/json")], body: Array(body.utf8)))
            #expect(response.status == 200)
            let attempt = try #require(await Self.spans(harness, atLeast: 2).first { $0.kind == 3 })
            #expect(attempt.arrays["gen_ai.response.finish_reasons"] == ["stop", "stop"])
        }
    }

    @Test("probes are not traced unless TRACE_PROBES; a refused request has its error and no attempt")
    func probesAndRefusals() async throws {
        try await Self.with { harness in
            _ = try await harness.client.send(HTTPClientRequest(url: harness.base + "/api/health"))
            let refused = try await harness.process(task: "translate", text: Self.text)
            #expect(refused.head.status == 400)
            let spans = await Self.spans(harness, atLeast: 1)
            #expect(spans.count == 1)
            let server = try #require(spans.first)
            #expect(server.strings["http.route"] == "/api/process")
            #expect(server.strings["error.type"] == (try Body(refused).code))
            #expect(server.ints["http.response.status_code"] == 400)
            #expect(server.strings["textgateway.outcome"] == "rejected")
            #expect(server.strings["textgateway.caller.kind"] == "guest")
            // A refusal is the caller's: the gateway's span is not an error.
            #expect(server.statusCode == 0)
        }
        try await Self.with({ $0.probes = true }) { harness in
            _ = try await harness.client.send(HTTPClientRequest(url: harness.base + "/api/health"))
            let spans = await Self.spans(harness, atLeast: 1)
            #expect(spans.first?.name == "GET /api/health")
        }
    }

    @Test("the user id only with TRACE_USER_ID; the caller's kind and plan always")
    func userID() async throws {
        for userID in [false, true] {
            try await Self.with(
                { $0.userID = userID },
                gateway: { configuration in
                    configuration.tokens = try! TokenStore.parse(
                        inline: "\(TokenStore.hashLine(forToken: "trace-test-token-0123456789abcdef")):alice:default")
                }
            ) { harness in
                _ = try await harness.process(
                    task: "summarize", text: Self.text,
                    headers: [("Authorization", "Bearer trace-test-token-0123456789abcdef")])
                let server = try #require(await Self.spans(harness, atLeast: 2).first { $0.kind == 2 })
                #expect(server.strings["textgateway.caller.kind"] == "token")
                #expect(server.strings["textgateway.caller.plan"] == "default")
                #expect(server.strings["enduser.id"] == (userID ? "alice" : nil))
                #expect(!server.everyString.contains("trace-test-token"))
            }
        }
    }
}

/// One span of an OTLP export, read with the exporter's own protobuf reader (the encoding
/// itself is checked field by field against opentelemetry-proto in TracingTests).
struct DecodedSpan {
    var traceID = ""
    var spanID = ""
    var parent: String?
    var name = ""
    var kind = 0
    var flags: UInt32 = 0
    var statusCode = 0
    var strings: [String: String] = [:]
    var ints: [String: Int] = [:]
    var everyString: String = ""
    /// Attributes whose value is an array of strings.
    var arrays: [String: [String]] = [:]

    /// The spans of an `ExportTraceServiceRequest`.
    static func all(_ body: [UInt8]) -> [DecodedSpan] {
        var spans: [DecodedSpan] = []
        for resource in fields(body, 1) {
            for scope in fields(resource, 2) {
                for span in fields(scope, 2) { spans.append(DecodedSpan(span)) }
            }
        }
        return spans
    }

    init(_ bytes: [UInt8]) {
        var reader = ProtobufReader(bytes)
        var texts: [String] = []
        while let (field, wire) = reader.nextTag() {
            switch (field, wire) {
            case (1, 2): traceID = Self.hex(reader.lengthDelimited() ?? [])
            case (2, 2): spanID = Self.hex(reader.lengthDelimited() ?? [])
            case (4, 2): parent = Self.hex(reader.lengthDelimited() ?? [])
            case (5, 2): name = String(decoding: reader.lengthDelimited() ?? [], as: UTF8.self)
            case (6, 0): kind = Int(reader.varint() ?? 0)
            case (9, 2):
                let pair = reader.lengthDelimited() ?? []
                let key = String(decoding: Self.fields(pair, 1).first ?? [], as: UTF8.self)
                let value = Self.fields(pair, 2).first ?? []
                var any = ProtobufReader(value)
                if let (kind, _) = any.nextTag() {
                    if kind == 1 {
                        let text = String(decoding: any.lengthDelimited() ?? [], as: UTF8.self)
                        strings[key] = text
                        texts.append(text)
                    } else if kind == 3 {
                        ints[key] = Int(Int64(bitPattern: any.varint() ?? 0))
                    } else if kind == 5 {
                        // An ArrayValue: its values (field 1), each an AnyValue holding a string.
                        let array = Self.fields(any.lengthDelimited() ?? [], 1).map { value in
                            String(decoding: Self.fields(value, 1).first ?? [], as: UTF8.self)
                        }
                        arrays[key] = array
                        texts.append(contentsOf: array)
                    }
                }
                texts.append(key)
            case (15, 2):
                var status = ProtobufReader(reader.lengthDelimited() ?? [])
                while let (field, wire) = status.nextTag() {
                    if field == 3 { statusCode = Int(status.varint() ?? 0) } else { _ = status.skip(wire) }
                }
            case (16, 5): flags = reader.fixed32() ?? 0
            default: _ = reader.skip(wire)
            }
        }
        everyString = ([name] + texts).joined(separator: "\n")
    }

    static func fields(_ message: [UInt8], _ wanted: Int) -> [[UInt8]] {
        var reader = ProtobufReader(message)
        var found: [[UInt8]] = []
        while let (field, wire) = reader.nextTag() {
            if field == wanted, wire == 2, let bytes = reader.lengthDelimited() {
                found.append(bytes)
            } else if !reader.skip(wire) {
                break
            }
        }
        return found
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0 >> 4, radix: 16) + String($0 & 0xF, radix: 16) }.joined()
    }
}
