public import HTTP1

/// An error a handler (or the router) throws to answer with a given status.
///
/// The server turns an uncaught `HTTPError` into a plain-text response with its status and
/// headers; any other uncaught error becomes a bare `500` whose details never reach the
/// client. Applications map errors to their own bodies in one middleware in front of the
/// router.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var message: String

    public init(_ status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders(), message: String? = nil) {
        self.status = status
        self.headers = headers
        self.message = message ?? status.reasonPhrase
    }

    public var description: String { "HTTPError(\(status.code) \(message))" }

    /// The plain-text response for this error.
    public var response: HTTPResponse {
        HTTPResponse.text(message + "\n", status: status, headers: headers)
    }
}
