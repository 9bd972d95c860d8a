public import EventLoop
public import HTTP1
import Synchronization

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
        let hangUp: HangUpPolicy?

        init(head: RequestHead, body: [UInt8], remoteAddress: SocketAddress?, hangUp: HangUpPolicy?) {
            self.head = head
            self.body = body
            self.remoteAddress = remoteAddress
            self.hangUp = hangUp
        }
    }

    private var storage: Storage

    public init(head: RequestHead, body: [UInt8] = [], remoteAddress: SocketAddress? = nil) {
        storage = Storage(head: head, body: body, remoteAddress: remoteAddress, hangUp: nil)
    }

    init(head: RequestHead, body: [UInt8], remoteAddress: SocketAddress?, hangUp: HangUpPolicy) {
        storage = Storage(head: head, body: body, remoteAddress: remoteAddress, hangUp: hangUp)
    }

    /// From now on, the client hanging up no longer cancels this request's handler: it runs
    /// to its end (its response then has nowhere to go, and the finished hook is told so).
    /// For work that must outlive its client, such as an answer kept for the client's retry.
    public func keepRunningIfClientLeaves() {
        storage.hangUp?.keepsHandler.store(true, ordering: .relaxed)
    }

    /// The parsed request line and header fields.
    public var head: RequestHead {
        get { storage.head }
        set {
            storage = Storage(
                head: newValue, body: storage.body, remoteAddress: storage.remoteAddress, hangUp: storage.hangUp)
        }
    }

    /// The request body, already de-chunked.
    public var body: [UInt8] {
        get { storage.body }
        set {
            storage = Storage(
                head: storage.head, body: newValue, remoteAddress: storage.remoteAddress, hangUp: storage.hangUp)
        }
    }

    /// The address of the connected peer (the proxy, behind a reverse proxy).
    public var remoteAddress: SocketAddress? {
        get { storage.remoteAddress }
        set {
            storage = Storage(head: storage.head, body: storage.body, remoteAddress: newValue, hangUp: storage.hangUp)
        }
    }

    public var method: HTTPMethod { storage.head.method }
    public var path: String { storage.head.path }
    public var query: String? { storage.head.query }
    public var headers: HTTPHeaders { storage.head.headers }
}

/// Whether a connection's hang-up cancels its current handler: one per connection, lowered
/// for each request it dispatches.
final class HangUpPolicy: Sendable {
    let keepsHandler = Atomic<Bool>(false)
}
