import ChatAPI
import HTTP1
import HTTPServer
import JSON

/// The two shapes a gateway error takes, one per route group.
enum ErrorShape: Sendable {
    /// The contract's `{"error":true,"reason","message","code","requestId"}` (`/api`, and
    /// every path outside `/v1`).
    case gateway
    /// OpenAI's `{"error":{"message","type","code","param"}}` (`/v1`: its SDKs read it).
    case openAI
}

/// The one place a ``GatewayError`` becomes an error answer: a JSON response or the
/// server-sent event that ends a stream, in either shape. (A job's `error`, in its JSON and
/// its events, is ``JobRoutes``' own `{"code","message"}`.)
enum ErrorRenderer {
    /// The error as a whole response.
    static func response(_ error: GatewayError, shape: ErrorShape, requestID: String, language: Language)
        -> HTTPResponse
    {
        var headers = error.headers
        headers.replaceOrAdd(name: "Content-Type", value: "application/json; charset=utf-8")
        let status = shape == .openAI ? (error.openAI?.status ?? error.status) : error.status
        return HTTPResponse(
            status: status, headers: headers,
            body: .bytes(body(error, shape: shape, requestID: requestID, language: language)))
    }

    /// The error as the last event of a stream: `event: error` with the body and `status`
    /// for `/api`; a data-only event with OpenAI's body for `/v1`.
    static func event(_ error: GatewayError, shape: ErrorShape, requestID: String, language: Language) -> [UInt8] {
        switch shape {
        case .gateway:
            var writer = JSONWriter()
            writer.object {
                gatewayFields(error, requestID: requestID, language: language, into: &$0)
                $0.field("status", error.status.code)
            }
            return ServerSentEventWriter.event(name: "error", data: String(decoding: writer.bytes, as: UTF8.self))
        case .openAI:
            let bytes = body(error, shape: .openAI, requestID: requestID, language: language)
            return ServerSentEventWriter.event(name: nil, data: String(decoding: bytes, as: UTF8.self))
        }
    }

    private static func body(_ error: GatewayError, shape: ErrorShape, requestID: String, language: Language) -> [UInt8]
    {
        var writer = JSONWriter()
        switch shape {
        case .gateway:
            writer.object { gatewayFields(error, requestID: requestID, language: language, into: &$0) }
        case .openAI:
            writer.object {
                $0.field("error") { fields in
                    fields.field("message", error.message(language))
                    fields.field("type", openAIType(error))
                    fields.field("code", (error.openAI?.code ?? error.code).rawValue)
                    if let param = error.openAI?.param {
                        fields.field("param", param)
                    } else {
                        fields.nullField("param")
                    }
                    if let scope = error.budgetScope { fields.field("scope", scope.rawValue) }
                }
            }
        }
        return writer.bytes
    }

    private static func gatewayFields(
        _ error: GatewayError, requestID: String, language: Language, into object: inout JSONWriter
    ) {
        let message = error.message(language)
        object.field("error", true)
        object.field("reason", message)
        object.field("message", message)
        object.field("code", error.code.rawValue)
        if let attestError = error.attestError { object.field("attestError", attestError) }
        if let scope = error.budgetScope { object.field("scope", scope.rawValue) }
        object.field("requestId", requestID)
    }

    /// OpenAI's error `type` for a status.
    static func openAIType(_ error: GatewayError) -> String {
        switch (error.openAI?.status ?? error.status).code {
        case 401: return "authentication_error"
        case 429: return "rate_limit_error"
        case 500...: return "server_error"
        default: return "invalid_request_error"
        }
    }
}
