import Access
import HTTP1
import HTTPServer
import Store

/// `Idempotency-Key` on the routes that spend tokens (docs/api.md, "Retries"). Without the
/// field a request passes as if this layer were not there. With it, the first request's
/// handler is no longer cancelled when its client hangs up, its successful answer is kept,
/// and a retry gets that answer (or joins it while it runs) without an upstream call.
///
/// It sits last, after the limits: a retry still counts as a request.
struct IdempotencyMiddleware: Middleware {
    /// The route's answer shapes: how a kept stream is replayed, and which status a replay has.
    enum Route: Sendable, CaseIterable {
        case process
        case chat
        case jobs

        /// How the route keeps and replays its answers: its own.
        var keeping: any AnswerKeeping {
            switch self {
            case .process: ProcessRoute.Keeping()
            case .chat: ChatCompletionsRoute.Keeping()
            case .jobs: SubmitJobRoute.Keeping()
            }
        }

        /// Where the route is served: the path in its keys' scope.
        var path: String {
            switch self {
            case .process: "/api/process"
            case .chat: "/v1/chat/completions"
            case .jobs: "/api/jobs"
            }
        }
    }

    let service: IdempotencyService
    let route: Route
    /// How long this route's answers are kept.
    let timeToLive: Duration
    /// A guest's address as its key (a guest's idempotency keys are its address's).
    let clients: ClientAddressKey

    func handle(
        _ request: HTTPRequest, context: RequestContext, report: inout RouteReport, next: @escaping RouteResponder
    ) async throws -> RouteAnswer {
        switch IdempotencyKey.read(request.headers) {
        case .absent: return await next(request, context, &report)
        case .invalid: throw GatewayError.invalidIdempotencyKey
        case .key(let key): return try await keyed(key, request, context: context, report: &report, next: next)
        }
    }

    /// A request with an `Idempotency-Key`: out of line, so that a request without one
    /// carries none of this step's frame under the steps after it.
    @inline(never)
    private func keyed(
        _ key: String, _ request: HTTPRequest, context: RequestContext, report: inout RouteReport,
        next: @escaping RouteResponder
    ) async throws -> RouteAnswer {
        let caller = context.caller.map { "user:" + $0.userID } ?? "address:" + clients.key(for: request)
        // `Accept` asks /api/process for a stream as `"stream": true` does: a retry must ask
        // for the form the first asked for, or be told its key is another request's.
        let ticket = IdempotencyService.Ticket(
            scope: IdempotencyService.scope(caller: caller, path: route.path), key: key,
            fingerprint: IdempotencyKey.fingerprint(
                method: request.method.rawValue, path: request.path, body: request.body,
                eventStream: route.keeping.asksForEventStream(request)),
            timeToLive: timeToLive
        )
        switch service.admit(ticket, requestID: context.id) {
        case .mismatch:
            service.metrics.count(.mismatch)
            throw GatewayError.idempotencyKeyReused
        case .join(let flight):
            return try await follow(flight, await flight.decision.value, ticket: ticket, report: &report)
        case .lead(let flight):
            // From here the client hanging up no longer cancels this task: neither the records'
            // begin, the upstream call nor the keeping of the answer is cut short.
            request.keepRunningIfClientLeaves()
            switch await service.begin(ticket, flight: flight) {
            case .failed(let error): throw error
            case .refer(let referral): return try await refer(referral, ticket: ticket, report: &report)
            case .run: break
            }
            return await lead(flight, ticket: ticket, request: request, context: context, report: &report, next: next)
        }
    }

    /// The first request with its key, in a task its client's hang-up does not cancel.
    private func lead(
        _ flight: IdempotencyService.Flight, ticket: IdempotencyService.Ticket, request: HTTPRequest,
        context: RequestContext, report: inout RouteReport,
        next: @escaping RouteResponder
    ) async -> RouteAnswer {
        let tee = route.keeping.tee(requestID: context.id)
        report.idempotency = .original
        let answer = await next(request, tee.map { context.teeing(into: $0) } ?? context, &report)
        return await settle(answer, upstream: report.upstream, flight: flight, ticket: ticket, tee: tee)
    }

    /// Keeps a successful whole answer, or has the pipeline produce a stream into the tee
    /// apart from its client and keeps it when it ends; a failure gives the key back.
    private func settle(
        _ answer: RouteAnswer, upstream: String?, flight: IdempotencyService.Flight,
        ticket: IdempotencyService.Ticket, tee: StreamTee?
    ) async -> RouteAnswer {
        if let failure = answer.failure {
            await service.release(ticket, flight: flight, error: failure as? GatewayError ?? .internalError)
            return answer
        }
        let response = answer.response
        guard answer.stream != nil else {
            guard case .bytes(let body) = response.body else {
                // A route that streams gives a producer: this one cannot keep what it streams.
                await service.release(ticket, flight: flight, error: .internalError)
                return answer
            }
            guard (200..<300).contains(response.status.code) else {
                await service.release(ticket, flight: flight, error: .internalError)
                return answer
            }
            let kept = StoredAnswer(
                status: response.status.code, contentType: response.headers["Content-Type"] ?? "application/json",
                upstream: upstream, body: body, text: nil, streamed: false
            )
            await service.complete(ticket, flight: flight, answer: kept)
            return answer
        }
        guard let tee else {
            // A route that streams is given a tee: this one cannot keep what it streams.
            await service.release(ticket, flight: flight, error: .internalError)
            return answer
        }
        let service = self.service
        let keeping = route.keeping
        let contentType = response.headers["Content-Type"] ?? "text/event-stream; charset=utf-8"
        var detached = answer
        detached.detached = DetachedStream(tee: tee) { report in
            guard let report, report.outcome == .done else {
                await service.release(ticket, flight: flight, error: report?.error ?? .upstreamError)
                return
            }
            await service.complete(
                ticket, flight: flight, answer: keeping.kept(tee, contentType: contentType, upstream: upstream))
        }
        flight.answer.set(.stream(tee, upstream: upstream))
        return detached
    }

    /// A retry that came while the first request ran on this instance.
    private func follow(
        _ flight: IdempotencyService.Flight, _ decision: IdempotencyService.Flight.Decision,
        ticket: IdempotencyService.Ticket, report: inout RouteReport
    ) async throws -> RouteAnswer {
        switch decision {
        case .failed(let error): throw error
        case .refer(let referral): return try await refer(referral, ticket: ticket, report: &report)
        case .run: break
        }
        switch await flight.answer.value {
        case .whole(.failure(let error)):
            throw error
        case .whole(.success(let answer)):
            await service.noteReplay(ticket, role: .joined)
            return replay(answer, requestID: flight.requestID, role: .joined, report: &report)
        case .stream(let tee, let upstream):
            await service.noteReplay(ticket, role: .joined)
            report.note(replayOf: flight.requestID, role: .joined, upstream: upstream)
            return RouteAnswer(
                HTTPResponse(
                    headers: ProcessRoute.Keeping.replayedStreamHeaders,
                    body: .stream { writer in try await tee.subscribe(joining: true).forward(to: writer) }))
        }
    }

    /// What the records said of a key this instance does not run.
    private func refer(
        _ referral: IdempotencyService.Flight.Referral, ticket: IdempotencyService.Ticket, report: inout RouteReport
    ) async throws -> RouteAnswer {
        switch referral {
        case .mismatch:
            service.metrics.count(.mismatch)
            throw GatewayError.idempotencyKeyReused
        case .inProgress:
            service.metrics.count(.conflict)
            throw GatewayError.idempotencyInProgress
        case .completed(let requestID, let answer):
            await service.noteReplay(ticket, role: .replayed)
            return replay(answer, requestID: requestID, role: .replayed, report: &report)
        }
    }

    /// A kept answer, as the first request's client got it (a stream as `start`, one
    /// `delta` and the same `done` on `/api/process`; its events on `/v1`), for `requestID`.
    private func replay(
        _ answer: StoredAnswer, requestID: String, role: IdempotencyRole, report: inout RouteReport
    ) -> RouteAnswer {
        report.note(replayOf: requestID, role: role, upstream: answer.upstream)
        return RouteAnswer(route.keeping.replay(answer, requestID: requestID))
    }
}
