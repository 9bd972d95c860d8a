import ChatAPI
import EventLoop
import HTTP1
import HTTPServer

/// `POST /api/process` (CONTRACT.md): validates the body, builds the task's prompt, asks the
/// upstream (through the cache when it is on) and answers with the result, or streams it.
struct ProcessRoute: RouteHandler {
    let upstream: (any ChatUpstream)?
    let configuration: GatewayConfiguration
    let cache: (any AnswerCache)?
    let metrics: GatewayMetrics
    let streams: StreamRegistry
    let logger: Logger
    /// The upstream bodies, those of the configured models encoded once but for the text.
    let bodies: ProcessBodies

    init(upstream: (any ChatUpstream)?, configuration: GatewayConfiguration, cache: (any AnswerCache)?, metrics: GatewayMetrics,
         streams: StreamRegistry, logger: Logger) {
        self.upstream = upstream
        self.configuration = configuration
        self.cache = cache
        self.metrics = metrics
        self.streams = streams
        self.logger = logger
        bodies = ProcessBodies(configuration: configuration)
    }

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let parsed = try ProcessRequest.parse(body: request.body, contentType: request.headers["Content-Type"])
        context.update {
            $0.task = parsed.task.rawValue
            $0.tone = parsed.tone?.rawValue
            $0.textLength = parsed.characterCount
        }
        guard let upstream else { throw .keyNotConfigured }
        guard let model = configuration.model(for: parsed.task) else { throw .modelNotConfigured }
        context.update { $0.model = model }
        let mode = configuration.structuredMode
        if parsed.stream || Self.acceptsEventStream(request.headers["Accept"]) {
            let upstreamRequest = ProcessBodies.request(for: parsed, model: model, mode: mode, maxTokens: configuration.maxTokens)
            return streamResponse(upstream: upstream, request: upstreamRequest, format: parsed.format, task: parsed.task, context: context)
        }
        let upstreamBody = bodies.body(for: parsed, model: model, mode: mode)
        let answer: ResponseCache.Answer
        var headers: HTTPHeaders = ["Content-Type": "application/json; charset=utf-8"]
        let upstreamStart = MonotonicInstant.now()
        if let cache {
            let key = ResponseCache.Key(task: parsed.task.rawValue, tone: parsed.tone?.rawValue, model: model, text: parsed.text, format: parsed.format)
            let requestID = context.id
            let logger = self.logger
            let bodies = self.bodies
            let cached: ResponseCache.Answer
            let hit: Bool
            do {
                (cached, hit) = try await cache.answer(for: key) { () throws(GatewayError) in
                    try await Self.answer(parsed, upstream: upstream, body: upstreamBody, bodies: bodies, model: model, mode: mode, requestID: requestID, logger: logger)
                }
            } catch {
                metrics.cache.labels("miss").increment()
                throw fail(error, context: context, since: upstreamStart)
            }
            answer = cached
            headers.add(name: "X-Cache", value: hit ? "HIT" : "MISS")
            metrics.cache.labels(hit ? "hit" : "miss").increment()
            if hit {
                context.update { $0.outcome = .cacheHit }
            } else {
                context.noteUpstream(since: upstreamStart, usage: answer.usage)
            }
        } else {
            do {
                answer = try await Self.answer(parsed, upstream: upstream, body: upstreamBody, bodies: bodies, model: model, mode: mode, requestID: context.id, logger: logger)
            } catch {
                throw fail(error, context: context, since: upstreamStart)
            }
            context.noteUpstream(since: upstreamStart, usage: answer.usage)
        }
        context.update { $0.result = answer.result }
        var body = JSONWriter(capacity: answer.result.utf8.count + 160)
        body.object {
            $0.field("success", true)
            $0.field("result", answer.result)
            if let data = answer.data { $0.field("data", data) }
            $0.field("requestId", context.id)
            $0.usageField(answer.usage)
        }
        let upstreamNanoseconds = context.upstreamNanoseconds
        let upstreamMs = Double(upstreamNanoseconds) / 1e6
        let gatewayNanoseconds = context.start.nanoseconds(until: .now())
        var timing = "upstream;dur="
        timing.reserveCapacity(48)
        JSONWriter.appendDecimal(upstreamMs, to: &timing)
        timing += ", gateway;dur="
        JSONWriter.appendDecimal(Double(gatewayNanoseconds - min(gatewayNanoseconds, upstreamNanoseconds)) / 1e6, to: &timing)
        headers.add(name: "Server-Timing", value: timing)
        return HTTPResponse(headers: headers, body: .bytes(body.bytes))
    }

    /// Records a failed call's time and returns the error to answer with.
    private func fail(_ error: GatewayError, context: RequestContext, since start: MonotonicInstant) -> GatewayError {
        context.noteUpstream(since: start, usage: nil)
        return error
    }

    /// One upstream call for a task: the trimmed answer and its usage, or the mapped error.
    static func complete(upstream: any ChatUpstream, body: [UInt8], requestID: String, logger: Logger) async throws(GatewayError) -> ResponseCache.Answer {
        let completion: ChatCompletion
        do {
            completion = try await upstream.complete(body: body, requestID: requestID)
        } catch {
            throw UpstreamCall.gatewayError(for: error, requestID: requestID, logger: logger)
        }
        let result = TextTrim.trimmed(completion.firstContent ?? "")
        guard !result.isEmpty else { throw .emptyResult }
        return ResponseCache.Answer(result: result, usage: completion.usage)
    }

    /// `Accept: text/event-stream` (alone or among others).
    static func acceptsEventStream(_ accept: String?) -> Bool {
        guard let accept else { return false }
        return HeaderElement.list(accept).contains { $0.valueIs("text/event-stream") }
    }

    private func streamResponse(upstream: any ChatUpstream, request: ChatCompletionRequest, format: OutputFormat, task: TextTask, context: RequestContext) -> HTTPResponse {
        let stream = ProcessStream(
            upstream: upstream, request: request, context: context,
            control: StreamControl(limits: StreamControl.Limits(configuration)), totalTimeout: configuration.streamTotalTimeout, logger: logger,
            structured: format == .json ? task : nil
        )
        return HTTPResponse(
            headers: ["Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"],
            body: .stream { [streams] writer in
                try await streams.withRegistered(stream.control) { try await stream.run(writer) }
            }
        )
    }
}
