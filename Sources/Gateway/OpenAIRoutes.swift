import ChatAPI
import EventLoop
import HTTPClient
import HTTPServer

/// The OpenAI-compatible pass-through: `GET /v1/models` lists the allowed aliases and
/// `POST /v1/chat/completions` relays a chat (streamed or not) to the upstream with the
/// alias rewritten, `max_tokens` capped and the server's key.
extension Gateway {
    func models() -> HTTPResponse {
        var body = JSONWriter()
        body.object {
            $0.field("object", "list")
            $0.field("data", array: configuration.effectiveModelAliases) { item, alias in
                item.field("id", alias.alias)
                item.field("object", "model")
                item.field("created", 0)
                item.field("owned_by", "text-gateway")
            }
        }
        return HTTPResponse(headers: ["Content-Type": "application/json; charset=utf-8"], body: .bytes(body.bytes))
    }

    func chatCompletions(_ request: HTTPRequest) async throws(GatewayError) -> HTTPResponse {
        let record = AccessRecord.current
        if let contentType = request.headers["Content-Type"], !ProcessRequest.isJSON(contentType) { throw .unsupportedMediaType }
        var chatRequest: ChatCompletionRequest
        do {
            chatRequest = try JSON.decode(ChatCompletionRequest.self, from: request.body)
        } catch {
            throw .invalidJSON
        }
        guard !chatRequest.messages.isEmpty, chatRequest.messages.count <= configuration.maxMessages else { throw .invalidMessages }
        guard let model = configuration.upstreamModel(forAlias: chatRequest.model) else { throw .modelNotFound(chatRequest.model) }
        guard let chat else { throw .keyNotConfigured }
        record?.update {
            $0.model = model
            $0.task = "chat"
        }
        chatRequest.model = model
        let cap = configuration.maxTokens
        if let asked = chatRequest.maxCompletionTokens {
            chatRequest.maxCompletionTokens = min(asked, cap)
        } else {
            chatRequest.maxTokens = min(chatRequest.maxTokens ?? cap, cap)
        }
        let requestID = request.headers["X-Request-Id"] ?? RequestID.make()
        let upstreamStart = MonotonicInstant.now()

        if chatRequest.stream == true {
            let bytes: HTTPClientBodyStream
            do {
                bytes = try await chat.streamBytes(chatRequest, requestID: requestID, timeout: configuration.streamTotalTimeout)
            } catch {
                record?.update { $0.upstreamNanoseconds = upstreamStart.nanoseconds(until: .now()) }
                logUpstreamFailure(error, requestID: requestID)
                throw .upstream(error)
            }
            let relay = StreamRelay(bytes: bytes, control: StreamControl(limits: streamLimits), record: record, upstreamStart: upstreamStart)
            return HTTPResponse(
                headers: ["Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"],
                body: .stream { [self] writer in
                    try await withStreamRegistered(relay.control) { try await relay.run(writer) }
                }
            )
        }

        let response: HTTPClientResponse
        do {
            response = try await chat.forward(chatRequest, requestID: requestID)
        } catch {
            record?.update {
                $0.upstreamNanoseconds = upstreamStart.nanoseconds(until: .now())
                $0.outcome = error.isCancellation ? "cancelled" : "upstream_failure"
            }
            logUpstreamFailure(error, requestID: requestID)
            throw .upstream(error)
        }
        let usage = (try? JSON.decode(ChatCompletion.self, from: response.body))?.usage
        record?.update {
            $0.upstreamNanoseconds = upstreamStart.nanoseconds(until: .now())
            $0.inputTokens = usage?.promptTokens
            $0.outputTokens = usage?.completionTokens
        }
        return HTTPResponse(headers: ["Content-Type": "application/json"], body: .bytes(response.body))
    }
}

/// Relays an upstream event stream to a `/v1` client byte for byte, as it arrives, while
/// reading along for `[DONE]` and usage; an upstream that stops early, fails or stalls gets
/// an error event in OpenAI's shape.
struct StreamRelay: Sendable {
    let bytes: HTTPClientBodyStream
    let control: StreamControl
    let record: AccessRecord?
    let upstreamStart: MonotonicInstant

    private enum Outcome: Sendable {
        case done(Usage?)
        case failed(String)
        case ended(StreamControl.EndReason)
        case clientGone
    }

    func run(_ writer: ResponseBodyWriter) async throws {
        let outcome = await control.run(writer, clientGone: Outcome.clientGone) { await relay(writer) }
        bytes.cancel()
        record?.update { $0.upstreamNanoseconds = upstreamStart.nanoseconds(until: .now()) }
        switch outcome {
        case .done(let usage):
            record?.update {
                $0.inputTokens = usage?.promptTokens
                $0.outputTokens = usage?.completionTokens
                $0.outcome = "done"
            }
        case .failed(let code):
            record?.update { $0.errorCode = code }
            try await writer.write(Self.errorEvent(code == "upstream_timeout" ? .upstreamTimeout : .upstreamError))
        case .ended(let reason):
            let error: GatewayError = reason == .shutdown ? .shuttingDown : .upstreamTimeout
            record?.update { $0.errorCode = error.code }
            try await writer.write(Self.errorEvent(error))
        case .clientGone:
            record?.update { $0.outcome = "cancelled" }
        }
    }

    private func relay(_ writer: ResponseBodyWriter) async -> Outcome {
        var decoder = ChatStreamDecoder()
        var usage: Usage?
        do {
            for try await chunk in bytes {
                var sawToken = false
                do {
                    for event in try decoder.feed(chunk) {
                        if case .chunk(let value) = event {
                            if let value = value.usage { usage = value }
                            if !(value.firstDeltaContent ?? "").isEmpty { sawToken = true }
                        }
                    }
                } catch {
                    // Relayed as it came; the client's SDK reports a malformed or error event itself.
                }
                control.noteUpstream(token: sawToken || decoder.isDone)
                try await writer.write(chunk)
                control.noteWrite()
            }
        } catch let error as HTTPClientError {
            if let reason = control.endReason { return .ended(reason) }
            if error.kind == .cancelled { return .clientGone }
            return .failed(error.kind == .timedOut ? "upstream_timeout" : "upstream_error")
        } catch {
            if let reason = control.endReason { return .ended(reason) }
            return .clientGone
        }
        return decoder.isDone ? .done(usage) : .failed("upstream_error")
    }

    static func errorEvent(_ error: GatewayError) -> [UInt8] {
        var body = JSONWriter()
        body.object {
            $0.field("error") { fields in
                fields.field("message", error.message(.english))
                fields.field("type", error.openAIType)
                fields.field("code", error.code)
                fields.nullField("param")
            }
        }
        return ServerSentEventWriter.event(name: nil, data: String(decoding: body.bytes, as: UTF8.self))
    }
}
