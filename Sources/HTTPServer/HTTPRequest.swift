public import EventLoop
public import HTTP1

/// A complete request as a handler sees it: the head, the whole body (bounded by the
/// server's body limit) and the peer's address.
///
/// One reference wide: its parts live in one immutable box, so passing a request down a
/// chain of async calls copies a pointer, not the whole head, into every frame. Setting a
/// part makes a new box (copy on write).
public struct HTTPRequest: Sendable {
    private final class Storage: Sendable {
        let head: RequestHead
        let body: [UInt8]
        let remoteAddress: SocketAddress?

        init(head: RequestHead, body: [UInt8], remoteAddress: SocketAddress?) {
            self.head = head
            self.body = body
            self.remoteAddress = remoteAddress
        }
    }

    private var storage: Storage

    public init(head: RequestHead, body: [UInt8] = [], remoteAddress: SocketAddress? = nil) {
        storage = Storage(head: head, body: body, remoteAddress: remoteAddress)
    }

    /// The parsed request line and header fields.
    public var head: RequestHead {
        get { storage.head }
        set { storage = Storage(head: newValue, body: storage.body, remoteAddress: storage.remoteAddress) }
    }

    /// The request body, already de-chunked.
    public var body: [UInt8] {
        get { storage.body }
        set { storage = Storage(head: storage.head, body: newValue, remoteAddress: storage.remoteAddress) }
    }

    /// The address of the connected peer (the proxy, behind a reverse proxy).
    public var remoteAddress: SocketAddress? {
        get { storage.remoteAddress }
        set { storage = Storage(head: storage.head, body: storage.body, remoteAddress: newValue) }
    }

    public var method: HTTPMethod { storage.head.method }
    public var path: String { storage.head.path }
    public var query: String? { storage.head.query }
    public var headers: HTTPHeaders { storage.head.headers }
}
