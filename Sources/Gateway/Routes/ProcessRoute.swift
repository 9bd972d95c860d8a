import ChatAPI
import EventLoop
import HTTP1
import HTTPServer
import JSON
import Store
import Telemetry
import Upstream

/// `POST /api/process` (docs/api.md): validates the body, builds the task's prompt, asks the
/// upstream (through the cache when it is on) and answers with the result, or streams it.
struct ProcessRoute: RouteHandler {
    let pool: UpstreamPool?
    let configuration: GatewayConfiguration
    let cache: (any AnswerCache)?
    let metrics: GatewayMetrics
    let streams: StreamRegistry
    let logger: Logger
    /// The upstream bodies, those of the configured models encoded once but for the text.
    let bodies: ProcessBodies

    init(
        pool: UpstreamPool?, configuration: GatewayConfiguration, cache: (any AnswerCache)?, metrics: GatewayMetrics,
        streams: StreamRegistry, logger: Logger
    ) {
        self.pool = pool
        self.configuration = configuration
        self.cache = cache
        self.metrics = metrics
        self.streams = streams
        self.logger = logger
        bodies = ProcessBodies(configuration: configuration)
    }

    func answer(_ request: HTTPRequest, context: RequestContext, report: inout RouteReport)
        async throws(GatewayError) -> RouteAnswer
    {
        let parsed = try ProcessRequest.parse(request, noting: &report)
        guard let pool else { throw .keyNotConfigured }
        let choice = UpstreamModelChoice.task(parsed.task)
        // The first upstream's model names the answer in the cache and the log until an
        // attempt says which upstream and model it went to.
        guard let model = pool.firstModel(for: choice) else { throw .modelNotConfigured }
        report.model = model
        if parsed.stream || Self.acceptsEventStream(request.headers["Accept"]) {
            return try await streamResponse(pool: pool, request: parsed, context: context, report: &report)
        }
        let answer: ResponseCache.Answer
        var headers: HTTPHeaders = ["Content-Type": "application/json; charset=utf-8"]
        let upstreamStart = MonotonicInstant.now()
        if let cache {
            let hit: Bool
            (answer, hit) = try await cachedAnswer(
                parsed, model: model, pool: pool, cache: cache, since: upstreamStart, context: context, report: &report)
            headers.add(name: "X-Cache", value: hit ? "HIT" : "MISS")
        } else {
            answer = try await upstreamAnswer(
                parsed, pool: pool, since: upstreamStart, context: context, report: &report)
        }
        return Self.response(answer, headers: headers, context: context, report: &report)
    }

    /// The answer from the response cache, or from the upstream through it.
    @inline(never)
    private func cachedAnswer(
        _ parsed: ProcessRequest, model: String, pool: UpstreamPool, cache: any AnswerCache,
        since upstreamStart: MonotonicInstant, context: RequestContext, report: inout RouteReport
    ) async throws(GatewayError) -> (ResponseCache.Answer, hit: Bool) {
        let key = ResponseCache.Key(
            task: parsed.task.rawValue, tone: parsed.tone?.rawValue, model: model, text: parsed.text,
            format: parsed.format)
        let requestID = context.id
        let logger = self.logger
        let bodies = self.bodies
        let cached: ResponseCache.Answer
        let hit: Bool
        // The computation may run apart from this frame (a flight other requests join).
        let shared = SharedAttempts()
        do {
            (cached, hit) = try await cache.answer(for: key) { () throws(GatewayError) in
                var attempts = UpstreamAttempts()
                defer { shared.keep(attempts) }
                return try await TaskAnswerer.answer(
                    parsed, pool: pool, bodies: bodies, requestID: requestID, logger: logger, attempts: &attempts)
            }
        } catch {
            report.note(shared.attempts)
            metrics.cache.labels("miss").increment()
            throw fail(error, since: upstreamStart)
        }
        report.note(shared.attempts)
        metrics.cache.labels(hit ? "hit" : "miss").increment()
        if hit {
            report.cacheHit = true
        } else {
            report.span = UpstreamSpan(since: upstreamStart, usage: cached.usage)
        }
        return (cached, hit)
    }

    /// The answer from the upstream, without a cache.
    @inline(never)
    private func upstreamAnswer(
        _ parsed: ProcessRequest, pool: UpstreamPool, since upstreamStart: MonotonicInstant, context: RequestContext,
        report: inout RouteReport
    ) async throws(GatewayError) -> ResponseCache.Answer {
        var attempts = UpstreamAttempts()
        defer { report.note(attempts) }
        let answer: ResponseCache.Answer
        do {
            answer = try await TaskAnswerer.answer(
                parsed, pool: pool, bodies: bodies, requestID: context.id, logger: logger, attempts: &attempts)
        } catch {
            throw fail(error, since: upstreamStart)
        }
        report.span = UpstreamSpan(since: upstreamStart, usage: answer.usage)
        return answer
    }

    /// The whole answer's response: its body, and where its time went (`Server-Timing`).
    @inline(never)
    private static func response(
        _ answer: ResponseCache.Answer, headers: HTTPHeaders, context: RequestContext, report: inout RouteReport
    ) -> RouteAnswer {
        var headers = headers
        report.result = answer.result
        var body = JSONWriter(capacity: answer.result.utf8.count + 160)
        body.object {
            $0.field("success", true)
            $0.field("result", answer.result)
            if let data = answer.data { $0.field("data", data) }
            $0.field("requestId", context.id)
            $0.usageField(answer.usage)
        }
        let upstreamTime = report.span?.nanoseconds ?? 0
        let upstreamMs = Double(upstreamTime) / 1e6
        let gatewayNanoseconds = context.start.nanoseconds(until: .now())
        var timing = "upstream;dur="
        timing.reserveCapacity(48)
        JSONWriter.appendDecimal(upstreamMs, to: &timing)
        timing += ", gateway;dur="
        JSONWriter.appendDecimal(
            Double(gatewayNanoseconds - min(gatewayNanoseconds, upstreamTime)) / 1e6, to: &timing)
        headers.add(name: "Server-Timing", value: timing)
        return RouteAnswer(HTTPResponse(headers: headers, body: .bytes(body.bytes)))
    }

    /// The error to answer a failed call with, carrying the call's time.
    private func fail(_ error: GatewayError, since start: MonotonicInstant) -> GatewayError {
        var error = error
        error.upstreamElapsed = start.nanoseconds(until: .now())
        return error
    }

    /// `Accept: text/event-stream` (alone or among others).
    static func acceptsEventStream(_ accept: String?) -> Bool {
        guard let accept else { return false }
        return HeaderElement.list(accept).contains { $0.valueIs("text/event-stream") }
    }

    /// A streamed answer. The upstream is asked before the response starts, so that retries
    /// and fallback happen while the client has no byte yet and `X-Upstream` can name who
    /// answered; a failure then is an ordinary JSON error with its status (and the upstream's
    /// `Retry-After`): the `200` and `start` are sent only once an upstream's answer began.
    private func streamResponse(
        pool: UpstreamPool, request: ProcessRequest, context: RequestContext, report: inout RouteReport
    ) async throws(GatewayError) -> RouteAnswer {
        let control = StreamControl(limits: StreamControl.Limits(configuration))
        let upstreamStart = MonotonicInstant.now()
        let requestID = context.id
        let maxTokens = configuration.maxTokens
        let totalTimeout = configuration.streamTotalTimeout
        let opened: any UpstreamBytes
        var attempts = UpstreamAttempts()
        defer { report.note(attempts) }
        do throws(ChatError) {
            opened = try await pool.run(
                .task(request.task), deadline: configuration.streamHeadDeadline, requestID: requestID,
                attempts: &attempts,
                body: { target in
                    ProcessBodies.request(
                        for: request, model: target.model, mode: target.structuredMode, maxTokens: maxTokens
                    ).streamingBody()
                }
            ) { endpoint, body, limit, _ throws(ChatError) in
                try await endpoint.streamBytes(
                    body: body, requestID: requestID, timeout: totalTimeout, headTimeout: limit)
            }
        } catch {
            throw fail(
                UpstreamCall.gatewayError(for: error, requestID: requestID, logger: logger), since: upstreamStart)
        }
        let stream = ProcessStream(
            opened: opened, upstreamStart: upstreamStart, context: context, control: control, logger: logger,
            structured: request.format == .json ? request.task : nil, tee: context.streamTee
        )
        let headers: HTTPHeaders = [
            "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
        ]
        return RouteAnswer(streaming: headers) { [streams] writer in
            try await streams.withRegistered(stream.control) { try await stream.run(writer) }
        }
    }
}

// Not in ProcessRequest.swift, which the body fuzzer builds on its own, without the HTTP modules.
extension ProcessRequest {
    /// `request`'s body parsed, with its task, tone and length noted in `report` (for the
    /// access log and the ledger, whatever the route answers next).
    static func parse(
        _ request: HTTPRequest, noting report: inout RouteReport,
        maximumCharacters: Int = ProcessRequest.maximumCharacters
    ) throws(GatewayError) -> ProcessRequest {
        let parsed = try parse(
            body: request.body, contentType: request.headers["Content-Type"], maximumCharacters: maximumCharacters)
        report.task = parsed.task.rawValue
        report.tone = parsed.tone?.rawValue
        report.textLength = parsed.characterCount
        return parsed
    }
}

extension ProcessRoute {
    /// How `/api/process` keeps an answer for an `Idempotency-Key`: a stream by its text and
    /// its `done`; a joining retry gets `start`, one `delta` with the text so far, then what
    /// follows, and a replay the same from the kept answer.
    struct Keeping: AnswerKeeping {
        func tee(requestID: String) -> StreamTee? {
            StreamTee(
                shape: .text(opening: Self.startEvent(requestID: requestID)) {
                    Self.deltaEvent(requestID: requestID, text: $0)
                })
        }

        func kept(_ tee: StreamTee, contentType: String, upstream: String?) -> StoredAnswer {
            let kept = tee.kept
            return StoredAnswer(
                status: 200, contentType: contentType, upstream: upstream, body: kept.last ?? [], text: kept.text,
                streamed: true)
        }

        func replay(_ answer: StoredAnswer, requestID: String) -> HTTPResponse {
            guard answer.streamed else { return Self.wholeReplay(answer) }
            return Self.streamReplay(
                Self.startEvent(requestID: requestID) + Self.deltaEvent(requestID: requestID, text: answer.text ?? "")
                    + answer.body)
        }

        func asksForEventStream(_ request: HTTPRequest) -> Bool {
            ProcessRoute.acceptsEventStream(request.headers["Accept"])
        }

        static func startEvent(requestID: String) -> [UInt8] {
            ServerSentEventWriter.jsonEvent("start") { $0.field("requestId", requestID) }
        }

        /// One `delta` that brings a client from nothing to `text`.
        static func deltaEvent(requestID: String, text: String) -> [UInt8] {
            ServerSentEventWriter.jsonEvent("delta") {
                $0.field("requestId", requestID)
                $0.field("delta", text)
                $0.field("text", text)
            }
        }
    }
}
