import ChatAPI
import EventLoop
import HTTPServer
import JSON
import Telemetry
import TextTasks
import Upstream

/// A streamed `/api/process` answer (docs/api.md, "Streaming"): `start`, one `delta` per
/// upstream piece with the text so far, then exactly one `done` or `error`; `: ping` when
/// quiet for a heartbeat interval.
struct ProcessStream: Sendable {
    /// The upstream's answer once its head came (retries and fallback are over by then).
    let opened: any UpstreamBytes
    let upstreamStart: MonotonicInstant
    let context: RequestContext
    let control: StreamControl
    let logger: Logger
    /// For `"format": "json"`, the task whose schema the answer must match: the deltas carry
    /// the model's text as it comes, `done` the data and the human-readable `result`; an
    /// answer that breaks the schema ends with `invalid_model_output` (no repair call).
    var structured: TextTask? = nil
    /// For a request with an `Idempotency-Key`: where the events go, told the text so far
    /// with each delta so that a retry joining it gets the text in one piece.
    var tee: StreamTee? = nil

    private enum Outcome: Sendable {
        case done(String, Usage?)
        case failed(ChatError)
        case ended(StreamControl.EndReason)
        case clientGone
    }

    /// Writes the event stream but its last event, which it returns with how the stream
    /// ended; throws when the client left before `start` was written.
    func run(_ writer: ResponseBodyWriter) async throws -> StreamReport {
        try await writer.write(ServerSentEventWriter.jsonEvent("start") { $0.field("requestId", context.id) })
        control.noteWrite()
        let outcome = await control.run(writer, clientGone: Outcome.clientGone) { await consume(opened, writer) }
        switch outcome {
        case .done(let text, let usage):
            let span = UpstreamSpan(since: upstreamStart, usage: usage)
            if TextTrim.trimmed(text).isEmpty { return fail(.emptyResult, outcome: .failed(.emptyResult), span) }
            var result = text
            var data: JSONValue?
            if let structured {
                switch StructuredOutput.read(text, task: structured) {
                case .success(let answer): (result, data) = (answer.result, answer.data)
                case .failure(let violation):
                    TaskAnswerer.logInvalid(
                        violation, attempt: 1, task: structured, requestID: context.id, logger: logger)
                    return fail(.invalidModelOutput, outcome: .failed(.invalidModelOutput), span)
                }
            }
            let done = ServerSentEventWriter.jsonEvent("done") {
                $0.field("requestId", context.id)
                $0.field("result", result)
                if let data { $0.field("data", data) }
                $0.usageField(usage)
            }
            return StreamReport(outcome: .done, upstream: span, lastEvent: done, result: result)
        case .failed(let error):
            let span = UpstreamSpan(since: upstreamStart)
            guard let failure = UpstreamCall.failure(of: error, requestID: context.id, logger: logger) else {
                return .cancelled(upstream: span)
            }
            return fail(failure.error, outcome: .failed(failure), span)
        case .ended(let reason):
            return fail(reason.ending.error, outcome: reason.ending.outcome, UpstreamSpan(since: upstreamStart))
        case .clientGone:
            return .cancelled(upstream: UpstreamSpan(since: upstreamStart))
        }
    }

    /// Reads the upstream and writes a `delta` per piece.
    private func consume(_ bytes: any UpstreamBytes, _ writer: ResponseBodyWriter) async -> Outcome {
        var text = ""
        var usage: Usage?
        do {
            var stream = ChatCompletionStream(bytes: bytes)
            defer { stream.bytes.cancel() }
            while let chunk = try await stream.next() {
                let delta = chunk.firstDeltaContent ?? ""
                control.noteUpstream(token: !delta.isEmpty)
                if let value = chunk.usage { usage = value }
                guard !delta.isEmpty else { continue }
                text += delta
                tee?.noteText(text)
                try await writer.write(
                    ServerSentEventWriter.jsonEvent("delta") {
                        $0.field("requestId", context.id)
                        $0.field("delta", delta)
                        $0.field("text", text)
                    })
                control.noteWrite()
            }
            return .done(text, usage)
        } catch let error as ChatError {
            if let reason = control.endReason { return .ended(reason) }
            if case .cancelled = error { return .clientGone }
            return .failed(error)
        } catch {
            // ConnectionClosedError from the writer, or cancellation: the client is gone.
            if let reason = control.endReason { return .ended(reason) }
            return .clientGone
        }
    }

    private func fail(_ error: GatewayError, outcome: RequestOutcome, _ upstream: UpstreamSpan) -> StreamReport {
        .failed(error, outcome: outcome, shape: .gateway, context: context, upstream: upstream)
    }
}
