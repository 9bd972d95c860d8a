import EventLoop
public import HTTP1

/// Everything an ``HTTPServer`` can be told: where to listen, how many loops, limits and timeouts.
public struct ServerConfiguration: Sendable {
    /// Host to listen on: a numeric IPv4/IPv6 address or a name (`localhost`). `::` listens on
    /// every IPv6 and IPv4 address.
    public var host: String = "127.0.0.1"
    /// Port to listen on; 0 picks a free port (read it from ``HTTPServer/localAddress``).
    public var port: Int = 8080
    /// Event loops (threads); defaults to one per core.
    public var loopCount: Int = EventLoopGroup.processorCount
    /// Listen backlog.
    public var backlog: Int32 = 4096
    /// Parser limits: request line, header section, header count, body size.
    public var limits = RequestParser.Limits()
    /// At this many open connections the server stops accepting; newer connections wait in
    /// the listen backlog until some close.
    public var maxConnections: Int = 100_000
    /// From the first byte of a request to the end of its header section.
    public var headerReadTimeout: Duration = .seconds(10)
    /// From the end of the header section to the end of the body.
    public var bodyReadTimeout: Duration = .seconds(30)
    /// A kept-alive connection with no request in progress.
    public var idleTimeout: Duration = .seconds(60)
    /// A response write that makes no progress.
    public var writeStallTimeout: Duration = .seconds(30)
    /// After the last response on a closing connection, how long unread input is discarded
    /// so the client reads the response instead of a reset.
    public var lingerTimeout: Duration = .seconds(2)
    /// A stream producer waits while more than this many bytes are unsent.
    public var writeHighWatermark: Int = 256 * 1024
    /// Builds the response for a request the server refuses before any handler runs: a
    /// parse error, a body over the limit or a read timeout. `head` is known for a body
    /// that is too large. The server adds `Connection: close`.
    public var protocolErrorResponder: @Sendable (ProtocolError) -> HTTPResponse = { error in
        HTTPResponse.text(error.status.reasonPhrase + "\n", status: error.status)
    }
    /// Turns an error thrown by the responder into a response. The default answers an
    /// ``HTTPError`` with its status and anything else with a bare `500`.
    public var errorResponder: @Sendable (any Error, HTTPRequest) -> HTTPResponse = { error, _ in
        if let error = error as? HTTPError { return error.response }
        return HTTPResponse.text("Internal Server Error\n", status: .internalServerError)
    }

    public init() {}
}

/// A request refused by the server itself.
public struct ProtocolError: Sendable {
    /// The status the client gets: 400, 408, 413, 414, 431, 501 or 505.
    public var status: HTTPStatus
    /// The parser's finding, or nil for a read timeout.
    public var parseError: HTTPParseError?
    /// The request head when it was complete.
    public var head: RequestHead?
}
