import ChatAPI
import EventLoop
import HTTPServer
import Synchronization

/// A streamed `/api/process` answer (CONTRACT.md, "Streaming"): `start`, one `delta` per
/// upstream piece with the text so far, then exactly one `done` or `error`; `: ping` when
/// quiet for a heartbeat interval.
struct ProcessStream: Sendable {
    let chat: ChatClient
    let request: ChatCompletionRequest
    let requestID: String
    let language: Language
    let control: StreamControl
    let totalTimeout: Duration
    let record: AccessRecord?
    let logFailure: @Sendable (ChatError) -> Void

    private enum Outcome: Sendable {
        case done(String, Usage?)
        case failed(ChatError)
        case ended(StreamControl.EndReason)
        case clientGone
    }

    /// Writes the whole event stream; returns when it ended (or the client left).
    func run(_ writer: ResponseBodyWriter) async throws {
        try await writer.write(event("start") { $0.field("requestId", requestID) })
        control.noteWrite()
        let upstreamStart = MonotonicInstant.now()
        let outcome = await control.run(writer, clientGone: Outcome.clientGone) { await consume(writer) }
        record?.update { $0.upstreamNanoseconds = upstreamStart.nanoseconds(until: .now()) }
        switch outcome {
        case .done(let text, let usage):
            record?.update {
                $0.inputTokens = usage?.promptTokens
                $0.outputTokens = usage?.completionTokens
            }
            if TextTrim.trimmed(text).isEmpty {
                try await fail(.emptyResult, writer)
                return
            }
            record?.update { $0.outcome = "done" }
            try await writer.write(event("done") {
                $0.field("requestId", requestID)
                $0.field("result", text)
                $0.usageField(usage)
            })
        case .failed(let error):
            logFailure(error)
            try await fail(.upstream(error), writer)
        case .ended(let reason):
            try await fail(reason == .shutdown ? .shuttingDown : .upstreamTimeout, writer)
            record?.update { $0.outcome = reason == .shutdown ? "shutdown" : "stream_timeout" }
        case .clientGone:
            record?.update { $0.outcome = "cancelled" }
        }
    }

    /// Reads the upstream and writes a `delta` per piece.
    private func consume(_ writer: ResponseBodyWriter) async -> Outcome {
        var text = ""
        var usage: Usage?
        do {
            let stream = try await chat.stream(request, requestID: requestID, timeout: totalTimeout)
            for try await chunk in stream {
                let delta = chunk.firstDeltaContent ?? ""
                control.noteUpstream(token: !delta.isEmpty)
                if let value = chunk.usage { usage = value }
                guard !delta.isEmpty else { continue }
                text += delta
                try await writer.write(event("delta") {
                    $0.field("requestId", requestID)
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

    private func fail(_ error: GatewayError, _ writer: ResponseBodyWriter) async throws {
        record?.update { $0.errorCode = error.code }
        try await writer.write(event("error") {
            let message = error.message(language)
            $0.field("error", true)
            $0.field("reason", message)
            $0.field("message", message)
            $0.field("code", error.code)
            $0.field("requestId", requestID)
            $0.field("status", error.status.code)
        })
    }

    private func event(_ name: String, _ body: (inout JSONWriter) -> Void) -> [UInt8] {
        var writer = JSONWriter()
        writer.object(body)
        return ServerSentEventWriter.event(name: name, data: String(decoding: writer.bytes, as: UTF8.self))
    }
}
