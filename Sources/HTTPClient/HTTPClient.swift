import CCurl
package import EventLoop
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An asynchronous HTTP client driven by event loops: plain `http://` requests on its own
/// HTTP/1.1 connections (``PlainConnections``), https (and what those do not take) on
/// libcurl's multi interface.
///
/// Each loop has its own connections and one curl multi handle, all in the loop's epoll, so
/// thousands of requests can be in flight on a handful of threads, and connections (HTTP/1.1
/// keep-alive, HTTP/2 multiplexing over TLS) are reused across requests. Called from a task
/// running on one of the group's loops, a request stays on that loop.
///
/// Cancelling the calling task removes the transfer from curl at once and closes its
/// connection. All errors thrown are ``HTTPClientError``.
package final class HTTPClient: Sendable {
    private let group: EventLoopGroup
    private let ownsGroup: Bool
    private let multis: [LoopBound<CurlMulti>]
    /// Each loop's own HTTP/1.1 connections, when plain http goes over them.
    private let plains: [LoopBound<PlainConnections>]?
    /// The same as ``multis`` and ``plains``, as what starts a request.
    private let curlDrivers: [LoopBound<any TransferDriver>]
    private let plainDrivers: [LoopBound<any TransferDriver>]?
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
        var curlDrivers: [LoopBound<any TransferDriver>] = []
        var plains: [LoopBound<PlainConnections>] = []
        var plainDrivers: [LoopBound<any TransferDriver>] = []
        let ownConnections = configuration.ownHTTP1Connections && !Self.proxyInEnvironment
        for loop in self.group.loops {
            let multi = try CurlMulti(loop: loop, configuration: configuration, maxConnections: perLoop)
            multis.append(LoopBound(handingOver: multi, to: loop))
            curlDrivers.append(LoopBound(handingOver: multi, to: loop))
            if ownConnections {
                let plain = PlainConnections(loop: loop, configuration: configuration, maxConnections: perLoop)
                plains.append(LoopBound(handingOver: plain, to: loop))
                plainDrivers.append(LoopBound(handingOver: plain, to: loop))
            }
        }
        self.multis = multis
        self.curlDrivers = curlDrivers
        self.plains = ownConnections ? plains : nil
        self.plainDrivers = ownConnections ? plainDrivers : nil
    }

    /// Whether the environment names a proxy curl would send plain http through.
    private static var proxyInEnvironment: Bool {
        let names: [String] = ["http_proxy", "ALL_PROXY", "all_proxy"]
        return names.contains { name in getenv(name).map { $0.pointee != 0 } ?? false }
    }

    /// Sends `request` and returns the whole response (up to ``HTTPClientConfiguration/maxResponseBytes``).
    /// Any status is a response; only transport failures throw.
    package func send(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        let token = TransferToken(driver: driver(for: request.url))
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<HTTPClientResponse, any Error>) in
                token.driver.withValue { driver in
                    do {
                        try driver.start(request, streaming: false) { transfer in
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
        let token = TransferToken(driver: driver(for: request.url))
        let head = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<HTTPClientResponseHead, any Error>) in
                token.driver.withValue { driver in
                    do {
                        try driver.start(request, streaming: true) { transfer in
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
        for (index, multi) in multis.enumerated() {
            let plain = plains?[index]
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                multi.loop.execute {
                    plain?.value.shutdown()
                    multi.value.shutdown()
                    continuation.resume()
                }
            }
        }
        if ownsGroup { await group.shutdownGracefully() }
    }

    /// Transfers in flight across loops (for tests and metrics).
    package func activeTransferCount() async -> Int {
        var count = await sum { $0.activeTransfers }
        for plain in plains ?? [] {
            count += await withCheckedContinuation { continuation in
                plain.withValue { continuation.resume(returning: $0.activeTransfers) }
            }
        }
        return count
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

    /// What carries a request to `url` on the calling loop when called on one, otherwise on
    /// the next in turn: the loop's own connections for plain http they take, else curl.
    private func driver(for url: String) -> LoopBound<any TransferDriver> {
        let drivers = plainDrivers.flatMap { PlainTarget.takes(url) ? $0 : nil } ?? curlDrivers
        if drivers.count == 1 { return drivers[0] }
        for driver in drivers where driver.loop.inEventLoop { return driver }
        return drivers[cursor.add(1, ordering: .relaxed).oldValue % drivers.count]
    }
}
