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
        /// Finished spans that need nothing more (the limiter's, the ledger's), encoded.
        var spans = EncodedSpans()
        /// The upstream attempts ended, written when the work ends: the one that answered
        /// then gets what the answer said.
        var attempts = Attempts()
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

    /// Keeps a finished child span, encoded.
    package func record(_ span: SpanRecord) {
        state.withLock { $0.spans.append(span) }
    }

    /// Keeps an ended upstream attempt, to be written when the work ends.
    package func record(_ attempt: Attempt) {
        state.withLock { $0.attempts.append(attempt) }
    }

    /// The spans recorded so far and the attempts ended, given up: a second call gets only
    /// those recorded after.
    package func take() -> (spans: EncodedSpans, attempts: Attempts) {
        state.withLock { state in
            var taken = (spans: EncodedSpans(), attempts: Attempts())
            swap(&taken.spans, &state.spans)
            swap(&taken.attempts, &state.attempts)
            return taken
        }
    }

    /// One upstream attempt, ended: a client span of the work's own.
    package struct Attempt: Sendable {
        package let spanID: SpanID
        package let start: UInt64
        package let end: UInt64
        /// Its name and the attributes every attempt of its model on its upstream holds.
        package let template: SpanTemplate
        /// Sends before this one, on this upstream.
        package let retry: Int
        /// The failure's kind; nil when the attempt answered.
        package let error: String?

        package init(spanID: SpanID, start: UInt64, end: UInt64, template: SpanTemplate, retry: Int, error: String?) {
            self.spanID = spanID
            self.start = start
            self.end = end
            self.template = template
            self.retry = retry
            self.error = error
        }
    }

    /// The attempts of one piece of work: the first kept in place, so the common request (one
    /// attempt) allocates no array for it; a retry's or a fallback's go after it.
    package struct Attempts: Sendable, RandomAccessCollection {
        private var first: Attempt?
        private var more: [Attempt] = []

        package init() {}

        package var startIndex: Int { 0 }
        package var endIndex: Int { first == nil ? 0 : 1 + more.count }

        package subscript(index: Int) -> Attempt {
            if index == 0, let first { return first }
            return more[index - 1]
        }

        mutating func append(_ attempt: Attempt) {
            if first == nil { first = attempt } else { more.append(attempt) }
        }
    }

    /// Writes `attempts` as client spans of this work's; the last one that answered also gets
    /// what `answered` writes (the answer's model, usage, finish reasons).
    package func write(_ attempts: Attempts, into spans: inout EncodedSpans, answered: (inout SpanBody) -> Void) {
        let answering = attempts.lastIndex { $0.error == nil }
        for index in attempts.indices {
            let attempt = attempts[index]
            spans.appendSpan(
                trace: context.traceID, id: attempt.spanID, parent: context.spanID, traceState: context.traceState,
                name: attempt.template.name, kind: .client, start: attempt.start
            ) { body in
                body.end = attempt.end
                body.append(contentsOf: attempt.template.attributes)
                // The HTTP conventions' count of sends before this one, on this upstream.
                if attempt.retry > 0 { body.set("http.request.resend_count", attempt.retry) }
                if let error = attempt.error {
                    body.set("error.type", error)
                    body.status = .error(error)
                }
                if index == answering { answered(&body) }
            }
        }
    }
}

/// What every span of one kind holds, encoded once: its name and its fixed attributes (an
/// upstream attempt's operation, model and upstream; a route's method and path). A class: an
/// attempt's record holds it with one reference, not one for each of its parts.
package final class SpanTemplate: Sendable {
    package let name: String
    package let attributes: SpanAttributes

    package init(name: String, attributes: SpanAttributes) {
        self.name = name
        self.attributes = attributes
    }
}

/// The traced work the current task does: set around a sampled request's steps and a job's
/// chunk, read where an upstream call starts and ends.
package enum CurrentTrace {
    @TaskLocal package static var recorder: TraceRecorder?
}
