import EventLoop

/// A response whose body arrives as it is produced.
public struct HTTPClientStreamingResponse: Sendable {
    public var head: HTTPClientResponseHead
    public var body: HTTPClientBodyStream
    public var status: Int { head.status }
}

/// The body of a streamed response: byte chunks in arrival order. Iterate it once.
/// When the last reference to the stream goes away before the end, the transfer is aborted.
public final class HTTPClientBodyStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    private let token: TransferToken

    init(token: TransferToken) {
        self.token = token
    }

    deinit {
        token.cancel()
    }

    /// Aborts the transfer now.
    public func cancel() {
        token.cancel()
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(stream: self)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let stream: HTTPClientBodyStream

        /// The next chunk, nil at the end; throws ``HTTPClientError`` when the transfer failed.
        public mutating func next() async throws -> [UInt8]? {
            let token = stream.token
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8]?, any Error>) in
                    token.multi.withValue { multi in
                        guard let transfer = token.transfer else {
                            continuation.resume(throwing: HTTPClientError(.cancelled))
                            return
                        }
                        if transfer.nextChunk(continuation) { multi.resume(transfer) }
                    }
                }
            } onCancel: {
                token.cancel()
            }
        }
    }
}
