import Foundation
import Testing

@testable import Tracing

@Suite("Trace recorder")
struct TraceRecorderTests {
    static let context = TraceContext(
        traceID: TraceID(high: 7, low: 9), spanID: SpanID(0x11), sampled: true, traceState: "rojo=1")

    @Test("an upstream call names the work's span until an attempt begins, then the attempt")
    func attemptContext() {
        let recorder = TraceRecorder(context: Self.context, remoteParent: SpanID(0x22))
        #expect(recorder.attemptContext == Self.context)
        let first = recorder.beginAttempt()
        #expect(first != Self.context.spanID)
        var expected = Self.context
        expected.spanID = first
        #expect(recorder.attemptContext == expected, "same trace, flags and tracestate; the attempt's span")
        let second = recorder.beginAttempt()
        #expect(second != first)
        #expect(recorder.attemptContext.spanID == second)
        #expect(recorder.context == Self.context, "the work's own span is unchanged")
        #expect(recorder.remoteParent == SpanID(0x22))
    }

    @Test("take gives up the spans and attempts recorded so far; a second take only those recorded after")
    func take() {
        let recorder = TraceRecorder(context: Self.context)
        let spans = makeSpans(3, "c")
        let template = SpanTemplate(name: "chat m", attributes: [SpanAttribute("gen_ai.request.model", .string("m"))])
        func attempt(_ error: String?) -> TraceRecorder.Attempt {
            TraceRecorder.Attempt(spanID: .random(), start: 1, end: 2, template: template, retry: 0, error: error)
        }
        func names(_ spans: EncodedSpans) -> [String]? {
            otlpSpanNames(OTLPEncoding.exportRequest(resource: [], scope: (name: "t", version: ""), encoded: spans))
        }
        recorder.record(spans[0])
        recorder.record(attempt("timeout"))
        recorder.record(spans[1])
        let first = recorder.take()
        #expect(names(first.spans) == ["c-0", "c-1"])
        #expect(first.attempts.map(\.error) == ["timeout"])
        let second = recorder.take()
        #expect(second.spans.isEmpty)
        #expect(second.attempts.isEmpty)
        recorder.record(spans[2])
        recorder.record(attempt(nil))
        let third = recorder.take()
        #expect(names(third.spans) == ["c-2"])
        #expect(third.attempts.count == 1)
    }

    @Test("attempts are written as client spans of the work's; only the last that answered gets the answer")
    func writeAttempts() throws {
        let recorder = TraceRecorder(context: Self.context)
        let template = SpanTemplate(name: "chat m", attributes: [SpanAttribute("gen_ai.request.model", .string("m"))])
        let ids = [SpanID(0x31), SpanID(0x32), SpanID(0x33)]
        let errors: [String?] = [nil, "timeout", nil]
        for (index, id) in ids.enumerated() {
            recorder.record(
                TraceRecorder.Attempt(
                    spanID: id, start: 100, end: 200 + UInt64(index), template: template, retry: index,
                    error: errors[index]))
        }
        var spans = EncodedSpans()
        recorder.write(recorder.take().attempts, into: &spans) { $0.set("gen_ai.response.model", "m-2024") }
        let body = OTLPEncoding.exportRequest(resource: [], scope: (name: "t", version: ""), encoded: spans)
        let decoded = try OTLPPython.decodeRequest(body)
        #expect(decoded.canonical)
        let written = decoded.request.spans
        try #require(written.count == 3)
        #expect(written.map(\.spanId) == ["0000000000000031", "0000000000000032", "0000000000000033"])
        #expect(written.allSatisfy { $0.parentSpanId == "0000000000000011" && $0.kind == 3 && $0.name == "chat m" })
        #expect(written.map(\.endTimeUnixNano) == ["200", "201", "202"])
        func value(_ key: String) -> [SpanAttribute.Value?] {
            written.map { span in attributes(span.attributes).first { $0?.key == key }??.value }
        }
        #expect(value("gen_ai.request.model") == [.string("m"), .string("m"), .string("m")])
        #expect(value("gen_ai.response.model") == [nil, nil, .string("m-2024")], "the last that answered")
        #expect(value("http.request.resend_count") == [nil, .int(1), .int(2)])
        #expect(value("error.type") == [nil, .string("timeout"), nil])
        #expect(written.map { $0.status?.code } == [nil, 2, nil])
    }

    @Test("the current trace is the task's: set around work, absent elsewhere")
    func currentTrace() async {
        #expect(CurrentTrace.recorder == nil)
        let recorder = TraceRecorder(context: Self.context)
        await CurrentTrace.$recorder.withValue(recorder) {
            #expect(CurrentTrace.recorder === recorder)
            // A child task sees it too: an upstream attempt started inside the request.
            let seen = await Task { CurrentTrace.recorder === recorder }.value
            #expect(seen)
        }
        #expect(CurrentTrace.recorder == nil)
    }

    @Test("the wall clock is Unix-epoch nanoseconds")
    func wallClock() {
        let ours = Double(WallClock.nanoseconds()) / 1e9
        #expect(abs(ours - Date().timeIntervalSince1970) < 5)
    }
}
