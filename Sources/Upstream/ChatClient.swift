package import ChatAPI
package import HTTPClient
import Tracing

/// Calls an OpenAI-compatible `POST {baseURL}/chat/completions` with a server-side key,
/// over the project's libcurl client: the gateway's ``ChatUpstream``.
package struct ChatClient: Sendable {
    /// The base URL without a trailing slash, e.g. `https://api.darvareh.ir/v1`.
    package let baseURL: String
    /// `Bearer <key>` and `<baseURL>/chat/completions`, built once rather than per call.
    private let authorization: String
    private let completionsURL: String
    private let httpClient: HTTPClient
    private let timeout: Duration?
    private let caFile: String?

    /// - Parameters:
    ///   - timeout: the total time per call; nil for the HTTP client's default.
    ///   - caFile: a PEM bundle of the CAs an https upstream's certificate must chain to; nil
    ///     for the system's store.
    package init(
        httpClient: HTTPClient, baseURL: String, apiKey: String, timeout: Duration? = nil, caFile: String? = nil
    ) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        authorization = "Bearer " + apiKey
        completionsURL = base + "/chat/completions"
        self.httpClient = httpClient
        self.timeout = timeout
        self.caFile = caFile
    }

    /// The completion and the raw answer's usage; throws ``ChatError`` only.
    package func complete(_ request: ChatCompletionRequest, requestID: String? = nil) async throws(ChatError)
        -> ChatCompletion
    {
        try await complete(body: request.jsonBytes(), requestID: requestID)
    }

    /// ``complete(_:requestID:)`` for a request already encoded, such as a
    /// ``ChatRequestBodyTemplate``'s body; `stream` must not be set in it.
    package func complete(body: [UInt8], requestID: String? = nil, timeout: Duration? = nil) async throws(ChatError)
        -> ChatCompletion
    {
        let response = try await send(body: body, requestID: requestID, timeout: timeout)
        guard (200..<300).contains(response.status) else {
            throw .httpStatus(
                response.status, error: UpstreamErrorBody.decode(from: response.body),
                retryAfter: response.header("Retry-After"))
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

    /// Starts a streamed completion and returns the upstream's raw event-stream bytes once it
    /// answered 2xx (for relaying them as they come). `stream` and `stream_options` are set.
    package func streamBody(_ request: ChatCompletionRequest, requestID: String? = nil, timeout: Duration? = nil)
        async throws(ChatError) -> HTTPClientBodyStream
    {
        try await streamBody(body: request.streamingBody(), requestID: requestID, timeout: timeout)
    }

    /// ``streamBody(_:requestID:timeout:)`` for a body already encoded that asks for a stream.
    package func streamBody(
        body: [UInt8], requestID: String? = nil, timeout: Duration? = nil, headTimeout: Duration? = nil
    ) async throws(ChatError) -> HTTPClientBodyStream {
        let streaming: HTTPClientStreamingResponse
        do {
            var request = httpRequest(body: body, requestID: requestID, accept: "text/event-stream", timeout: timeout)
            request.headTimeout = headTimeout
            streaming = try await httpClient.stream(request)
        } catch {
            throw Self.map(error)
        }
        guard (200..<300).contains(streaming.status) else {
            // Error bodies are small: read them whole (bounded) for the log and the mapping.
            var bytes: [UInt8] = []
            do {
                for try await chunk in streaming.body where bytes.count < 64 * 1024 { bytes += chunk }
            } catch {}
            throw .httpStatus(
                streaming.status, error: UpstreamErrorBody.decode(from: bytes),
                retryAfter: streaming.head.header("Retry-After"))
        }
        return streaming.body
    }

    /// Sends a body as it is and returns the upstream's 2xx body unread (for relaying);
    /// a non-2xx answer throws ``ChatError/httpStatus(_:error:retryAfter:)``.
    package func forward(body: [UInt8], requestID: String? = nil, timeout: Duration? = nil) async throws(ChatError)
        -> [UInt8]
    {
        let response = try await send(body: body, requestID: requestID, timeout: timeout)
        guard (200..<300).contains(response.status) else {
            throw .httpStatus(
                response.status, error: UpstreamErrorBody.decode(from: response.body),
                retryAfter: response.header("Retry-After"))
        }
        return response.body
    }

    private func send(body: [UInt8], requestID: String?, timeout: Duration? = nil) async throws(ChatError)
        -> HTTPClientResponse
    {
        do {
            return try await httpClient.send(
                httpRequest(
                    body: body, requestID: requestID, accept: "application/json", timeout: timeout ?? self.timeout))
        } catch {
            throw Self.map(error)
        }
    }

    private func httpRequest(body: [UInt8], requestID: String?, accept: String, timeout: Duration?) -> HTTPClientRequest
    {
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(6)
        headers.append(("Authorization", authorization))
        headers.append(("Content-Type", "application/json"))
        headers.append(("Accept", accept))
        if let requestID { headers.append(("X-Request-Id", requestID)) }
        // A traced request's attempt names its span to the upstream (W3C Trace Context).
        if let trace = CurrentTrace.recorder?.attemptContext {
            headers.append(("traceparent", trace.traceparent))
            if !trace.traceState.isEmpty { headers.append(("tracestate", trace.traceState)) }
        }
        return HTTPClientRequest(
            method: "POST", url: completionsURL, headers: headers, body: body, timeout: timeout ?? self.timeout,
            caFile: caFile)
    }

    static func map(_ error: any Error) -> ChatError {
        if let error = error as? HTTPClientError { return ChatError(error) }
        if error is CancellationError { return .cancelled }
        return .transport(detail: "unexpected failure")
    }
}

// `complete(body:requestID:timeout:)` and `forward(body:requestID:timeout:)` are the witnesses as they are.
extension ChatClient: ChatUpstream {
    package func streamBytes(body: [UInt8], requestID: String, timeout: Duration, headTimeout: Duration?)
        async throws(ChatError) -> any UpstreamBytes
    {
        HTTPUpstreamBytes(
            body: try await streamBody(body: body, requestID: requestID, timeout: timeout, headTimeout: headTimeout))
    }
}

/// An HTTP client's streamed body as ``UpstreamBytes``.
struct HTTPUpstreamBytes: UpstreamBytes {
    let body: HTTPClientBodyStream

    func next() async throws(ChatError) -> [UInt8]? {
        var iterator = body.makeAsyncIterator()
        do {
            return try await iterator.next()
        } catch {
            throw ChatClient.map(error)
        }
    }

    func cancel() { body.cancel() }
}
