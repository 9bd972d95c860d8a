import ChatAPI
import EventLoop
import HTTP1
import HTTPServer
import Synchronization
import Telemetry
import Tracing
import Upstream

/// `POST /v1/chat/completions`: relays a chat (streamed or not) to the upstream as the client
/// sent it — every field, `tools`, `n` (up to `MAX_CHOICES`) and image parts included — with
/// the alias rewritten, the token limit capped and the server's key.
struct ChatCompletionsRoute: RouteHandler {
    let pool: UpstreamPool?
    let configuration: GatewayConfiguration
    let streams: StreamRegistry
    let logger: Logger

    func answer(_ request: HTTPRequest, context: RequestContext, report: inout RouteReport)
        async throws(GatewayError) -> RouteAnswer
    {
        if let contentType = request.headers["Content-Type"], !ProcessRequest.isJSON(contentType) {
            throw .unsupportedMediaType
        }
        let chat: ChatCompletionPassThrough
        do {
            chat = try ChatCompletionPassThrough(jsonBytes: request.body, maximumMessages: configuration.maxMessages)
        } catch {
            if case .messageCount = error { throw .invalidMessages }
            throw .invalidJSON
        }
        guard let model = configuration.upstreamModel(forAlias: chat.model) else { throw .modelNotFound(chat.model) }
        guard chat.choices <= configuration.maxChoices else { throw .tooManyChoices(limit: configuration.maxChoices) }
        guard let pool else { throw .keyNotConfigured }
        let choice = UpstreamModelChoice.alias(chat.model)
        report.model = model
        report.task = "chat"
        let requestID = context.id
        let cap = configuration.maxTokens
        // A stream always asks for usage upstream: the gateway counts its tokens.
        func body(for target: UpstreamPool.Target) -> [UInt8] {
            chat.body(model: target.model, maxTokensCap: cap, addUsageOption: chat.stream)
        }
        let upstreamStart = MonotonicInstant.now()
        var attempts = UpstreamAttempts()
        defer { report.note(attempts) }

        if chat.stream {
            let bytes: any UpstreamBytes
            let totalTimeout = configuration.streamTotalTimeout
            do {
                bytes = try await pool.run(
                    choice, deadline: configuration.streamHeadDeadline, requestID: requestID,
                    attempts: &attempts, body: body
                ) { endpoint, body, limit, _ throws(ChatError) in
                    try await endpoint.streamBytes(
                        body: body, requestID: requestID, timeout: totalTimeout, headTimeout: limit)
                }
            } catch {
                throw fail(error, requestID: requestID, since: upstreamStart)
            }
            let relay = StreamRelay(
                bytes: bytes, control: StreamControl(limits: StreamControl.Limits(configuration)), context: context,
                upstreamStart: upstreamStart, includeUsage: chat.includeUsage, logger: logger
            )
            let headers: HTTPHeaders = [
                "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            ]
            return RouteAnswer(streaming: headers) { [streams] writer in
                await streams.withRegistered(relay.control) { await relay.run(writer) }
            }
        }

        let answer: [UInt8]
        do {
            answer = try await pool.run(
                choice, requestID: requestID, attempts: &attempts, body: body
            ) {
                endpoint, body, limit, _ throws(ChatError) in
                try await endpoint.forward(body: body, requestID: requestID, timeout: limit)
            }
        } catch {
            throw fail(error, requestID: requestID, since: upstreamStart)
        }
        let completion = try? ChatCompletion(jsonBytes: answer)
        report.span = UpstreamSpan(since: upstreamStart, usage: completion?.usage)
        if let trace = CurrentTrace.recorder, let completion {
            trace.note(finishReasons: completion.choices.compactMap(\.finishReason))
        }
        return RouteAnswer(HTTPResponse(headers: ["Content-Type": "application/json"], body: .bytes(answer)))
    }

    /// The error to answer a failed call with, carrying the call's time.
    private func fail(_ error: ChatError, requestID: String, since start: MonotonicInstant) -> GatewayError {
        var failure = UpstreamCall.gatewayError(for: error, requestID: requestID, logger: logger)
        failure.upstreamElapsed = start.nanoseconds(until: .now())
        return failure
    }
}

/// Relays an upstream event stream to a `/v1` client event by event, as it arrives: chunks
/// as they came, `[DONE]`, and the usage-only last chunk (`choices: []`) only to a client
/// that asked for it with `stream_options.include_usage`. An upstream that sends an error
/// event, malformed data, stops early or stalls gets an error event in OpenAI's shape whose
/// text is the gateway's own: the upstream's goes to the log only.
struct StreamRelay: Sendable {
    let bytes: any UpstreamBytes
    let control: StreamControl
    let context: RequestContext
    let upstreamStart: MonotonicInstant
    let includeUsage: Bool
    let logger: Logger

    private enum Outcome: Sendable {
        /// The last chunk (`[DONE]` and whatever came with it), not yet written.
        case done(Usage?, last: [UInt8])
        case failed(UpstreamFailure, Usage?)
        case ended(StreamControl.EndReason, Usage?)
        case clientGone(Usage?)
    }

    /// What the reading task knows so far, for an outcome decided elsewhere.
    private final class Progress: Sendable {
        let usage = Mutex<Usage?>(nil)
    }

    /// Relays the stream but its last event, which it returns with how the stream ended.
    func run(_ writer: ResponseBodyWriter) async -> StreamReport {
        let progress = Progress()
        let outcome = await control.run(writer, clientGone: Outcome.clientGone(nil)) {
            await relay(writer, progress: progress)
        }
        bytes.cancel()
        let span = UpstreamSpan(since: upstreamStart, usage: progress.usage.withLock { $0 })
        switch outcome {
        case .done(_, let last):
            return StreamReport(outcome: .done, upstream: span, lastEvent: last)
        case .failed(let failure, _):
            return fail(failure.error, outcome: .failed(failure), span)
        case .ended(let reason, _):
            return fail(reason.ending.error, outcome: reason.ending.outcome, span)
        case .clientGone:
            return .cancelled(upstream: span)
        }
    }

    private func fail(_ error: GatewayError, outcome: RequestOutcome, _ upstream: UpstreamSpan) -> StreamReport {
        .failed(error, outcome: outcome, shape: .openAI, context: context, upstream: upstream)
    }

    private func relay(_ writer: ResponseBodyWriter, progress: Progress) async -> Outcome {
        var reader = ServerSentEventReader()
        var usage: Usage?
        func note(_ value: Usage?) {
            guard let value else { return }
            usage = value
            progress.usage.withLock { $0 = value }
        }
        do {
            while let chunk = try await bytes.next() {
                let events: [ServerSentEvent]
                do {
                    events = try reader.feed(chunk)
                } catch {
                    return upstreamFailed(.transport(detail: "malformed stream"), usage)
                }
                var out: [UInt8] = []
                var sawToken = false
                var finished = false
                for event in events {
                    let item: ChatStreamEvent?
                    do {
                        item = try ChatStreamDecoder.interpret(event)
                    } catch {
                        if case .upstreamError(let body) = error { return upstreamFailed(.streamError(body), usage) }
                        return upstreamFailed(.transport(detail: "malformed stream"), usage)
                    }
                    switch item {
                    case nil:
                        continue
                    case .done?:
                        out += ServerSentEventWriter.done()
                        finished = true
                    case .chunk(let value)?:
                        note(value.usage)
                        if value.carriesOutput { sawToken = true } // a tool call's chunks count, and every choice's
                        if value.choices.isEmpty && !includeUsage { continue }
                        out += ServerSentEventWriter.event(name: nil, data: event.data)
                    }
                    if finished { break }
                }
                control.noteUpstream(token: sawToken || finished)
                if finished { return .done(usage, last: out) }
                try await writer.write(out)
                control.noteWrite()
            }
        } catch let error as ChatError {
            if let reason = control.endReason { return .ended(reason, usage) }
            if case .cancelled = error { return .clientGone(usage) }
            return upstreamFailed(error, usage)
        } catch {
            if let reason = control.endReason { return .ended(reason, usage) }
            return .clientGone(usage)
        }
        return upstreamFailed(.transport(detail: "stream ended without [DONE]"), usage)
    }

    private func upstreamFailed(_ error: ChatError, _ usage: Usage?) -> Outcome {
        guard let failure = UpstreamCall.failure(of: error, requestID: context.id, logger: logger) else {
            return .clientGone(usage)
        }
        return .failed(failure, usage)
    }
}

extension ChatCompletionsRoute {
    /// How `/v1/chat/completions` keeps an answer for an `Idempotency-Key`: a stream as every
    /// event it sent (a joining retry gets them all so far, then what follows).
    struct Keeping: AnswerKeeping {
        func tee(requestID: String) -> StreamTee? { StreamTee(shape: .transcript) }
    }
}
