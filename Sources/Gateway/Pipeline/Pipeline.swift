import Access
import EventLoop
import HTTP1
import HTTPServer
import Telemetry
import Tracing

/// A set of routes under one path prefix that answer errors in one shape.
struct RouteGroup: Sendable {
    let prefix: String
    let errorShape: ErrorShape

    static let api = RouteGroup(prefix: "/api/", errorShape: .gateway)
    static let openAI = RouteGroup(prefix: "/v1/", errorShape: .openAI)
    /// Everything else (`/metrics`, unknown paths).
    static let root = RouteGroup(prefix: "/", errorShape: .gateway)
}

/// One route as the gateway declares it: method, path, the middleware in front of its
/// handler, and the handler. Its group (and error shape) follows from its path.
struct Route: Sendable {
    let method: HTTPMethod
    let path: String
    let middleware: [any Middleware]
    let handler: any RouteHandler
}

/// A route's composed chain. A struct around the closure, so that the routing table (generic
/// over what it holds) keeps the closure as it is: held directly, it would be stored at the
/// most general abstraction and reached through two reabstraction thunks on every request.
private struct Chain: Sendable {
    let respond: RouteResponder
}

/// The request path, composed once at start: every request gets a ``RequestContext``; it is
/// checked for fields that must not repeat, routed (so a `404` or `405` spends nothing of
/// the caller's limits), passed through its route's middleware to its handler, and its
/// errors rendered in its group's shape. What the route reported, or the error it threw, goes
/// to the finisher before the response does; a gateway stream's report when it ends. The
/// response carries the finished hook, which the HTTP server calls once, however the request
/// ends.
struct Pipeline: Sendable {
    private let groups: [RouteGroup]
    private let responder: RouteResponder
    /// The outermost steps, called in place: as the first two middleware of every chain they
    /// would put two async layers on every request's stack.
    private let requestID: RequestIDMiddleware
    private let errors: ErrorMiddleware
    private let finisher: RequestFinisher
    private let errorLanguage: ErrorLanguage?
    /// Set when answers wait for their ledger row's commit (`LEDGER_DURABILITY=strict`): the
    /// finisher's policy, which it reads from each request's context.
    private let strictLedger: LedgerRecorder?
    /// Starts a request's trace where tracing is on.
    private let tracer: RequestTracer?

    /// Request fields a request may carry once at most (RFC 9110 §5.3: a field that is not a
    /// list cannot be combined); two of them are `400`.
    static let singletonFields = ["Authorization", "Content-Type", "X-Request-Id"]

    init(
        routes: [Route], groups: [RouteGroup], finisher: RequestFinisher, logger: Logger, errorLanguage: ErrorLanguage?,
        strictLedger: LedgerRecorder? = nil, tracer: RequestTracer? = nil
    ) {
        var table: [String: [HTTPMethod: Chain]] = [:]
        for route in routes {
            table[route.path, default: [:]][route.method] = Chain(
                respond: route.middleware.wrapping(route.handler.responder))
        }
        let routing = RoutingTable(table)
        let route: RouteResponder = { request, context, report in
            switch Self.chain(for: request, in: routing) {
            case .success(let chain): return await chain.respond(request, context, &report)
            case .failure(let error): return RouteAnswer(failure: error)
            }
        }
        self.groups = groups
        responder = route
        requestID = RequestIDMiddleware()
        errors = ErrorMiddleware(logger: logger)
        self.finisher = finisher
        self.errorLanguage = errorLanguage
        self.strictLedger = strictLedger
        self.tracer = tracer
    }

    /// The chain of `request`'s route, or why there is none. Synchronous and out of line, so
    /// that its errors take no room in the frame that stays under the route's.
    @inline(never)
    private static func chain(for request: HTTPRequest, in routing: RoutingTable<Chain>) -> Result<Chain, GatewayError>
    {
        if request.headers.firstRepeated(among: singletonFields) != nil { return .failure(.repeatedField) }
        switch routing.match(request.method, request.path) {
        case .found(let chain):
            return .success(chain)
        case .methodNotAllowed(let allow):
            var error = GatewayError.methodNotAllowed
            error.headers.add(name: "Allow", value: allow)
            return .failure(error)
        case .notFound:
            return .failure(.notFound)
        }
    }

    /// Answers any request; never throws.
    func respond(to request: HTTPRequest) async -> HTTPResponse {
        // Worked out once: the tracer's probe check and the context both need it.
        let route = RouteLabel(path: request.path)
        let trace = tracer?.begin(request, route: route)
        let context = makeContext(request.head, route: route, trace: trace)
        finisher.started(context)
        var report = RouteReport()
        let answer: RouteAnswer
        if let trace {
            // The steps' upstream attempts find the trace here, and name their spans to the upstream.
            answer = await CurrentTrace.$recorder.withValue(trace) { await responder(request, context, &report) }
        } else {
            answer = await responder(request, context, &report)
        }
        var response: HTTPResponse
        if let failure = answer.failure {
            let error = errors.gatewayError(for: failure, context: context)
            response = errors.render(error, context: context)
            requestID.stamp(&response, context: context, report: report)
            await finisher.answered(context, &response, whole: true, report: report, error: error)
        } else {
            response = answer.response
            requestID.stamp(&response, context: context, report: report)
            var whole = answer.stream == nil
            if case .stream = response.body { whole = false }
            await finisher.answered(context, &response, whole: whole, report: report)
            // After the finisher took the report in: a detached stream may end before the client reads a byte.
            if let produce = answer.stream {
                response.body =
                    if let detached = answer.detached {
                        finisher.detach(produce, into: detached, context: context)
                    } else {
                        .stream { writer in try await RequestFinisher.stream(produce, context: context, writer) }
                    }
            }
        }
        response.finished = { [finisher] end in await finisher.finish(context, end) }
        return response
    }

    /// The answer to a request the HTTP server refused before routing (a malformed head, a
    /// body over the limit, a read timeout), through the same finished hook.
    func refuse(_ failure: ProtocolError) -> HTTPResponse {
        let context = makeContext(failure.head ?? .placeholder)
        finisher.started(context)
        let error = GatewayError.protocolError(failure.status)
        finisher.refusedBeforeRouting(context, error, detail: failure.parseError.map { "\($0)" } ?? "timeout")
        var response = ErrorRenderer.response(error, shape: .gateway, requestID: context.id, language: context.language)
        requestID.stamp(&response, context: context, report: RouteReport())
        response.finished = { [finisher] end in await finisher.finish(context, end) }
        return response
    }

    private func makeContext(_ head: RequestHead, route: RouteLabel? = nil, trace: TraceRecorder? = nil)
        -> RequestContext
    {
        let group = groups.first { head.path.hasUTF8Prefix($0.prefix) } ?? .root
        let headers = head.headers
        // Unset, `/api` speaks Persian whatever the app's Accept-Language says (an iOS app
        // sends its development region's), and `/v1` negotiates, as OpenAI's SDKs expect.
        let fallback: Language = group.errorShape == .openAI ? .english : .persian
        let language: Language
        switch errorLanguage ?? (group.errorShape == .openAI ? .auto : .persian) {
        case .persian: language = .persian
        case .english: language = .english
        case .auto: language = Language(acceptLanguage: headers["Accept-Language"], default: fallback)
        }
        let route = route ?? RouteLabel(path: head.path)
        return RequestContext(
            id: RequestID.accept(headers["X-Request-Id"]), method: head.method, path: head.path,
            route: route, errorShape: group.errorShape, language: language,
            strictLedger: route.isLedgered ? strictLedger : nil, trace: trace
        )
    }
}

/// `ERROR_LANGUAGE`: which language error messages speak.
package enum ErrorLanguage: String, Sendable, Equatable {
    case persian = "fa"
    case english = "en"
    /// Negotiated from `Accept-Language` (`en…` or `fa…`, by weight); Persian when it names
    /// neither (English on `/v1`).
    case auto
}
