public import HTTP1

/// What a handler answers: status, header fields and a body that is either bytes or a
/// stream produced while the response is being sent.
///
/// The server adds `Date`, the framing (`Content-Length` or chunked) and `Connection`.
public struct HTTPResponse: Sendable {
    /// A response body.
    public enum Body: Sendable {
        /// A complete body, sent with `Content-Length`.
        case bytes([UInt8])
        /// A body written piece by piece through a ``ResponseBodyWriter``, sent chunked
        /// (close-delimited to HTTP/1.0 clients). Each write waits while the client reads
        /// slower than the stream produces, so memory per connection stays bounded. When the
        /// client goes away the next write throws ``ConnectionClosedError``.
        case stream(@Sendable (ResponseBodyWriter) async throws -> Void)
    }

    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: Body
    /// Called by the server exactly once when this response has ended, however it ended:
    /// written whole, cut short by a failing stream, or never (fully) written because the
    /// connection closed first. The one place an application learns how a request ended.
    public var finished: (nonisolated(nonsending) @Sendable (ResponseEnd) async -> Void)?

    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A `text/plain; charset=utf-8` response.
    public static func text(_ text: String, status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders())
        -> HTTPResponse
    {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: "text/plain; charset=utf-8")
        return HTTPResponse(status: status, headers: headers, body: .bytes(Array(text.utf8)))
    }
}

/// The client closed the connection (or the server closed it) before the response was sent.
public struct ConnectionClosedError: Error, Hashable, Sendable, CustomStringConvertible {
    public init() {}
    public var description: String { "the connection was closed" }
}

/// How a response ended, as the server saw it (``HTTPResponse/finished``).
public enum ResponseEnd: Sendable, Hashable {
    /// The whole response was handed to the connection.
    case completed
    /// The connection closed before the whole response could be written: the client went
    /// away (or reset the connection) before or while it was answered.
    case connectionClosed
    /// A streamed body's producer threw after the head was sent; the body was cut short and
    /// the connection closed so the client cannot take it for a whole one.
    case bodyFailed
}
