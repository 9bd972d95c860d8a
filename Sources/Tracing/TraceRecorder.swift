import Synchronization

/// The spans of one traced piece of work (a request, or a job's chunk) that its parts write
/// while it runs (each upstream attempt), kept for whoever ends it to send with its own.
/// Only a sampled request has one: an unsampled request allocates nothing and records nothing.
package final class TraceRecorder: Sendable {
    /// The work's own span (its id is the parent of every span recorded here).
    package let context: TraceContext
    /// Whether the work's parent came from another process (`traceparent`), and which span it was.
    package let remoteParent: SpanID?

    private struct State {
        var spans: [SpanRecord] = []
        /// The upstream attempt under way: the span id its `traceparent` names.
        var attempt: SpanID?
        /// Why the answer's choices ended, as the upstream said.
        var finishReasons: [String] = []
        /// When a stream's first token came (nanoseconds since the epoch).
        var firstToken: UInt64?
    }

    private let state = Mutex(State())

    package init(context: TraceContext, remoteParent: SpanID? = nil) {
        self.context = context
        self.remoteParent = remoteParent
    }

    /// A new span's id for an upstream attempt about to start, which the call's `traceparent`
    /// names (``attemptContext``).
    package func beginAttempt() -> SpanID {
        let id = SpanID.random()
        state.withLock { $0.attempt = id }
        return id
    }

    /// The context an upstream call sends: the attempt under way, or the work's own span.
    package var attemptContext: TraceContext {
        var context = self.context
        if let attempt = state.withLock({ $0.attempt }) { context.spanID = attempt }
        return context
    }

    /// Notes why the answer's choices ended (`stop`, `length`, …), for the attempt that answered.
    package func note(finishReasons: [String]) {
        state.withLock { $0.finishReasons = finishReasons }
    }

    /// Notes that a stream's first token came now (the first one only).
    package func noteFirstToken() {
        let now = WallClock.nanoseconds()
        state.withLock { state in
            if state.firstToken == nil { state.firstToken = now }
        }
    }

    /// What the answer said of itself.
    package struct Answer: Sendable {
        /// Why its choices ended, as the upstream said.
        package var finishReasons: [String]
        /// When a stream's first token came (nanoseconds since the epoch), 0 for none.
        package var firstToken: UInt64
    }

    /// What the answer said of itself: its finish reasons and its first token's time.
    package var answer: Answer {
        state.withLock { Answer(finishReasons: $0.finishReasons, firstToken: $0.firstToken ?? 0) }
    }

    /// A span of this work's, begun at `start` and ended now: a child of the work's own span, in
    /// its trace (`id`: one named to an upstream already, ``beginAttempt()``).
    package func child(
        _ name: String, kind: SpanRecord.Kind, id: SpanID = SpanID.random(), since start: UInt64
    ) -> SpanRecord {
        var span = SpanRecord(
            traceID: context.traceID, spanID: id, parentSpanID: context.spanID, name: name, kind: kind,
            startNanoseconds: start, endNanoseconds: WallClock.nanoseconds())
        span.traceState = context.traceState
        return span
    }

    /// Keeps a finished child span.
    package func record(_ span: SpanRecord) {
        state.withLock { $0.spans.append(span) }
    }

    /// The spans recorded so far, given up: a second call gets only those recorded after.
    package func take() -> [SpanRecord] {
        state.withLock { state in
            defer { state.spans = [] }
            return state.spans
        }
    }
}

/// The traced work the current task does: set around a sampled request's steps and a job's
/// chunk, read where an upstream call starts and ends.
package enum CurrentTrace {
    @TaskLocal package static var recorder: TraceRecorder?
}
