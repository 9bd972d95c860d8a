public import HTTPClient

/// Calls an OpenAI-compatible `POST {baseURL}/chat/completions` with a server-side key.
public struct ChatClient: Sendable {
    /// The base URL without a trailing slash, e.g. `https://api.darvareh.ir/v1`.
    public let baseURL: String
    /// `Bearer <key>` and `<baseURL>/chat/completions`, built once rather than per call.
    private let authorization: String
    private let completionsURL: String
    private let httpClient: HTTPClient
    private let timeout: Duration?

    /// - Parameter timeout: the total time per call; nil for the HTTP client's default.
    public init(httpClient: HTTPClient, baseURL: String, apiKey: String, timeout: Duration? = nil) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        authorization = "Bearer " + apiKey
        completionsURL = base + "/chat/completions"
        self.httpClient = httpClient
        self.timeout = timeout
    }

    /// The completion and the raw answer's usage; throws ``ChatError`` only.
    public func complete(_ request: ChatCompletionRequest, requestID: String? = nil) async throws(ChatError) -> ChatCompletion {
        try await complete(body: request.jsonBytes(), requestID: requestID)
    }

    /// ``complete(_:requestID:)`` for a request already encoded, such as a
    /// ``ChatRequestBodyTemplate``'s body; `stream` must not be set in it.
    public func complete(body: [UInt8], requestID: String? = nil) async throws(ChatError) -> ChatCompletion {
        let response = try await send(body: body, requestID: requestID)
        guard (200..<300).contains(response.status) else {
            throw .httpStatus(response.status, error: UpstreamErrorBody.decode(from: response.body), retryAfter: response.header("Retry-After"))
        }
        let completion: ChatCompletion
        do {
            completion = try ChatCompletion(jsonBytes: response.body)
        } catch {
            throw .unreadableBody
        }
        guard let content = completion.firstContent, !content.allSatisfy(\.isWhitespace) else { throw .noContent }
        return completion
    }

    /// Starts a streamed completion (`stream: true`, usage included) and returns once the
    /// upstream answered 2xx; the events follow as the upstream sends them.
    /// - Parameter timeout: the whole stream's time limit; nil for the client's default.
    public func stream(_ request: ChatCompletionRequest, requestID: String? = nil, timeout: Duration? = nil) async throws(ChatError) -> ChatCompletionStream {
        ChatCompletionStream(body: try await streamBytes(request, requestID: requestID, timeout: timeout))
    }

    /// Starts a streamed completion and returns the upstream's raw event-stream bytes once it
    /// answered 2xx (for relaying them as they come). `stream` and `stream_options` are set.
    public func streamBytes(_ request: ChatCompletionRequest, requestID: String? = nil, timeout: Duration? = nil) async throws(ChatError) -> HTTPClientBodyStream {
        var request = request
        request.stream = true
        request.streamOptions = ChatCompletionRequest.StreamOptions(includeUsage: true)
        let body = request.jsonBytes()
        let streaming: HTTPClientStreamingResponse
        do {
            streaming = try await httpClient.stream(httpRequest(body: body, requestID: requestID, accept: "text/event-stream", timeout: timeout))
        } catch {
            throw Self.map(error)
        }
        guard (200..<300).contains(streaming.status) else {
            // Error bodies are small: read them whole (bounded) for the log and the mapping.
            var bytes: [UInt8] = []
            do {
                for try await chunk in streaming.body where bytes.count < 64 * 1024 { bytes += chunk }
            } catch {}
            throw .httpStatus(streaming.status, error: UpstreamErrorBody.decode(from: bytes), retryAfter: streaming.head.header("Retry-After"))
        }
        return streaming.body
    }

    /// Sends `request` as it is and returns the upstream's 2xx answer unread (for relaying);
    /// a non-2xx answer throws ``ChatError/httpStatus(_:error:retryAfter:)``.
    public func forward(_ request: ChatCompletionRequest, requestID: String? = nil) async throws(ChatError) -> HTTPClientResponse {
        let response = try await send(body: request.jsonBytes(), requestID: requestID)
        guard (200..<300).contains(response.status) else {
            throw .httpStatus(response.status, error: UpstreamErrorBody.decode(from: response.body), retryAfter: response.header("Retry-After"))
        }
        return response
    }

    private func send(body: [UInt8], requestID: String?) async throws(ChatError) -> HTTPClientResponse {
        do {
            return try await httpClient.send(httpRequest(body: body, requestID: requestID, accept: "application/json", timeout: timeout))
        } catch {
            throw Self.map(error)
        }
    }

    private func httpRequest(body: [UInt8], requestID: String?, accept: String, timeout: Duration?) -> HTTPClientRequest {
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(4)
        headers.append(("Authorization", authorization))
        headers.append(("Content-Type", "application/json"))
        headers.append(("Accept", accept))
        if let requestID { headers.append(("X-Request-Id", requestID)) }
        return HTTPClientRequest(method: "POST", url: completionsURL, headers: headers, body: body, timeout: timeout ?? self.timeout)
    }

    static func map(_ error: any Error) -> ChatError {
        if let error = error as? HTTPClientError { return ChatError(error) }
        if error is CancellationError { return .cancelled }
        return .transport(detail: "unexpected failure")
    }
}

/// The events of a streamed completion, decoded as the bytes arrive. Ends after `[DONE]`;
/// throws ``ChatError`` when the upstream sends an error event, malformed data, or stops
/// without `[DONE]`.
public struct ChatCompletionStream: AsyncSequence, Sendable {
    public typealias Element = ChatCompletionChunk
    let body: HTTPClientBodyStream

    /// Decodes the chunks of an event stream.
    public init(body: HTTPClientBodyStream) {
        self.body = body
    }

    /// Aborts the upstream transfer.
    public func cancel() { body.cancel() }

    public func makeAsyncIterator() -> Iterator {
        Iterator(bytes: body.makeAsyncIterator())
    }

    public struct Iterator: AsyncIteratorProtocol {
        var bytes: HTTPClientBodyStream.Iterator
        var decoder = ChatStreamDecoder()
        var pending: [ChatCompletionChunk] = []
        var finished = false

        public mutating func next() async throws -> ChatCompletionChunk? {
            while true {
                if !pending.isEmpty { return pending.removeFirst() }
                if finished { return nil }
                let chunk: [UInt8]?
                do {
                    chunk = try await bytes.next()
                } catch {
                    finished = true
                    throw ChatClient.map(error)
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
                    case .upstreamError(let body): throw ChatError.streamError(body)
                    case .truncated: throw ChatError.transport(detail: "stream ended without [DONE]")
                    case .malformedChunk, .eventStream: throw ChatError.transport(detail: "malformed stream")
                    }
                }
                if chunk == nil { finished = true }
            }
        }
    }
}
