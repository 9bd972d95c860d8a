import EventLoop

/// Writes the pieces of a streamed response body. Each `write` returns once the piece is
/// queued and the connection's unsent bytes are under the high watermark, so a slow client
/// slows the producer instead of growing memory. Throws ``ConnectionClosedError`` when the
/// client has gone.
public struct ResponseBodyWriter: Sendable {
    let connection: LoopBound<HTTPConnection>

    /// Sends `bytes` as the next piece of the body (an empty piece sends nothing).
    public func write(_ bytes: [UInt8]) async throws {
        guard !bytes.isEmpty else { return }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            connection.withValue { $0.writeBodyChunk(bytes, continuation: continuation) }
        }
    }

    /// Sends the UTF-8 bytes of `text`.
    public func write(_ text: String) async throws {
        try await write(Array(text.utf8))
    }
}
