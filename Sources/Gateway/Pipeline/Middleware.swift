import Access
import ChatAPI
import Crypto
import HTTP1
import HTTPServer
import JSON
import Store
import Telemetry
import Tracing

/// What a route (with its middleware) is: a request and its context in, an answer out, and
/// what the steps learned in `report` (one value the pipeline owns, which each step writes
/// in place). It never throws: a failure is an answer (``RouteAnswer/failure``).
typealias RouteResponder =
    nonisolated(nonsending) @Sendable (HTTPRequest, RequestContext, inout RouteReport) async -> RouteAnswer

/// One concern of the request path, in the shape of Hummingbird's `MiddlewareProtocol`:
/// it sees the request and its context, may answer itself (or throw, which answers with the
/// error) or call `next` with the context the next step should see, notes what it learned
/// in `report`, and may change what `next` answered. Chains are composed once, when the
/// gateway starts.
protocol Middleware: Sendable {
    func handle(
        _ request: HTTPRequest, context: RequestContext, report: inout RouteReport, next: @escaping RouteResponder
    ) async throws -> RouteAnswer
}

extension Array where Element == any Middleware {
    /// `responder` behind these middleware, the first one outermost; what one throws becomes
    /// its answer's failure, so the steps outside it still see an answer.
    func wrapping(_ responder: @escaping RouteResponder) -> RouteResponder {
        // A loop, not `reduce`: a closure passed through a generic parameter is stored at the
        // most general abstraction, and every call through it then goes through two
        // reabstraction thunks, each an async frame of its own on every request's stack.
        var chain = responder
        for middleware in reversed() {
            let next = chain
            chain = { request, context, report in
                do {
                    return try await middleware.handle(request, context: context, report: &report, next: next)
                } catch {
                    return RouteAnswer(failure: error)
                }
            }
        }
        return chain
    }
}

/// A route's handler: a struct holding what it needs, answering with a response (``RouteAnswer``)
/// or a typed gateway error, and noting what it learns in `report`, which the pipeline
/// keeps whichever way the handler ends.
protocol RouteHandler: Sendable {
    func answer(_ request: HTTPRequest, context: RequestContext, report: inout RouteReport)
        async throws(GatewayError) -> RouteAnswer
}

extension RouteHandler {
    /// This handler as the innermost step of a chain: its error becomes its answer's failure
    /// (what it noted in `report` stays noted either way).
    var responder: RouteResponder {
        { request, context, report in
            do {
                return try await self.answer(request, context: context, report: &report)
            } catch {
                return RouteAnswer(failure: error)
            }
        }
    }
}

/// A route whose response is all there is to say: no upstream call, no gateway stream.
protocol ResponseHandler: RouteHandler {
    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse
}

extension ResponseHandler {
    func answer(_ request: HTTPRequest, context: RequestContext, report: inout RouteReport)
        async throws(GatewayError) -> RouteAnswer
    {
        RouteAnswer(try await handle(request, context: context))
    }
}

/// Gives every response the request's `X-Request-Id`, and `X-Upstream` once an upstream
/// was asked. Not a link of a chain: the pipeline's outermost step calls it in place, so
/// that no async layer of its own is on every request's stack.
struct RequestIDMiddleware {
    func stamp(_ response: inout HTTPResponse, context: RequestContext, report: RouteReport) {
        response.headers.replaceOrAdd(name: "X-Request-Id", value: report.replayOf ?? context.id)
        // Only the pipeline sets it, once: no route does.
        if let upstream = report.upstream { response.headers.add(name: "X-Upstream", value: upstream) }
    }
}

/// Turns every error into the route group's error shape, in the request's language; an
/// error that is not the gateway's own becomes a bare `500 internal_error` whose type goes
/// to the log only. Not a link of a chain: the pipeline's outermost step catches and calls
/// it in place, so that no async layer of its own is on every request's stack.
struct ErrorMiddleware {
    let logger: Logger

    /// The response for `failure`.
    func render(_ failure: GatewayError, context: RequestContext) -> HTTPResponse {
        ErrorRenderer.response(failure, shape: context.errorShape, requestID: context.id, language: context.language)
    }

    /// The gateway's error for what a route threw.
    func gatewayError(for error: any Error, context: RequestContext) -> GatewayError {
        if let error = error as? GatewayError { return error }
        if error is CancellationError { return .clientClosedRequest }
        logger.error(
            "unexpected_error",
            [
                ("request_id", .string(context.id)), ("path", .string(context.path)),
                ("type", .string("\(type(of: error))")),
            ])
        return .internalError
    }
}

/// Identifies the caller from `Authorization`: a JWT from the app's identity service (when
/// sign-in is configured), a configured token (`GATEWAY_TOKENS`) or a store token.
///
/// A bearer credential that fails is `401` with `WWW-Authenticate: Bearer
/// error="invalid_token"` on every configuration, open or not: an app whose token was
/// revoked or whose sign-in expired must hear so, never be served as a guest. Without any
/// credential, a request is `401` where tokens are required and a guest where they are not.
/// The one exception (docs/api.md, "Caller tokens"): on an open gateway's `/v1` routes, a
/// token in none of the gateway's own formats (``GatewayCredential``) that no configuration
/// knows is the placeholder key an OpenAI SDK refuses to run without, and is a guest.
struct AuthMiddleware: Middleware {
    let tokens: TokenStore?
    let storeTokens: StoreTokens?
    /// App Attest's device sessions (`tgd_…`), when devices may register.
    var devices: DeviceSessions? = nil
    /// `APP_ATTEST_REQUIRED=all`: only a device session gets in.
    var devicesOnly = false
    /// Store faults, for a session the store could not be asked about.
    var faults: StoreFaults? = nil
    let jwt: JWTVerifier?
    let jwtMetrics: JWTMetrics?
    let required: Bool
    /// Whether this route takes an SDK's placeholder key as a guest (an open gateway's `/v1`).
    let placeholderGuests: Bool
    let clock: @Sendable () -> Instant

    func handle(
        _ request: HTTPRequest, context: RequestContext, report: inout RouteReport, next: @escaping RouteResponder
    ) async throws -> RouteAnswer {
        // Who the caller is, found without waiting for all but a device session or a JWT, each
        // asked in a frame of its own: this frame stays narrow under every step after it.
        let caller: Caller?
        switch try identify(request) {
        case .known(let known): caller = known
        case .device(let devices, let digest): caller = try await device(digest, in: devices)
        case .jwt(let verifier, let token): caller = try await verify(token, with: verifier)
        }
        guard let caller else { return await next(request, context, &report) }
        // The steps after this one see the caller in their context, the finisher in the report.
        report.caller = caller
        return await next(request, context.identified(as: caller), &report)
    }

    /// What `request`'s credential comes to, as far as it is known without waiting.
    private enum Identification {
        /// A token's caller, or nil for a guest.
        case known(Caller?)
        /// A device session's digest, for the store to answer.
        case device(DeviceSessions, [UInt8])
        /// A JWT, for the verifier to check.
        case jwt(JWTVerifier, [UInt8])
    }

    /// The caller `request`'s credential names, or what is still to ask; an error for a
    /// credential that fails (never a guest) or a missing one where one is required.
    @inline(never)
    private func identify(_ request: HTTPRequest) throws(GatewayError) -> Identification {
        switch BearerCredentials.read(request.headers["Authorization"]) {
        case .none:
            if required { throw GatewayError.unauthorized }
            return .known(nil)
        case .malformed:
            throw GatewayError.invalidToken.refusing(because: "malformed bearer token")
        case .token(let token):
            if GatewayCredential.isBarePrefix(token) {
                throw GatewayError.invalidToken.refusing(
                    because: GatewayCredential.failureReason(token, jwtConfigured: jwt != nil))
            }
            if let devices, token.starts(with: DeviceSessions.prefix.utf8) {
                return .device(devices, SHA256.hash(token))
            }
            if devicesOnly {
                // A valid token of another kind is still not a device: refused, not a guest.
                throw GatewayError.unauthorized.refusing(because: "a device session is required")
            }
            if let jwt, CompactJWS.looksLikeJWT(token) { return .jwt(jwt, token) }
            if let caller = caller(digest: SHA256.hash(token)) { return .known(caller) }
            if required || !placeholderGuests || GatewayCredential.isGatewayFormat(token) {
                throw GatewayError.invalidToken.refusing(
                    because: GatewayCredential.failureReason(token, jwtConfigured: jwt != nil))
            }
            return .known(nil)
        }
    }

    /// The caller of the device session whose token hashes to `digest`.
    @inline(never)
    private func device(_ digest: [UInt8], in devices: DeviceSessions) async throws(GatewayError) -> Caller {
        let caller: Caller?
        do {
            caller = try await devices.caller(digest: digest, nowMilliseconds: Int64(clock().secondsSinceEpoch * 1000))
        } catch {
            throw faults?.unavailable(error, operation: .devices) ?? GatewayError.storeUnavailable
        }
        guard let caller else {
            throw GatewayError.invalidToken.refusing(because: "unknown, expired or revoked device session")
        }
        return caller
    }

    /// The caller of a JWT the verifier accepts.
    @inline(never)
    private func verify(_ token: [UInt8], with jwt: JWTVerifier) async throws(GatewayError) -> Caller {
        let result = await jwt.verify(token, now: clock())
        jwtMetrics?.record(result)
        switch result {
        case .success(let acceptance): return acceptance.caller
        case .failure(let failure): throw GatewayError.invalidToken.refusing(because: failure.reason)
        }
    }

    private func caller(digest: [UInt8]) -> Caller? {
        tokens?.caller(digest: digest) ?? storeTokens?.caller(digest: digest)
    }
}

/// Takes a rate-limit lease for the caller (its user id, or its address for a guest) under
/// its plan, or refuses with `429` and `Retry-After` (the error carries the refusal's reason).
/// The lease is the finisher's to give back (``RequestFinisher``).
struct RateLimitMiddleware: Middleware {
    let limiter: any RateLimiter
    let plans: PlanCatalog
    /// A guest's address as its key (behind trusted proxies, an IPv6 one by its prefix).
    let clients: ClientAddressKey
    /// `MAX_TOKENS`: the most an answer may take, part of what a request reserves.
    let maxTokens: Int
    /// How the route's worst case is worked out.
    let cost: RequestCost
    /// A plan every request of the route has, keyed by the client's address whoever the
    /// caller is (App Attest's routes, which spend CPU before anyone is known).
    var perAddress: Plan? = nil
    let clock: @Sendable () -> Instant

    func handle(
        _ request: HTTPRequest, context: RequestContext, report: inout RouteReport, next: @escaping RouteResponder
    ) async throws -> RouteAnswer {
        try await admit(request, context: context, report: &report)
        return await next(request, context, &report)
    }

    /// The limiter's admission, noted in `report`, or the error that refuses the request. In
    /// a frame of its own that is gone before the route's frames are made: the plan, the key
    /// and the decision take no room in the frame a request in flight holds.
    @inline(never)
    private func admit(_ request: HTTPRequest, context: RequestContext, report: inout RouteReport)
        async throws(GatewayError)
    {
        let caller = context.caller
        let plan: Plan
        let key: String
        if let perAddress {
            plan = perAddress
            key = perAddress.name + ":" + clients.key(for: request)
        } else {
            plan = plans.plan(for: caller)
            key = caller.map { Self.key(userID: $0.userID) } ?? "address:" + clients.key(for: request)
        }
        let decision: RateDecision
        do {
            // Only a plan with a daily quota needs the worst case (for /v1, a second read of the body).
            let worstCase = plan.tokensPerDay == nil ? 0 : cost.worstCase(body: request.body, maxTokens: maxTokens)
            let started = context.trace == nil ? 0 : WallClock.nanoseconds()
            decision = try await limiter.acquire(key: key, plan: plan, reservingTokens: worstCase, now: clock())
            if let trace = context.trace { Self.trace(trace, decision, since: started) }
        } catch {
            throw GatewayError.upstreamBusy
        }
        switch decision {
        case .refused(let status, let reason):
            var error = GatewayError.rateLimited
            error.refusal = reason
            for field in status.headerFields { error.headers.replaceOrAdd(name: field.name, value: field.value) }
            throw error
        case .allowed(let lease, let status):
            report.admission = Admission(lease: lease, plan: plan, limiter: limiter, status: status)
        }
    }

    /// What a request may use, reserved before it runs: its input at about three bytes a token
    /// (rough, on the high side for Persian and JSON) and the longest answer allowed.
    static func tokenEstimate(bodyBytes: Int, maxTokens: Int) -> Int {
        bodyBytes / 3 + maxTokens
    }

    /// The limiter's key for an identified caller.
    static func key(userID: String) -> String { "user:" + userID }

    /// The limiter's decision as a span of the request's trace: the time it took (a Redis
    /// round trip with several instances) and whether it admitted the request.
    private static func trace(_ trace: TraceRecorder, _ decision: RateDecision, since start: UInt64) {
        var span = trace.child("rate limit", kind: .internal, since: start)
        switch decision {
        case .allowed: span.set("textgateway.rate_limit.decision", "allowed")
        case .refused(_, let reason):
            span.set("textgateway.rate_limit.decision", "refused")
            span.set("textgateway.rate_limit.reason", "\(reason)")
        }
        trace.record(span)
    }
}

/// The most a route's request can cost in tokens, known before it goes upstream: what the
/// limiter reserves, and refuses when the caller's day has not that much left.
enum RequestCost: Sendable {
    /// Nothing goes upstream (`/v1/models`).
    case none
    /// One answer of at most `MAX_TOKENS` (`/api/process`, a job's submission).
    case process
    /// `/v1/chat/completions`: `n` answers, each of at most the smaller of its `max_tokens`
    /// (or `max_completion_tokens`) and `MAX_TOKENS`.
    case chat(maximumMessages: Int, maximumChoices: Int)

    /// Whether the route's requests may be answered by a model at all.
    var goesUpstream: Bool {
        if case .none = self { return false }
        return true
    }

    func worstCase(body: [UInt8], maxTokens: Int) -> Int {
        let tokens = worstCaseTokens(body: body, maxTokens: maxTokens)
        return tokens.input + tokens.output
    }

    /// The worst case split into the input's estimate (about three bytes a token, on the high
    /// side for Persian and JSON) and all the answers' tokens, which cost more.
    func worstCaseTokens(body: [UInt8], maxTokens: Int) -> (input: Int, output: Int) {
        switch self {
        case .none:
            return (0, 0)
        case .process:
            return (body.count / 3, maxTokens)
        case .chat(let maximumMessages, let maximumChoices):
            // A body that does not read is refused by the route; until then it counts as one answer.
            guard let chat = try? ChatCompletionPassThrough(jsonBytes: body, maximumMessages: maximumMessages) else {
                return (body.count / 3, maxTokens)
            }
            // More answers than MAX_CHOICES: the route refuses it (400) without an upstream call.
            guard chat.choices <= maximumChoices else { return (0, 0) }
            let perChoice = min(
                [chat.maxCompletionTokens, chat.maxTokens].compactMap { $0 }.max() ?? maxTokens, maxTokens)
            let (answers, overflow) = chat.choices.multipliedReportingOverflow(by: perChoice)
            return (body.count / 3, overflow ? Int.max / 2 : answers)
        }
    }
}
