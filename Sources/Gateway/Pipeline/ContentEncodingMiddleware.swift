import HTTP1
import HTTPServer

/// Refuses a request body in any content coding but `identity` with `415
/// unsupported_media_type` and `Accept-Encoding: identity` (RFC 9110 §8.4, §15.5.16): the
/// gateway decodes no coding, and a gzip body read as it stands would be answered as broken
/// JSON, or relayed upstream as bytes no one can read. On the routes that take a body, after
/// authentication and limits, where the content type is checked too.
struct ContentEncodingMiddleware: Middleware {
    func handle(
        _ request: HTTPRequest, context: RequestContext, report: inout RouteReport, next: @escaping RouteResponder
    ) async throws -> RouteAnswer {
        if let codings = request.headers.combinedValue("Content-Encoding"), !Self.isIdentity(codings) {
            throw GatewayError.unsupportedContentEncoding
        }
        return await next(request, context, &report)
    }

    /// Whether every coding of the list is `identity` (case-insensitive); an empty list
    /// names none, so the body is as sent. Every element counts: no limit on the list.
    static func isIdentity(_ codings: String) -> Bool {
        HeaderElement.list(codings, limit: .max).allSatisfy { $0.valueIs("identity") }
    }
}
