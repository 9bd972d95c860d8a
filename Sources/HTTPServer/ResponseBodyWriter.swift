import EventLoop

/// Writes the pieces of a streamed response body. Each `write` returns once the piece is
/// queued and the connection's unsent bytes are under the high watermark, so a slow client
/// slows the producer instead of growing memory. Throws ``ConnectionClosedError`` when the
/// client has gone.
public struct ResponseBodyWriter: Sendable {
    private enum Target: Sendable {
        case connection(LoopBound<HTTPConnection>)
        case sink(@Sendable ([UInt8]) async throws -> Void)
    }

    private let target: Target

    init(connection: LoopBound<HTTPConnection>) {
        target = .connection(connection)
    }

    /// A writer whose pieces go to `sink` instead of a connection: a body produced once and
    /// read by several clients, or by none once its own has gone.
    public init(sink: @escaping @Sendable ([UInt8]) async throws -> Void) {
        target = .sink(sink)
    }

    /// Sends `bytes` as the next piece of the body (an empty piece sends nothing).
    public func write(_ bytes: [UInt8]) async throws {
        guard !bytes.isEmpty else { return }
        switch target {
        case .connection(let connection):
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                connection.withValue { $0.writeBodyChunk(bytes, continuation: continuation) }
            }
        case .sink(let sink):
            try await sink(bytes)
        }
    }

    /// Sends the UTF-8 bytes of `text`.
    public func write(_ text: String) async throws {
        try await write(Array(text.utf8))
    }
}
