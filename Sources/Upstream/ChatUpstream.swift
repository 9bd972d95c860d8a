package import ChatAPI

/// What the routes ask of a chat-completions provider, in ChatAPI values and typed errors
/// only: the seam a pool of providers (retries, fallback) goes behind, and what lets the
/// gateway run in-process against a fake.
package protocol ChatUpstream: Sendable {
    /// One completion for an encoded request body (`stream` unset): the answer with usable
    /// content, or the failure; `timeout` bounds the whole call (nil: the endpoint's own).
    func complete(body: [UInt8], requestID: String?, timeout: Duration?) async throws(ChatError) -> ChatCompletion

    /// Sends a `/v1` request body as it is; the upstream's 2xx body, unread (for relaying).
    func forward(body: [UInt8], requestID: String?, timeout: Duration?) async throws(ChatError) -> [UInt8]

    /// Starts a streamed completion from a body that asks for it (`stream`, and usage when
    /// wanted) and returns once the upstream answered 2xx; its raw event-stream bytes follow.
    /// `timeout` bounds the whole stream, `headTimeout` the wait for the answer's head.
    func streamBytes(body: [UInt8], requestID: String, timeout: Duration, headTimeout: Duration?)
        async throws(ChatError) -> any UpstreamBytes
}

/// The raw body of a streamed upstream answer, chunk by chunk. Read it from one task.
package protocol UpstreamBytes: Sendable {
    /// The next chunk; nil at the end.
    func next() async throws(ChatError) -> [UInt8]?
    /// Aborts the transfer now (what has not been read is dropped).
    func cancel()
}

/// The decoded chunks of an ``UpstreamBytes`` stream. Ends after `[DONE]`; throws
/// ``ChatError`` when the upstream sends an error event, malformed data, or stops without
/// `[DONE]`.
package struct ChatCompletionStream: Sendable {
    package let bytes: any UpstreamBytes
    private var decoder = ChatStreamDecoder()
    private var pending: [ChatCompletionChunk] = []
    private var finished = false

    package init(bytes: any UpstreamBytes) {
        self.bytes = bytes
    }

    package mutating func next() async throws(ChatError) -> ChatCompletionChunk? {
        while true {
            if !pending.isEmpty { return pending.removeFirst() }
            if finished { return nil }
            let chunk: [UInt8]?
            do {
                chunk = try await bytes.next()
            } catch {
                finished = true
                throw error
            }
            do throws(ChatStreamError) {
                let events: [ChatStreamEvent]
                if let chunk { events = try decoder.feed(chunk) } else { events = try decoder.finish() }
                for event in events {
                    switch event {
                    case .chunk(let value): pending.append(value)
                    case .done: finished = true
                    }
                }
            } catch {
                finished = true
                switch error {
                case .upstreamError(let body): throw .streamError(body)
                case .truncated: throw .transport(detail: "stream ended without [DONE]")
                case .malformedChunk, .eventStream: throw .transport(detail: "malformed stream")
                }
            }
            if chunk == nil { finished = true }
        }
    }
}
