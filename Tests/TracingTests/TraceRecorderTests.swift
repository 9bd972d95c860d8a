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

    @Test("take gives up the spans recorded so far; a second take only those recorded after")
    func take() {
        let recorder = TraceRecorder(context: Self.context)
        let spans = makeSpans(3, "c")
        recorder.record(spans[0])
        recorder.record(spans[1])
        #expect(recorder.take().map(\.name) == ["c-0", "c-1"])
        #expect(recorder.take().isEmpty)
        recorder.record(spans[2])
        #expect(recorder.take().map(\.name) == ["c-2"])
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
