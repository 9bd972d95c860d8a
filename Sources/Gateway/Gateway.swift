import ChatAPI
import EventLoop
import Synchronization
import HTTP1
public import HTTPClient
public import HTTPServer

/// The product: `GET|HEAD /api/health` and `POST /api/process` (CONTRACT.md), with the error
/// middleware that gives every response its request id, JSON errors and access-log line.
public final class Gateway: Sendable {
    public let configuration: GatewayConfiguration
    public let logger: Logger
    let chat: ChatClient?
    private let router: RouterResponder
    private let version: String
    let metrics: GatewayMetrics
    /// Per-caller limits; nil when `RATE_LIMITS=off`. Behind a protocol, so a shared store
    /// can take the in-memory one's place when several instances run.
    private let limiter: (any RateLimiter)?
    /// Wall-clock time for rate windows and daily quotas (tests drive it).
    private let clock: @Sendable () -> Instant
    /// Identical `/api/process` answers within `CACHE_TTL_SECONDS`; nil when caching is off.
    private let cache: ResponseCache?
    /// Streams being answered, so a shutdown can end each with a last event.
    private let streams = Mutex<[ObjectIdentifier: StreamControl]>([:])
    /// The upstream body of every task and tone (``Prompt/index(task:tone:)``) but for the
    /// user's text, encoded once; nil for a task without a model.
    private let bodyTemplates: [ChatRequestBodyTemplate?]

    /// - Parameter httpClient: the upstream client (shared with the server's loops ideally).
    public init(
        configuration: GatewayConfiguration, httpClient: HTTPClient, logger: Logger,
        rateLimiter: (any RateLimiter)? = nil, clock: @escaping @Sendable () -> Instant = { .now },
        version: String = TextGatewayVersion.current
    ) {
        self.configuration = configuration
        self.clock = clock
        limiter = configuration.rateLimitsEnabled ? (rateLimiter ?? InMemoryRateLimiter()) : nil
        self.logger = logger
        self.version = version
        metrics = GatewayMetrics()
        cache = configuration.cacheTimeToLive.map { ResponseCache(timeToLive: $0, capacity: configuration.cacheMaxEntries) }
        bodyTemplates = Prompt.combinations.map { task, tone in
            configuration.model(for: task).flatMap { model in
                ChatRequestBodyTemplate(Self.upstreamRequest(
                    task: task, tone: tone, text: ChatRequestBodyTemplate.placeholder, model: model, configuration: configuration
                ))
            }
        }
        chat = configuration.apiKey.map {
            ChatClient(httpClient: httpClient, baseURL: configuration.baseURL, apiKey: $0, timeout: configuration.upstreamTimeout)
        }
        var router = Router()
        let health = Self.health(version: version)
        router.get("/api/health") { _ in health() }
        let box = WeakGateway()
        router.post("/api/process") { request in
            guard let gateway = box.gateway else { throw GatewayError.internalError }
            return try await gateway.process(request)
        }
        router.get("/metrics") { request in
            guard let gateway = box.gateway else { throw GatewayError.internalError }
            return try gateway.metricsResponse(request)
        }
        router.get("/v1/models") { _ in
            guard let gateway = box.gateway else { throw GatewayError.internalError }
            return gateway.models()
        }
        router.post("/v1/chat/completions") { request in
            guard let gateway = box.gateway else { throw GatewayError.internalError }
            return try await gateway.chatCompletions(request)
        }
        self.router = router.buildResponder()
        box.gateway = self
    }

    /// The server settings this gateway needs: address, body limit, JSON protocol errors.
    public func serverConfiguration() -> ServerConfiguration {
        var server = ServerConfiguration()
        server.host = configuration.host
        server.port = configuration.port
        if configuration.loopCount > 0 { server.loopCount = configuration.loopCount }
        server.limits.maxBodyBytes = configuration.maxBodyBytes
        let logger = self.logger
        server.protocolErrorResponder = { failure in
            let id = RequestID.accept(failure.head?.headers["X-Request-Id"])
            let language = Language(acceptLanguage: failure.head?.headers["Accept-Language"])
            var response = GatewayError.protocolError(failure.status).response(requestID: id, language: language)
            response.headers.add(name: "X-Request-Id", value: id)
            logger.log(.info, "request", [
                ("request_id", .string(id)),
                ("method", failure.head.map { .string($0.method.rawValue) }),
                ("path", failure.head.map { .string($0.path) }),
                ("status", .int(failure.status.code)),
                ("error", .string(failure.parseError.map { "\($0)" } ?? "timeout")),
            ])
            return response
        }
        return server
    }

    // MARK: - Middleware

    /// Answers any request: routes it, turns every error into the contract's JSON, adds
    /// `X-Request-Id` (and `Server-Timing` on `/api/process`), and logs one line.
    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let start = MonotonicInstant.now()
        var request = request
        let id = RequestID.accept(request.headers["X-Request-Id"])
        request.head.headers.replaceOrAdd(name: "X-Request-Id", value: id)
        let openAI = request.path.hasPrefix("/v1/")
        let language = Language(acceptLanguage: request.headers["Accept-Language"], default: openAI ? .english : .persian)
        let record = AccessRecord()
        metrics.inFlight.increment()
        var response: HTTPResponse
        var admission: Admission?
        do {
            if openAI || request.path == "/api/process" {
                admission = try await admit(request, record: record)
            }
            response = try await AccessRecord.$current.withValue(record) {
                try await router.respond(to: request)
            }
        } catch {
            let failure = gatewayError(for: error, request: request)
            record.update { $0.errorCode = failure.code }
            response = openAI ? failure.openAIResponse(language: language) : failure.response(requestID: id, language: language)
        }
        response.headers.replaceOrAdd(name: "X-Request-Id", value: id)
        for field in admission?.status?.headerFields ?? [] { response.headers.replaceOrAdd(name: field.name, value: field.value) }
        if case .stream(let produce) = response.body {
            // A streamed answer is accounted for and logged when it ends, with what it used.
            let status = response.status.code
            response.body = .stream { [self, request, admission] writer in
                do {
                    try await produce(writer)
                } catch {
                    await finish(admission, record: record)
                    logAccess(request: request, id: id, status: status, record: record, start: start)
                    throw error
                }
                await finish(admission, record: record)
                logAccess(request: request, id: id, status: status, record: record, start: start)
            }
            return response
        }
        await finish(admission, record: record)
        let timing = logAccess(request: request, id: id, status: response.status.code, record: record, start: start)
        if request.path == "/api/process" {
            var value = "upstream;dur="
            value.reserveCapacity(48)
            JSONWriter.appendDecimal(timing.upstream, to: &value)
            value += ", gateway;dur="
            JSONWriter.appendDecimal(timing.gateway, to: &value)
            response.headers.replaceOrAdd(name: "Server-Timing", value: value)
        }
        return response
    }

    /// A request let in by the rate limiter: what to charge and release when it ends.
    struct Admission: Sendable {
        let key: String
        let plan: Plan
        let lease: RateLease
        let status: RateStatus?
    }

    /// Authenticates the caller (when tokens are configured) and takes a rate-limit lease
    /// (when limits are on); throws `unauthorized` or `rate_limited` with its headers.
    private func admit(_ request: HTTPRequest, record: AccessRecord) async throws(GatewayError) -> Admission? {
        var caller: Caller?
        if let tokens = configuration.tokens {
            guard let authenticated = tokens.authenticate(authorization: request.headers["Authorization"]) else {
                throw .unauthorized
            }
            caller = authenticated
            record.update { $0.userID = authenticated.userID }
        }
        guard let limiter else { return nil }
        let plan = configuration.plans.plan(for: caller)
        let key: String
        if let caller {
            key = "user:" + caller.userID
        } else {
            let peer = request.remoteAddress?.host ?? "unknown"
            key = "address:" + configuration.trustedProxies.clientAddress(peer: peer, forwardedFor: request.headers["X-Forwarded-For"])
        }
        switch await limiter.acquire(key: key, plan: plan, now: clock()) {
        case .allowed(let lease, let status):
            return Admission(key: key, plan: plan, lease: lease, status: status)
        case .refused(let status, let reason):
            metrics.rateLimited.labels(Self.label(reason)).increment()
            record.update { $0.outcome = "rate_limited" }
            var error = GatewayError.rateLimited
            for field in status.headerFields { error.headers.replaceOrAdd(name: field.name, value: field.value) }
            throw error
        }
    }

    /// Charges the tokens a request used (answers from the cache are free) and releases its lease.
    private func finish(_ admission: Admission?, record: AccessRecord) async {
        metrics.inFlight.decrement()
        guard let admission, let limiter else { return }
        let fields = record.fields
        let used = (fields.inputTokens ?? 0) + (fields.outputTokens ?? 0)
        if used > 0, fields.outcome != "cache_hit" {
            await limiter.record(tokens: used, key: admission.key, plan: admission.plan, now: clock())
        }
        await limiter.release(admission.lease)
    }

    private static func label(_ reason: RefusalReason) -> String {
        switch reason {
        case .requestsPerMinute: return "requests_per_minute"
        case .concurrency: return "concurrency"
        case .dailyTokens: return "daily_tokens"
        }
    }

    /// Writes the access-log line; returns the upstream and gateway milliseconds.
    @discardableResult
    private func logAccess(request: HTTPRequest, id: String, status: Int, record: AccessRecord, start: MonotonicInstant) -> (upstream: Double, gateway: Double) {
        let fields = record.fields
        let totalNanoseconds = start.nanoseconds(until: .now())
        let upstreamMs = Double(fields.upstreamNanoseconds) / 1e6
        let gatewayMs = Double(totalNanoseconds - min(totalNanoseconds, fields.upstreamNanoseconds)) / 1e6
        if configuration.metricsEnabled {
            metrics.finished(path: request.path, status: status, seconds: Double(totalNanoseconds) / 1e9,
                             upstreamSeconds: upstreamMs / 1000, fields: fields)
        }
        logger.log(.info, "request", [
            ("request_id", .string(id)),
            ("user_id", fields.userID.map { .string($0) }),
            ("method", .string(request.method.rawValue)),
            ("path", .string(request.path)),
            ("status", .int(status)),
            ("code", fields.errorCode.map { .string($0) }),
            ("task", fields.task.map { .string($0) }),
            ("text_length", fields.textLength.map { .int($0) }),
            ("model", fields.model.map { .string($0) }),
            ("input_tokens", fields.inputTokens.map { .int($0) }),
            ("output_tokens", fields.outputTokens.map { .int($0) }),
            ("outcome", fields.outcome.map { .string($0) }),
            ("upstream_ms", .milliseconds(upstreamMs)),
            ("gateway_ms", .milliseconds(gatewayMs)),
            ("total_ms", .milliseconds(Double(totalNanoseconds) / 1e6)),
        ])
        return (upstreamMs, gatewayMs)
    }

    private func gatewayError(for error: any Error, request: HTTPRequest) -> GatewayError {
        if let error = error as? GatewayError { return error }
        if let error = error as? HTTPError {
            switch error.status.code {
            case 404: return .notFound
            case 405:
                var failure = GatewayError.methodNotAllowed
                failure.headers = error.headers
                return failure
            default: return .protocolError(error.status)
            }
        }
        logger.error("unexpected_error", [("path", .string(request.path)), ("type", .string("\(type(of: error))"))])
        return .internalError
    }

    // MARK: - Routes

    private static func health(version: String) -> @Sendable () -> HTTPResponse {
        {
            var body = JSONWriter(capacity: 96)
            body.object {
                $0.field("status", "ok")
                $0.field("timestamp", Timestamp.iso8601(now: Timestamp.realtime()))
                $0.field("version", version)
            }
            return HTTPResponse(headers: ["Content-Type": "application/json; charset=utf-8"], body: .bytes(body.bytes))
        }
    }

    func process(_ request: HTTPRequest) async throws(GatewayError) -> HTTPResponse {
        let record = AccessRecord.current
        let parsed = try ProcessRequest.parse(body: request.body, contentType: request.headers["Content-Type"])
        record?.update {
            $0.task = parsed.task.rawValue
            $0.textLength = parsed.characterCount
        }
        guard let chat else { throw .keyNotConfigured }
        guard let model = configuration.model(for: parsed.task) else { throw .modelNotConfigured }
        record?.update { $0.model = model }
        let requestID = request.headers["X-Request-Id"] ?? RequestID.make()
        if parsed.stream || Self.acceptsEventStream(request.headers["Accept"]) {
            let upstreamRequest = Self.upstreamRequest(task: parsed.task, tone: parsed.tone, text: parsed.text, model: model, configuration: configuration)
            return streamResponse(chat: chat, request: upstreamRequest, requestID: requestID,
                                  language: Language(acceptLanguage: request.headers["Accept-Language"]), record: record)
        }
        // The same bytes as the request's `jsonBytes()`, escaping only the text.
        let upstreamBody = bodyTemplates[Prompt.index(task: parsed.task, tone: parsed.tone)]?
            .body(filling: Prompt.neutralizingTags(in: parsed.text))
            ?? Self.upstreamRequest(task: parsed.task, tone: parsed.tone, text: parsed.text, model: model, configuration: configuration).jsonBytes()
        let answer: ResponseCache.Answer
        var headers: HTTPHeaders = ["Content-Type": "application/json; charset=utf-8"]
        if let cache {
            let key = ResponseCache.Key(task: parsed.task.rawValue, tone: parsed.tone?.rawValue, model: model, text: parsed.text)
            let cached: ResponseCache.Answer
            let hit: Bool
            do {
                (cached, hit) = try await cache.answer(for: key) { () throws(GatewayError) in
                    try await complete(chat: chat, body: upstreamBody, requestID: requestID, record: record)
                }
            } catch {
                metrics.cache.labels("miss").increment()
                throw error
            }
            answer = cached
            headers.add(name: "X-Cache", value: hit ? "HIT" : "MISS")
            metrics.cache.labels(hit ? "hit" : "miss").increment()
            if hit { record?.update { $0.outcome = "cache_hit" } }
        } else {
            answer = try await complete(chat: chat, body: upstreamBody, requestID: requestID, record: record)
        }
        let result = answer.result
        let usage = answer.usage
        var body = JSONWriter(capacity: result.utf8.count + 160)
        body.object {
            $0.field("success", true)
            $0.field("result", result)
            $0.field("requestId", requestID)
            $0.usageField(usage)
        }
        return HTTPResponse(headers: headers, body: .bytes(body.bytes))
    }

    /// The upstream request for a task, tone and text: the task's system prompt, the text
    /// wrapped as data, the task's temperature and the configured token limit.
    static func upstreamRequest(task: TextTask, tone: Tone?, text: String, model: String, configuration: GatewayConfiguration) -> ChatCompletionRequest {
        let prompt = Prompt(task: task, tone: tone, text: text)
        return ChatCompletionRequest(
            model: model,
            messages: [ChatMessage(role: .system, content: prompt.system), ChatMessage(role: .user, content: prompt.user)],
            temperature: task.temperature,
            maxTokens: configuration.maxTokens
        )
    }

    /// One upstream call for a task: the trimmed answer and its usage, or the mapped error.
    private func complete(chat: ChatClient, body: [UInt8], requestID: String, record: AccessRecord?) async throws(GatewayError) -> ResponseCache.Answer {
        let upstreamStart = MonotonicInstant.now()
        let completion: ChatCompletion
        do {
            completion = try await chat.complete(body: body, requestID: requestID)
        } catch {
            record?.update {
                $0.upstreamNanoseconds = upstreamStart.nanoseconds(until: .now())
                $0.outcome = Self.outcome(of: error)
            }
            logUpstreamFailure(error, requestID: requestID)
            throw .upstream(error)
        }
        let result = TextTrim.trimmed(completion.firstContent ?? "")
        let usage = completion.usage
        record?.update {
            $0.upstreamNanoseconds = upstreamStart.nanoseconds(until: .now())
            $0.inputTokens = usage?.promptTokens
            $0.outputTokens = usage?.completionTokens
        }
        guard !result.isEmpty else { throw .emptyResult }
        return ResponseCache.Answer(result: result, usage: usage)
    }

    /// The Prometheus exposition; with `METRICS_TOKEN` set, only for `Bearer <that token>`.
    func metricsResponse(_ request: HTTPRequest) throws(GatewayError) -> HTTPResponse {
        if let token = configuration.metricsToken {
            let expected = Array("Bearer \(token)".utf8)
            let given = Array((request.headers["Authorization"] ?? "").utf8)
            guard ConstantTime.equals(expected, given) else { throw .unauthorized }
        }
        return HTTPResponse(headers: ["Content-Type": MetricsRegistry.contentType], body: .bytes(Array(metrics.registry.exposition().utf8)))
    }

    /// `Accept: text/event-stream` (alone or among others).
    static func acceptsEventStream(_ accept: String?) -> Bool {
        guard let accept else { return false }
        return HeaderElement.list(accept).contains { $0.valueIs("text/event-stream") }
    }

    private func streamResponse(chat: ChatClient, request: ChatCompletionRequest, requestID: String, language: Language, record: AccessRecord?) -> HTTPResponse {
        let stream = ProcessStream(
            chat: chat, request: request, requestID: requestID, language: language,
            control: StreamControl(limits: streamLimits), totalTimeout: configuration.streamTotalTimeout, record: record,
            logFailure: { [self] error in logUpstreamFailure(error, requestID: requestID) }
        )
        return HTTPResponse(
            headers: ["Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"],
            body: .stream { [self] writer in
                try await withStreamRegistered(stream.control) { try await stream.run(writer) }
            }
        )
    }

    /// The time limits of a stream, from the configuration.
    var streamLimits: StreamControl.Limits {
        StreamControl.Limits(
            firstToken: configuration.streamFirstTokenTimeout, idle: configuration.streamIdleTimeout,
            total: configuration.streamTotalTimeout, heartbeat: configuration.heartbeatInterval
        )
    }

    /// Runs a stream while it is known to ``endStreams()``.
    func withStreamRegistered(_ control: StreamControl, _ body: () async throws -> Void) async throws {
        let key = ObjectIdentifier(control)
        streams.withLock { $0[key] = control }
        defer { _ = streams.withLock { $0.removeValue(forKey: key) } }
        try await body()
    }

    /// Ends every stream in flight with an `error` event (`shutting_down`), for the end of a
    /// shutdown's grace period.
    public func endStreams() {
        for control in streams.withLock({ Array($0.values) }) { control.end(.shutdown) }
    }

    /// A bounded label for an upstream failure.
    static func errorKind(_ error: ChatError) -> String {
        switch error {
        case .couldNotConnect: return "connect"
        case .timedOut: return "timeout"
        case .cancelled: return "cancelled"
        case .httpStatus(let status, _, _): return status == 429 || status == 503 ? "busy" : "status_\(status / 100)xx"
        case .streamError: return "stream_error"
        case .unreadableBody: return "unreadable"
        case .noContent: return "no_content"
        case .transport: return "transport"
        }
    }

    private static func outcome(of error: ChatError) -> String {
        switch error {
        case .cancelled: return "cancelled"
        case .timedOut: return "upstream_timeout"
        default: return "upstream_failure"
        }
    }

    /// The upstream's own error details go to the log (bounded, one line), never to the client.
    func logUpstreamFailure(_ error: ChatError, requestID: String) {
        metrics.upstreamErrors.labels(Self.errorKind(error)).increment()
        var fields: [(String, Logger.Value?)] = [("request_id", .string(requestID)), ("failure", .string(error.description))]
        if case .httpStatus(let status, let body, _) = error {
            fields.append(("upstream_status", .int(status)))
            fields.append(("upstream_code", body?.code.map { .string(String($0.prefix(100))) }))
            fields.append(("upstream_message", body?.message.map { .string(String($0.prefix(300))) }))
            if status == 401 || status == 403 {
                logger.error("upstream_rejected_key", [("request_id", .string(requestID)), ("upstream_status", .int(status))])
            }
        }
        logger.log(error.isCancellation ? .info : .warning, "upstream_failure", fields)
    }
}

/// Breaks the reference cycle between the gateway and the routes that call it.
private final class WeakGateway: @unchecked Sendable {
    // Written once in Gateway.init before any request can arrive; read-only afterwards.
    weak var gateway: Gateway?
}

extension ChatError {
    var isCancellation: Bool {
        if case .cancelled = self { return true }
        return false
    }
}

/// The version `--version` and `/api/health` report.
public enum TextGatewayVersion {
    public static let current = "0.1.0"
}
