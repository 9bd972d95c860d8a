public import EventLoop
public import HTTP1

/// A complete request as a handler sees it: the head, the whole body (bounded by the
/// server's body limit) and the peer's address.
public struct HTTPRequest: Sendable {
    /// The parsed request line and header fields.
    public var head: RequestHead
    /// The request body, already de-chunked.
    public var body: [UInt8]
    /// The address of the connected peer (the proxy, behind a reverse proxy).
    public var remoteAddress: SocketAddress?

    public init(head: RequestHead, body: [UInt8] = [], remoteAddress: SocketAddress? = nil) {
        self.head = head
        self.body = body
        self.remoteAddress = remoteAddress
    }

    public var method: HTTPMethod { head.method }
    public var path: String { head.path }
    public var query: String? { head.query }
    public var headers: HTTPHeaders { head.headers }
}
