import ChatAPI
package import EventLoop
import HTTP1
package import HTTPServer
import JSON
import Synchronization

/// An OpenAI-compatible fake upstream on our own ``HTTPServer``, for the demo, tests and
/// benchmarks: `POST /v1/chat/completions` (JSON, or SSE with `stream: true`),
/// `GET /v1/models`, `GET /mock/stats` with its counters, and `GET /mock/traceparents` with the
/// W3C `traceparent` of each chat-completion request (a JSON array, the most recent last).
/// Behaviour is scriptable per
/// request (see ``MockBehaviour``).
package final class MockUpstream: Sendable {
    /// What the mock has seen.
    package struct Stats: Sendable, Hashable, Codable {
        /// Chat-completion requests received.
        package var requests = 0
        /// Requests whose client went away before the answer ended.
        package var cancelled = 0
        /// Requests being answered now.
        package var inFlight = 0
        /// TCP connections accepted.
        package var connections = 0
        /// Connections open now.
        package var openConnections = 0
        /// OTLP trace exports received at `POST /v1/traces`, and the spans in them.
        package var traceExports = 0
        package var spans = 0
    }

    private let server: HTTPServer
    private let handler: MockHandler

    /// - Parameters:
    ///   - defaults: the behaviour of a request that overrides nothing.
    ///   - apiKey: when set, requests must carry `Authorization: Bearer <apiKey>` (else 401).
    package init(configuration: ServerConfiguration, defaults: MockBehaviour = MockBehaviour(), apiKey: String? = nil)
        throws
    {
        var configuration = configuration
        configuration.limits.maxBodyBytes = max(configuration.limits.maxBodyBytes, 8 * 1024 * 1024)
        let handler = MockHandler(defaults: defaults, apiKey: apiKey)
        var router = Router()
        router.post("/v1/chat/completions") { try await handler.chatCompletions($0) }
        router.get("/v1/models") { _ in
            HTTPResponse(headers: ["Content-Type": "application/json"], body: .bytes(MockHandler.modelsBody))
        }
        router.get("/mock/last-request") { _ in
            HTTPResponse(headers: ["Content-Type": "application/json"], body: .bytes(handler.lastRequestBody))
        }
        // A stand-in OTLP/HTTP collector that keeps up with any load: it reads each export's
        // spans (counted in the stats) and keeps nothing else.
        router.post("/v1/traces") { request in
            guard request.headers["Content-Type"] == "application/x-protobuf",
                let spans = OTLPSpanCount.count(request.body)
            else { return HTTPResponse(status: .badRequest) }
            handler.counters.withLock {
                $0.traceExports += 1
                $0.spans += spans
            }
            handler.traceBodies.withLock { bodies in
                if bodies.count >= 1000 { bodies.removeFirst(bodies.count / 2) }
                bodies.append(request.body)
            }
            return HTTPResponse(headers: ["Content-Type": "application/x-protobuf"], body: .bytes([]))
        }
        router.get("/mock/traceparents") { _ in
            HTTPResponse(
                headers: ["Content-Type": "application/json"],
                body: .bytes((try? JSON.encode(handler.traceparents.withLock { $0 })) ?? []))
        }
        let serverReference = Mutex<HTTPServer?>(nil)
        router.get("/mock/stats") { _ in
            let stats = serverReference.withLock { server in server.map { Self.stats(handler, $0) } }
            return HTTPResponse(
                headers: ["Content-Type": "application/json"], body: .bytes((try? JSON.encode(stats)) ?? []))
        }
        let responder = router.buildResponder()
        let server = try HTTPServer(configuration: configuration) { try await responder.respond(to: $0) }
        serverReference.withLock { $0 = server }
        self.server = server
        self.handler = handler
    }

    /// Starts listening; returns the bound address.
    @discardableResult
    package func start() async throws -> SocketAddress {
        try await server.start()
    }

    /// A mock listening on `port` of loopback (`0`: any free one) with one event loop, as
    /// tests and drills start it.
    package static func started(port: Int = 0, defaults: MockBehaviour = MockBehaviour(), apiKey: String? = nil)
        async throws -> MockUpstream
    {
        var configuration = ServerConfiguration()
        configuration.port = port
        configuration.loopCount = 1
        let mock = try MockUpstream(configuration: configuration, defaults: defaults, apiKey: apiKey)
        try await mock.start()
        return mock
    }

    /// Stops the server (requests in flight are cut after `gracePeriod`).
    package func shutdown(gracePeriod: Duration = .zero) async {
        await server.shutdown(gracePeriod: gracePeriod)
    }

    /// `http://host:port/v1` once started.
    package var baseURL: String {
        guard let address = server.localAddress else { return "" }
        switch address {
        case .v4(let host, let port): return "http://\(host):\(port)/v1"
        case .v6(let host, let port): return "http://[\(host)]:\(port)/v1"
        }
    }

    /// The counters so far.
    package var stats: Stats { Self.stats(handler, server) }

    private static func stats(_ handler: MockHandler, _ server: HTTPServer) -> Stats {
        var stats = handler.counters.withLock { $0 }
        stats.connections = server.acceptedConnectionCount
        stats.openConnections = server.openConnectionCount
        return stats
    }

    /// The body of the last chat-completion request (for tests that check what was sent).
    package var lastRequestBody: [UInt8] { handler.lastRequestBody }

    /// The last user message of every chat-completion request so far, in arrival order (the
    /// most recent ``MockHandler/journalLimit``): what a test checks was, or was not, asked.
    package var receivedUserTexts: [String] { handler.journal.withLock { $0 } }

    /// The `traceparent` of every chat-completion request that carried one, in arrival order
    /// (the most recent ``MockHandler/journalLimit``).
    package var receivedTraceparents: [String] { handler.traceparents.withLock { $0 } }

    /// The bodies of the OTLP exports received at `POST /v1/traces` (the most recent 1,000).
    package var receivedTraceExports: [[UInt8]] { handler.traceBodies.withLock { $0 } }
}

/// The mock's request handling and counters, shared by its routes.
final class MockHandler: Sendable {
    let counters = Mutex(MockUpstream.Stats())
    private let lastRequest = Mutex<[UInt8]>([])
    let journal = Mutex<[String]>([])
    let traceparents = Mutex<[String]>([])
    let traceBodies = Mutex<[[UInt8]]>([])
    static let journalLimit = 100_000
    private let defaults: MockBehaviour
    private let apiKey: String?

    static let modelsBody = Array(
        #"{"object":"list","data":[{"id":"mock-model","object":"model","owned_by":"mock"}]}"#.utf8)

    init(defaults: MockBehaviour, apiKey: String?) {
        self.defaults = defaults
        self.apiKey = apiKey
    }

    var lastRequestBody: [UInt8] { lastRequest.withLock { $0 } }

    // MARK: - Chat completions

    /// Answers one chat-completion request; it counts as in flight until its answer (a
    /// stream included) has been written.
    func chatCompletions(_ request: HTTPRequest) async throws -> HTTPResponse {
        let number = counters.withLock {
            $0.requests += 1
            $0.inFlight += 1
            return $0.requests
        }
        let response: HTTPResponse
        do {
            response = try await answer(request, number: number)
        } catch {
            counters.withLock { $0.inFlight -= 1 }
            throw error
        }
        guard case .stream(let produce) = response.body else {
            counters.withLock { $0.inFlight -= 1 }
            return response
        }
        var streamed = response
        streamed.body = .stream { [self] writer in
            defer { counters.withLock { $0.inFlight -= 1 } }
            try await produce(writer)
        }
        return streamed
    }

    /// - Parameter number: the request's place among those this mock has seen (1 for the first).
    private func answer(_ request: HTTPRequest, number: Int) async throws -> HTTPResponse {
        if request.body.count <= 1024 * 1024 { lastRequest.withLock { $0 = request.body } }
        if let traceparent = request.headers["traceparent"] {
            traceparents.withLock { seen in
                if seen.count >= Self.journalLimit { seen.removeFirst(seen.count / 2) }
                seen.append(traceparent)
            }
        }

        if let apiKey, request.headers["Authorization"] != "Bearer \(apiKey)" {
            return Self.error(
                status: 401, message: "Incorrect API key provided.", type: "invalid_request_error",
                code: "invalid_api_key")
        }
        guard let chat = MockRequest(request.body) else {
            return Self.error(
                status: 400, message: "We could not parse the JSON body of your request.",
                type: "invalid_request_error", code: nil)
        }
        var behaviour = defaults.applying(headers: request.headers)
        if let last = chat.lastUserText {
            journal.withLock { journal in
                if journal.count >= Self.journalLimit { journal.removeFirst(journal.count / 2) }
                journal.append(last)
            }
            behaviour = behaviour.applying(directivesIn: last)
        }

        do {
            if behaviour.latencyMilliseconds > 0 {
                try await Task.sleep(for: .milliseconds(behaviour.latencyMilliseconds))
            }
        } catch {
            counters.withLock { $0.cancelled += 1 }
            throw error
        }

        if let failFirst = behaviour.failFirst, number > failFirst { behaviour.status = 200 }
        if behaviour.status != 200 {
            var response = Self.error(
                status: behaviour.status, message: "mock failure \(behaviour.status)",
                type: behaviour.status >= 500 ? "server_error" : "invalid_request_error",
                code: behaviour.errorCode ?? Self.defaultCode(for: behaviour.status)
            )
            if let retryAfter = behaviour.retryAfter { response.headers.add(name: "Retry-After", value: retryAfter) }
            return response
        }
        let model = chat.model
        let promptTokens = chat.textBytes / 4 + 1
        // The body it received, as its answer: lets a test see what arrived upstream.
        let text =
            behaviour.echoRequest
            ? String(decoding: request.body, as: UTF8.self)
            : MockStructuredAnswer.content(for: chat, behaviour: behaviour) ?? behaviour.content
        let content = behaviour.body == .noContent ? "" : text
        // An echo is what a test asked for explicitly: it wins over a tool call.
        let answer: MockAnswer =
            behaviour.echoRequest ? .text(content) : chat.toolName.map { .toolCall(name: $0) } ?? .text(content)
        let completionTokens = (answer.tokens * chat.choiceCount)
        let usage = Usage(
            promptTokens: promptTokens, completionTokens: completionTokens, totalTokens: promptTokens + completionTokens
        )

        switch behaviour.body {
        case .garbage:
            return HTTPResponse(
                headers: ["Content-Type": "application/json"], body: .bytes(Array("<html>upstream proxy error".utf8)))
        case .empty:
            return HTTPResponse(headers: ["Content-Type": "application/json"], body: .bytes([]))
        case .normal, .noContent, .noChoices:
            break
        }
        let choiceCount = behaviour.body == .noChoices ? 0 : chat.choiceCount
        if chat.stream {
            let streamed: MockAnswer = behaviour.body == .noChoices ? .text("") : answer
            let response = stream(
                streamed, choices: max(1, choiceCount), model: model, usage: chat.includeUsage ? usage : nil,
                behaviour: behaviour)
            return Self.withProviderHeaders(response, behaviour)
        }
        let body = answer.completion(choices: choiceCount, model: model, usage: usage)
        if behaviour.cutBody {
            // The head and half the body, then the connection drops: a provider or proxy that
            // died mid-answer.
            return HTTPResponse(
                headers: ["Content-Type": "application/json"],
                body: .stream { writer in
                    try await writer.write(Array(body.prefix(body.count / 2)))
                    throw CancellationError()
                })
        }
        let response = HTTPResponse(headers: ["Content-Type": "application/json"], body: .bytes(body))
        return Self.withProviderHeaders(response, behaviour)
    }

    private static func withProviderHeaders(_ response: HTTPResponse, _ behaviour: MockBehaviour) -> HTTPResponse {
        guard behaviour.providerHeaders else { return response }
        var response = response
        for field in MockBehaviour.providerHeaderFields { response.headers.add(name: field.name, value: field.value) }
        return response
    }

    private func stream(_ answer: MockAnswer, choices: Int, model: String, usage: Usage?, behaviour: MockBehaviour)
        -> HTTPResponse
    {
        let pieces = answer.pieces(behaviour.deltas)
        return HTTPResponse(
            headers: ["Content-Type": "text/event-stream", "Cache-Control": "no-cache"],
            body: .stream { [self] writer in
                func send(_ chunk: [UInt8]) async throws {
                    try await writer.write(
                        ServerSentEventWriter.event(name: nil, data: String(decoding: chunk, as: UTF8.self)))
                }
                do {
                    for index in 0..<choices { try await send(answer.firstChunk(index: index, model: model)) }
                    for (number, piece) in pieces.enumerated() {
                        if let after = behaviour.streamErrorAfter, number == after {
                            let error = UpstreamErrorBody(
                                message: "mock stream failure", type: "server_error", code: "server_error")
                            try await writer.write(
                                ServerSentEventWriter.event(
                                    name: nil, data: String(decoding: try JSON.encode(error), as: UTF8.self)))
                            return
                        }
                        if behaviour.deltaDelayMilliseconds > 0 {
                            try await Task.sleep(for: .milliseconds(behaviour.deltaDelayMilliseconds))
                        }
                        for index in 0..<choices { try await send(answer.chunk(piece, index: index, model: model)) }
                    }
                    switch behaviour.cutStream {
                    case .clean: return
                    case .abort: throw CancellationError()
                    case nil: break
                    }
                    for index in 0..<choices { try await send(answer.lastChunk(index: index, model: model)) }
                    if let usage { try await send(MockAnswer.usageChunk(usage, model: model)) }
                    try await writer.write(ServerSentEventWriter.done())
                } catch {
                    if behaviour.cutStream != .abort { self.counters.withLock { $0.cancelled += 1 } }
                    throw error
                }
            })
    }

    /// Splits `text` into `count` pieces on character boundaries (some may be empty for short texts).
    static func split(_ text: String, into count: Int) -> [String] {
        let characters = Array(text)
        guard count > 1, !characters.isEmpty else { return [text] }
        let size = max(1, (characters.count + count - 1) / count)
        return stride(from: 0, to: characters.count, by: size).map {
            String(characters[$0..<min($0 + size, characters.count)])
        }
    }

    private static func defaultCode(for status: Int) -> String? {
        switch status {
        case 401: return "invalid_api_key"
        case 429: return "rate_limit_exceeded"
        case 500: return "server_error"
        case 503: return "overloaded"
        default: return nil
        }
    }

    private static func error(status: Int, message: String, type: String, code: String?) -> HTTPResponse {
        let body = UpstreamErrorBody(message: message, type: type, code: code)
        return HTTPResponse(
            status: HTTPStatus(code: status), headers: ["Content-Type": "application/json"],
            body: .bytes((try? JSON.encode(body)) ?? []))
    }
}
