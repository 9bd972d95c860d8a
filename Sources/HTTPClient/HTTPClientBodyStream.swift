import EventLoop

/// A response whose body arrives as it is produced.
package struct HTTPClientStreamingResponse: Sendable {
    package var head: HTTPClientResponseHead
    package var body: HTTPClientBodyStream
    package var status: Int { head.status }
}

/// The body of a streamed response: byte chunks in arrival order. Iterate it once.
/// When the last reference to the stream goes away before the end, the transfer is aborted.
package final class HTTPClientBodyStream: AsyncSequence, Sendable {
    package typealias Element = [UInt8]
    private let token: TransferToken

    init(token: TransferToken) {
        self.token = token
    }

    deinit {
        token.cancel()
    }

    /// Aborts the transfer now.
    package func cancel() {
        token.cancel()
    }

    package func makeAsyncIterator() -> Iterator {
        Iterator(stream: self)
    }

    package struct Iterator: AsyncIteratorProtocol {
        let stream: HTTPClientBodyStream

        /// The next chunk, nil at the end; throws ``HTTPClientError`` when the transfer failed.
        package mutating func next() async throws -> [UInt8]? {
            let token = stream.token
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8]?, any Error>) in
                    token.driver.withValue { driver in
                        guard let transfer = token.transfer else {
                            continuation.resume(throwing: HTTPClientError(.cancelled))
                            return
                        }
                        if transfer.nextChunk(continuation) { driver.resume(transfer) }
                    }
                }
            } onCancel: {
                token.cancel()
            }
        }
    }
}
