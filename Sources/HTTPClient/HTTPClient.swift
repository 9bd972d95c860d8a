import CCurl
package import EventLoop
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An asynchronous HTTP client on libcurl's multi interface, driven by event loops.
///
/// Each loop has one curl multi handle whose sockets live in the loop's epoll, so thousands
/// of requests can be in flight on a handful of threads, and connections (HTTP/1.1
/// keep-alive, HTTP/2 multiplexing over TLS) are reused across requests. Called from a task
/// running on one of the group's loops, a request stays on that loop.
///
/// Cancelling the calling task removes the transfer from curl at once and closes its
/// connection. All errors thrown are ``HTTPClientError``.
package final class HTTPClient: Sendable {
    private let group: EventLoopGroup
    private let ownsGroup: Bool
    private let multis: [LoopBound<CurlMulti>]
    private let cursor = Atomic<Int>(0)
    private let isShutdown = Atomic<Bool>(false)
    /// The configuration the client was created with.
    package let configuration: HTTPClientConfiguration

    private static let globalInit: Bool = {
        // Once per process, before any handle exists. SIGPIPE is ignored because every
        // handle sets CURLOPT_NOSIGNAL, and TLS writes to a closed socket must not kill us.
        signal(SIGPIPE, SIG_IGN)
        return curl_global_init(CCurl_GLOBAL_DEFAULT) == CURLE_OK
    }()

    /// Initialises libcurl (and ignores SIGPIPE) for the process. `curl_global_init` is not
    /// thread-safe: call this first thing in `main`, before any thread starts; a client
    /// calls it too, and a second call does nothing. False when libcurl failed to start.
    @discardableResult
    package static func initializeGlobally() -> Bool {
        globalInit
    }

    /// Creates a client on `group`'s loops, or on one loop of its own when no group is given.
    package init(configuration: HTTPClientConfiguration = HTTPClientConfiguration(), group: EventLoopGroup? = nil)
        throws
    {
        guard Self.globalInit else { throw HTTPClientError(.invalidRequest, "curl_global_init failed") }
        self.configuration = configuration
        if let group {
            self.group = group
            ownsGroup = false
        } else {
            self.group = try EventLoopGroup(loopCount: 1, namePrefix: "http-client")
            ownsGroup = true
        }
        let perLoop = max(1, configuration.maxConnections / self.group.loops.count)
        var multis: [LoopBound<CurlMulti>] = []
        for loop in self.group.loops {
            let multi = try CurlMulti(loop: loop, configuration: configuration, maxConnections: perLoop)
            multis.append(LoopBound(handingOver: multi, to: loop))
        }
        self.multis = multis
    }

    /// Sends `request` and returns the whole response (up to ``HTTPClientConfiguration/maxResponseBytes``).
    /// Any status is a response; only transport failures throw.
    package func send(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        let token = TransferToken(multi: pickMulti())
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<HTTPClientResponse, any Error>) in
                token.multi.withValue { multi in
                    do {
                        try multi.start(request, streaming: false) { transfer in
                            transfer.waitForResponse(continuation)
                            return token.attach(transfer)
                        }
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
        } onCancel: {
            token.cancel()
        }
    }

    /// Sends `request` and returns once the response head has arrived; the body follows as
    /// an async sequence of byte chunks. When the consumer falls behind, the transfer pauses.
    /// Dropping the stream or cancelling the consuming task aborts the transfer.
    package func stream(_ request: HTTPClientRequest) async throws -> HTTPClientStreamingResponse {
        let token = TransferToken(multi: pickMulti())
        let head = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<HTTPClientResponseHead, any Error>) in
                token.multi.withValue { multi in
                    do {
                        try multi.start(request, streaming: true) { transfer in
                            guard token.attach(transfer) else {
                                continuation.resume(throwing: HTTPClientError(.cancelled))
                                return false
                            }
                            transfer.waitForHead(continuation)
                            return true
                        }
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
        } onCancel: {
            token.cancel()
        }
        return HTTPClientStreamingResponse(head: head, body: HTTPClientBodyStream(token: token))
    }

    /// Fails requests in flight with `.shutdown`, closes every upstream connection and frees
    /// curl's handles. A group the client made itself is stopped too.
    package func shutdown() async {
        guard !isShutdown.exchange(true, ordering: .relaxed) else { return }
        for multi in multis {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                multi.loop.execute {
                    multi.value.shutdown()
                    continuation.resume()
                }
            }
        }
        if ownsGroup { await group.shutdownGracefully() }
    }

    /// Transfers in flight across loops (for tests and metrics).
    package func activeTransferCount() async -> Int {
        await sum { $0.activeTransfers }
    }

    /// Easy handles kept idle for later transfers across loops (for tests).
    package func idleHandleCount() async -> Int {
        await sum { $0.idleHandleCount }
    }

    /// `count` of every loop's multi handle, read on its loop, added up.
    private func sum(_ count: @escaping @Sendable (CurlMulti) -> Int) async -> Int {
        var total = 0
        for multi in multis {
            total += await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
                multi.withValue { continuation.resume(returning: count($0)) }
            }
        }
        return total
    }

    /// The multi handle of the calling loop when called on one, otherwise the next in turn.
    private func pickMulti() -> LoopBound<CurlMulti> {
        if multis.count == 1 { return multis[0] }
        for multi in multis where multi.loop.inEventLoop { return multi }
        return multis[cursor.add(1, ordering: .relaxed).oldValue % multis.count]
    }
}
