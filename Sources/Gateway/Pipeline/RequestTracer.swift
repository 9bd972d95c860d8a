import Access
import ChatAPI
import HTTP1
import HTTPServer
import Jobs
import Store
import Telemetry
import Tracing

/// A request's trace: begun when it arrives (joining the caller's `traceparent` where
/// `TRACE_CONTEXT_FROM` allows, sampled by `OTEL_TRACES_SAMPLER`), its server span written
/// when it ends, from what its steps reported, with the spans its parts recorded meanwhile
/// (each upstream attempt). Never the text, the prompt, the answer or a credential: only
/// the request's shape, its caller's kind and plan, and numbers.
final class RequestTracer: Sendable {
    let settings: TracingSettings
    let exporter: SpanExporter
    let trustedProxies: TrustedProxies
    /// What a server span of each route holds for GET and POST (its name, `POST /api/process`,
    /// and its method and route attributes), made once: GET's in route order, then POST's.
    private let fixed: [Fixed]

    /// A class: a request's pending spans hold it with one reference.
    fileprivate final class Fixed: Sendable {
        let name: String
        let attributes: SpanAttributes
        /// What a request answered 200 (`done`) holds besides, by its caller's kind: the same
        /// attributes with its status, outcome and caller kind, one block to copy.
        let answered: [SpanAttributes]

        init(_ method: HTTPMethod, _ route: RouteLabel) {
            var attributes = SpanAttributes()
            attributes.append("http.request.method", method.rawValue)
            if route == .other {
                name = method.rawValue
            } else {
                name = method.rawValue + " " + route.rawValue
                attributes.append("http.route", route.rawValue)
            }
            self.attributes = attributes
            answered = CallerKind.allCases.map { kind in
                var block = attributes
                RequestTracer.outcome(&block, status: 200, outcome: .done, kind: kind)
                return block
            }
        }
    }

    /// Who called, as a server span says it (`textgateway.caller.kind`).
    enum CallerKind: String, CaseIterable {
        /// No credential.
        case guest
        /// An App Attest or Android session.
        case device
        /// A sign-in JWT's subject.
        case jwt
        /// A gateway token, from the settings or the store.
        case token

        init(_ caller: Caller?) {
            if let caller {
                if caller.userID.hasPrefix(BudgetMiddleware.devicePrefix) {
                    self = .device
                } else {
                    self = caller.userID.hasPrefix(RequestTracer.jwtPrefix) ? .jwt : .token
                }
            } else {
                self = .guest
            }
        }

        /// Its place in `allCases`.
        var index: Int {
            switch self {
            case .guest: 0
            case .device: 1
            case .jwt: 2
            case .token: 3
            }
        }
    }

    /// A server span's status, outcome and caller kind, the same for a request's fixed block
    /// and for one written attribute by attribute.
    fileprivate static func outcome(
        _ attributes: inout some SpanAttributeSink, status: Int, outcome: RequestOutcome, kind: CallerKind
    ) {
        attributes.set("http.response.status_code", status)
        attributes.set("textgateway.outcome", outcome.label)
        attributes.set("textgateway.caller.kind", kind.rawValue)
    }

    /// Whether a caller's `traceparent` can be joined at all: not when only trusted proxies'
    /// are, and none is (the default), so the field is not even looked for.
    private let joinsCallers: Bool

    init(settings: TracingSettings, exporter: SpanExporter, trustedProxies: TrustedProxies) {
        self.settings = settings
        self.exporter = exporter
        self.trustedProxies = trustedProxies
        switch settings.contextSource {
        case .none: joinsCallers = false
        case .trusted: joinsCallers = !trustedProxies.ranges.isEmpty
        case .any: joinsCallers = true
        }
        fixed = [HTTPMethod.GET, .POST].flatMap { method in RouteLabel.allCases.map { Fixed(method, $0) } }
    }

    /// Every route, in `fixed`'s order: made once (`allCases` makes an array at each call).
    private static let routes = RouteLabel.allCases

    /// The name and fixed attributes of a `method` request's span on `route`.
    fileprivate func fixed(_ method: HTTPMethod, _ route: RouteLabel) -> Fixed {
        let routes = Self.routes
        guard let index = routes.firstIndex(of: route) else { return Fixed(method, route) }
        if method == .POST { return fixed[routes.count + index] }
        if method == .GET { return fixed[index] }
        return Fixed(method, route)
    }

    /// The recorder of a request to trace; nil when its trace is not sampled, or it is a probe
    /// (`/api/health`, `/metrics`) and `TRACE_PROBES` is off.
    func begin(_ request: HTTPRequest, route: RouteLabel) -> TraceRecorder? {
        if !settings.probes, route == .health || route == .metrics { return nil }
        let parent = incoming(request)
        let traceID = parent?.traceID ?? TraceID.random()
        guard settings.sampler.shouldSample(traceID, parentSampled: parent?.sampled) else { return nil }
        let context = TraceContext(
            traceID: traceID, spanID: SpanID.random(), sampled: true, traceState: parent?.traceState ?? "")
        return TraceRecorder(context: context, remoteParent: parent?.spanID)
    }

    /// The caller's trace context, when it sent one it may join the request to.
    private func incoming(_ request: HTTPRequest) -> TraceContext? {
        // The field first: most requests have none, and the peer's address is parsed only for one that does.
        guard joinsCallers, let traceparent = request.headers["traceparent"] else { return nil }
        if settings.contextSource == .trusted {
            guard let host = request.remoteAddress?.host, let peer = IPAddress(host), trustedProxies.isTrusted(peer)
            else { return nil }
        }
        return TraceContext(traceparent: traceparent, tracestate: request.headers.combinedValue("tracestate"))
    }

    /// Sends the request's server span and the spans recorded under it. They are handed over
    /// as what they say, and written by the exporter's task: the request's loop only keeps them.
    func end(
        _ trace: TraceRecorder, context: RequestContext, state: RequestSummary, outcome: RequestOutcome,
        cost: MoneySpent, nanoseconds: UInt64
    ) {
        exporter.submit(
            ServerSpans(
                trace: trace, fixed: fixed(context.method, context.route), end: WallClock.nanoseconds(),
                nanoseconds: nanoseconds, requestID: state.report.replayOf ?? context.id, state: state,
                outcome: outcome, costMicros: cost.micros, userID: settings.userID))
    }

    /// The recorder of one of `job`'s chunks: in the trace of the request that made the job
    /// (its `traceparent`, kept with the job), or a trace of its own when that request was not
    /// traced; nil when the trace is not sampled.
    func beginChunk(of job: JobRecord) -> TraceRecorder? {
        let parent = job.traceParent.flatMap { TraceContext(traceparent: $0) }
        let traceID = parent?.traceID ?? TraceID.random()
        guard settings.sampler.shouldSample(traceID, parentSampled: parent?.sampled) else { return nil }
        let context = TraceContext(
            traceID: traceID, spanID: SpanID.random(), sampled: true, traceState: parent?.traceState ?? "")
        return TraceRecorder(context: context, remoteParent: parent?.spanID)
    }

    /// Sends a chunk's span (a child of the job's request span, and linked to it) with its
    /// upstream attempts. Never the job's id: it lets a guest read the job.
    func endChunk(
        _ trace: TraceRecorder, of job: JobRecord, question: JobQuestion, since start: UInt64,
        result: Result<JobAnswer, JobFailure>
    ) {
        let root = trace.context
        let (recorded, attempts) = trace.take()
        exporter.submit(spans: recorded.count + attempts.count + 1) { spans in
            spans.append(contentsOf: recorded, spans: recorded.count)
            trace.write(attempts, into: &spans) { span in
                guard case .success(let answer) = result else { return }
                span.set("gen_ai.usage.input_tokens", answer.usage?.promptTokens)
                span.set("gen_ai.usage.output_tokens", answer.usage?.completionTokens)
                Self.finishReasons(&span, trace.answer.finishReasons)
            }
            spans.appendSpan(
                trace: root.traceID, id: root.spanID, parent: trace.remoteParent, traceState: root.traceState,
                name: "job chunk", kind: .internal, start: start
            ) { span in
                span.end = WallClock.nanoseconds()
                if let parent = job.traceParent.flatMap({ TraceContext(traceparent: $0) }) {
                    span.link(trace: parent.traceID, span: parent.spanID, sampled: parent.sampled)
                }
                span.set("textgateway.task", job.task)
                span.set("textgateway.caller.plan", job.plan)
                switch question {
                case .final: span.set("textgateway.job.step", "final")
                case .step: span.set("textgateway.job.step", "combine")
                }
                switch result {
                case .success(let answer):
                    span.set("gen_ai.usage.input_tokens", answer.usage?.promptTokens)
                    span.set("gen_ai.usage.output_tokens", answer.usage?.completionTokens)
                    if let micros = answer.costMicros { span.set("textgateway.cost_micros", .int(micros)) }
                case .failure(let failure):
                    span.set("error.type", failure.code)
                    span.status = .error(failure.code)
                }
            }
        }
    }

    fileprivate static let jwtPrefix = Caller.userID(jwtSubject: "")

    /// `gen_ai.response.finish_reasons`, when the answer gave any: a lone reason the API
    /// defines (almost every answer's) copied as a block encoded once.
    fileprivate static func finishReasons(_ span: inout SpanBody, _ reasons: [String]) {
        guard !reasons.isEmpty else { return }
        if reasons.count == 1, let block = lone.first(where: { $0.reason == reasons[0] }) {
            span.append(contentsOf: block.attributes)
        } else {
            span.set("gen_ai.response.finish_reasons", .strings(reasons))
        }
    }

    private static let lone: [(reason: String, attributes: SpanAttributes)] =
        ["stop", "length", "tool_calls", "content_filter"].map { reason in
            (reason, [SpanAttribute("gen_ai.response.finish_reasons", .strings([reason]))])
        }
}

/// A request's server span and the spans recorded under it, as what they say: made when the
/// request ends (its clock read and its recorder's spans taken then), written into the
/// export's bytes by the exporter's task.
private final class ServerSpans: PendingSpans {
    let trace: TraceRecorder
    let recorded: EncodedSpans
    let attempts: TraceRecorder.Attempts
    let fixed: RequestTracer.Fixed
    let start: UInt64
    let end: UInt64
    let requestID: String
    let status: Int
    let outcome: RequestOutcome
    let caller: Caller?
    let userID: Bool
    let task: String?
    let model: String?
    let cacheHit: Bool
    let idempotency: IdempotencyRole?
    let upstreamAttempts: Int
    let usage: Usage?
    let costMicros: Int64?
    let error: String?

    init(
        trace: TraceRecorder, fixed: RequestTracer.Fixed, end: UInt64, nanoseconds: UInt64, requestID: String,
        state: RequestSummary, outcome: RequestOutcome, costMicros: Int64?, userID: Bool
    ) {
        self.trace = trace
        (recorded, attempts) = trace.take()
        self.fixed = fixed
        self.end = end
        start = end &- nanoseconds
        self.requestID = requestID
        status = state.status
        self.outcome = outcome
        caller = state.report.caller
        self.userID = userID
        task = state.report.task
        model = state.report.model
        cacheHit = state.report.cacheHit
        idempotency = state.report.idempotency
        upstreamAttempts = state.report.upstreamAttempts
        usage = state.usage
        self.costMicros = costMicros
        error = state.error?.code.rawValue
    }

    var spanCount: Int { recorded.count + attempts.count + 1 }

    func write(into spans: inout EncodedSpans) {
        let root = trace.context
        spans.append(contentsOf: recorded, spans: recorded.count)
        trace.write(attempts, into: &spans) { body in annotateAnswer(&body) }
        spans.appendSpan(
            trace: root.traceID, id: root.spanID, parent: trace.remoteParent, parentIsRemote: trace.remoteParent != nil,
            traceState: root.traceState, name: fixed.name, kind: .server, start: start
        ) { span in
            span.end = end
            let kind = RequestTracer.CallerKind(caller)
            if status == 200, case .done = outcome {
                span.append(contentsOf: fixed.answered[kind.index])
            } else {
                span.append(contentsOf: fixed.attributes)
                RequestTracer.outcome(&span, status: status, outcome: outcome, kind: kind)
            }
            span.set("textgateway.request_id", requestID)
            span.set("textgateway.caller.plan", caller?.plan)
            if userID { span.set("enduser.id", caller?.userID) }
            span.set("textgateway.task", task)
            // Said only when they say something: most requests are no cache hit, with one attempt.
            if cacheHit { span.set("textgateway.cache_hit", .bool(true)) }
            span.set("textgateway.idempotency", idempotency?.rawValue)
            if upstreamAttempts > 1 { span.set("textgateway.upstream_attempts", upstreamAttempts) }
            span.set("gen_ai.usage.input_tokens", usage?.promptTokens)
            span.set("gen_ai.usage.output_tokens", usage?.completionTokens)
            if let costMicros { span.set("textgateway.cost_micros", .int(costMicros)) }
            if let error {
                span.set("error.type", error)
                // A server span is an error only when the gateway failed (5xx); a refusal is the caller's.
                if status >= 500 { span.status = .error(error) }
            }
        }
    }

    /// The attempt that answered (the last one recorded without an error) gets what the
    /// answer said: its model, its usage, and the time to its first token for a stream.
    private func annotateAnswer(_ span: inout SpanBody) {
        span.set("gen_ai.response.model", model)
        span.set("gen_ai.usage.input_tokens", usage?.promptTokens)
        span.set("gen_ai.usage.output_tokens", usage?.completionTokens)
        let answer = trace.answer
        RequestTracer.finishReasons(&span, answer.finishReasons)
        if answer.firstToken != 0 {
            let firstToken = answer.firstToken
            let seconds = Double(firstToken &- min(firstToken, span.start)) / 1e9
            span.event(
                "first_token", at: firstToken,
                attributes: [SpanAttribute("gen_ai.server.time_to_first_token", .double(seconds))])
            // A stream's span ends with its last token (when the request ended), not with the head that opened it.
            span.end = max(span.end, end)
        }
    }
}
