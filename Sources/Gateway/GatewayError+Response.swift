import ChatAPI
import HTTP1
import HTTPServer

// Apart from the type so that GatewayError.swift needs only HTTP1: the ProcessBody fuzz
// target compiles it without the HTTP server and the upstream client.
extension GatewayError {
    /// Maps an upstream failure. The upstream's own error text is never part of the result.
    static func upstream(_ error: ChatError) -> GatewayError {
        switch error {
        case .timedOut:
            return .upstreamTimeout
        case .httpStatus(let status, let body, let retryAfter):
            if status == 400 && body?.code == "context_length_exceeded" { return .textTooLong }
            if status == 429 || status == 503 {
                var busy = GatewayError.upstreamBusy
                if let retryAfter, Self.isValidRetryAfter(retryAfter) {
                    busy.headers.add(name: "Retry-After", value: retryAfter)
                }
                return busy
            }
            return .upstreamError
        case .noContent:
            return .emptyResult
        case .couldNotConnect, .cancelled, .streamError, .unreadableBody, .transport:
            return .upstreamError
        }
    }

    /// `Retry-After` is passed on only when it is a delay in seconds or an HTTP date, nothing else.
    private static func isValidRetryAfter(_ value: String) -> Bool {
        guard !value.isEmpty, value.utf8.count <= 64 else { return false }
        return value.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }

    /// The error in OpenAI's shape, `{"error":{"message","type","code","param"}}`, for `/v1`
    /// clients (their SDKs read it).
    func openAIResponse(language: Language) -> HTTPResponse {
        var body = JSONWriter()
        body.object {
            $0.field("error") { error in
                error.field("message", message(language))
                error.field("type", openAIType)
                error.field("code", code)
                error.nullField("param")
            }
        }
        var headers = self.headers
        headers.replaceOrAdd(name: "Content-Type", value: "application/json; charset=utf-8")
        return HTTPResponse(status: status, headers: headers, body: .bytes(body.bytes))
    }

    var openAIType: String {
        switch status.code {
        case 401: return "authentication_error"
        case 429: return "rate_limit_error"
        case 500...: return "server_error"
        default: return "invalid_request_error"
        }
    }

    /// The JSON error response: `{"error":true,"reason","message","code","requestId"}`.
    func response(requestID: String, language: Language) -> HTTPResponse {
        let message = self.message(language)
        var body = JSONWriter()
        body.object {
            $0.field("error", true)
            $0.field("reason", message)
            $0.field("message", message)
            $0.field("code", code)
            $0.field("requestId", requestID)
        }
        var headers = self.headers
        headers.replaceOrAdd(name: "Content-Type", value: "application/json; charset=utf-8")
        return HTTPResponse(status: status, headers: headers, body: .bytes(body.bytes))
    }
}
