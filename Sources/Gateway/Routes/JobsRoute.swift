import Access
import ChatAPI
import EventLoop
import HTTP1
import HTTPServer
import JSON
import Jobs
import Store
import Telemetry
import TextTasks
import Upstream

/// What the job routes share: the store, the runner of this instance, the settings.
struct JobRoutes: Sendable {
    let runner: JobRunner
    /// The upstreams, and the tasks they have a model for.
    let pool: UpstreamPool
    let streams: StreamRegistry
    let heartbeat: Duration
    /// A guest's address as its key: the jobs it may have in flight are counted by it.
    let clients: ClientAddressKey

    // The routes work on what the runner works on.
    var store: any JobStore { runner.dependencies.store }
    var settings: JobSettings { runner.dependencies.settings }
    var faults: StoreFaults { runner.dependencies.faults }
    var metrics: JobMetrics { runner.dependencies.metrics }
    var events: JobEvents { runner.dependencies.events }
    var clock: @Sendable () -> Instant { runner.dependencies.clock }

    /// The job `id` names, when the caller may see it: a job of an identified caller is only
    /// its owner's, and another caller's is exactly as absent as a missing one.
    func visibleJob(_ request: HTTPRequest, context: RequestContext, suffix: String = "") async throws(GatewayError)
        -> JobRecord
    {
        let id = String(RoutingTable<Int>.parameter(in: request.path, before: suffix))
        guard JobID.isWellFormed(id) else { throw .itemNotFound }
        let found: JobRecord?
        do {
            found = try await store.job(id: id)
        } catch {
            throw faults.unavailable(error, operation: .jobs)
        }
        guard let job = found, job.ownerID == nil || job.ownerID == context.caller?.userID else { throw .itemNotFound }
        return job
    }

    static let jsonHeaders: HTTPHeaders = [
        "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store",
    ]

    /// A job as docs/api.md shows it.
    static func write(_ job: JobRecord, language: Language, into object: inout JSONWriter) {
        object.field("jobId", job.id)
        object.field("status", job.status.rawValue)
        object.field("task", job.task)
        object.field(
            "progress",
            object: { progress in
                progress.field("done", job.done)
                progress.field("total", max(job.total, job.done))
            })
        object.field("result", job.result)
        if let data = job.data {
            object.field("data", json: Array(data.utf8))
        } else {
            object.nullField("data")
        }
        object.field(
            "usage",
            object: { usage in
                usage.field("inputTokens", job.inputTokens)
                usage.field("outputTokens", job.outputTokens)
                usage.field("totalTokens", job.inputTokens &+ job.outputTokens)
            })
        object.field("costMicros", job.costMicros.map { Int($0) })
        if let error = JobRoutes.error(of: job) {
            object.field("error", object: { $0.errorFields(error, language: language) })
        } else {
            object.nullField("error")
        }
        object.field("createdAt", Timestamp.iso8601(milliseconds: job.createdAtMilliseconds))
        object.field("updatedAt", Timestamp.iso8601(milliseconds: job.updatedAtMilliseconds))
    }

    /// What a failed or cancelled job ended with.
    static func error(of job: JobRecord) -> GatewayError? {
        switch job.status {
        case .failed: GatewayError.known(code: job.errorCode ?? GatewayError.internalError.code.rawValue)
        case .cancelled: .jobCancelled
        case .queued, .running, .succeeded: nil
        }
    }
}

extension JSONWriter {
    fileprivate mutating func errorFields(_ error: GatewayError, language: Language) {
        field("code", error.code.rawValue)
        field("message", error.message(language))
    }
}

/// `POST /api/jobs` of a gateway with a store but no upstream key: the body is checked as
/// ever, then the answer is `500 not_configured`, as `/api/process` gives.
struct UnconfiguredJobsRoute: RouteHandler {
    let settings: JobSettings

    func answer(_ request: HTTPRequest, context: RequestContext, report: inout RouteReport)
        async throws(GatewayError) -> RouteAnswer
    {
        RouteAnswer(try await handle(request, context: context, report: &report))
    }

    private func handle(_ request: HTTPRequest, context: RequestContext, report: inout RouteReport)
        async throws(GatewayError) -> HTTPResponse
    {
        _ = try ProcessRequest.parse(request, noting: &report, maximumCharacters: settings.maxCharacters)
        throw .keyNotConfigured
    }
}

/// `POST /api/jobs`: a long text as a job, answered at once with its id (`202`).
struct SubmitJobRoute: RouteHandler {
    let jobs: JobRoutes

    func answer(_ request: HTTPRequest, context: RequestContext, report: inout RouteReport)
        async throws(GatewayError) -> RouteAnswer
    {
        RouteAnswer(try await handle(request, context: context, report: &report))
    }

    private func handle(_ request: HTTPRequest, context: RequestContext, report: inout RouteReport)
        async throws(GatewayError) -> HTTPResponse
    {
        let settings = jobs.settings
        let parsed = try ProcessRequest.parse(request, noting: &report, maximumCharacters: settings.maxCharacters)
        guard jobs.pool.firstModel(for: .task(parsed.task)) != nil else { throw .modelNotConfigured }
        // Rewritten parts are put back together in order: an overlap would repeat text.
        let chunker = TextChunker(
            budget: settings.chunkCharacters, overlap: parsed.task == .rewrite ? 0 : settings.overlapCharacters)
        let chunks = chunker.chunks(of: TextChunker.clean(parsed.text))
        let caller = context.caller
        let callerKey =
            caller.map { RateLimitMiddleware.key(userID: $0.userID) } ?? "address:" + jobs.clients.key(for: request)
        let id = JobID.make()
        var job = NewJob(
            id: id, ownerID: caller?.userID, callerKey: callerKey, plan: caller?.plan, requestID: context.id,
            task: parsed.task.rawValue,
            tone: parsed.tone?.rawValue, format: parsed.format.rawValue, inputLength: parsed.characterCount,
            createdAtMilliseconds: Int64(jobs.clock().secondsSinceEpoch * 1000),
            total: JobPlan.expectedCalls(task: parsed.task, chunkCount: chunks.count),
            items: JobPlan.firstLevel(task: parsed.task, chunks: chunks).map(NewJobItem.init)
        )
        // Its chunks join this request's trace, whichever instance runs them.
        job.traceParent = context.trace?.context.traceparent
        let created: JobCreation
        do {
            created = try await jobs.store.createJob(job, maxActive: settings.maxActivePerCaller)
        } catch {
            throw jobs.faults.unavailable(error, operation: .jobs)
        }
        if case .tooManyActive = created { throw .tooManyJobs }
        jobs.runner.wake()
        var body = JSONWriter(capacity: 96)
        body.object {
            $0.field("jobId", id)
            $0.field("status", JobStatus.queued.rawValue)
        }
        var headers = JobRoutes.jsonHeaders
        headers.add(name: "Location", value: RouteLabel.jobs.rawValue + "/" + id)
        return HTTPResponse(status: .accepted, headers: headers, body: .bytes(body.bytes))
    }
}

/// `GET /api/jobs/{id}` (the job as it stands) and `DELETE /api/jobs/{id}` (cancels it).
struct JobRoute: ResponseHandler {
    let jobs: JobRoutes

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        var job = try await jobs.visibleJob(request, context: context)
        if request.method == .DELETE, !job.status.isFinished {
            let cancelled: JobRecord?
            do {
                cancelled = try await jobs.store.cancelJob(
                    id: job.id, nowMilliseconds: Int64(jobs.clock().secondsSinceEpoch * 1000))
            } catch {
                throw jobs.faults.unavailable(error, operation: .jobs)
            }
            if let cancelled {
                // Only the call that moved it to cancelled counts its end.
                if cancelled.status == .cancelled {
                    jobs.runner.cancelLocally(job.id)
                    jobs.events.changed(job.id)
                    JobRunner.recordEnd(
                        cancelled, metrics: jobs.metrics, answering: jobs.runner.dependencies.answering,
                        now: jobs.clock())
                }
                job = cancelled
            }
        }
        var body = JSONWriter(capacity: 400 + (job.result?.utf8.count ?? 0) + (job.data?.utf8.count ?? 0))
        body.object { JobRoutes.write(job, language: context.language, into: &$0) }
        return HTTPResponse(
            status: request.method == .DELETE ? .accepted : .ok, headers: JobRoutes.jsonHeaders,
            body: .bytes(body.bytes))
    }
}

/// `GET /api/jobs/{id}/events`: the job's progress as server-sent events — `progress`
/// (`{"done","total"}`) at each change, then one `done` (the job, as `GET` shows it) or
/// `error` (`{"code","message"}`); `: ping` when quiet for a heartbeat interval.
struct JobEventsRoute: ResponseHandler {
    static let suffix = "/events"
    /// How often the store is read for a job run by another instance (this one's own jobs
    /// wake the stream at once).
    static let pollInterval: Duration = .seconds(1)

    let jobs: JobRoutes

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let first = try await jobs.visibleJob(request, context: context, suffix: Self.suffix)
        let jobs = self.jobs
        let language = context.language
        let control = StreamControl(
            limits: StreamControl.Limits(
                firstToken: .seconds(86_400), idle: .seconds(86_400), total: .seconds(86_400 * 7),
                heartbeat: jobs.heartbeat
            ))
        return HTTPResponse(
            headers: [
                "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            ],
            body: .stream { writer in
                try await jobs.streams.withRegistered(control) {
                    try await jobs.events.subscribe(first.id) { wakeup in
                        try await Self.run(
                            first, jobs: jobs, language: language, control: control, wakeup: wakeup, writer: writer)
                    }
                }
            }
        )
    }

    private static func run(
        _ first: JobRecord, jobs: JobRoutes, language: Language, control: StreamControl, wakeup: Wakeup,
        writer: ResponseBodyWriter
    ) async throws {
        var job = first
        var sent: (done: Int, total: Int)?
        var lastWrite = MonotonicInstant.now()
        while true {
            let progress = (done: job.done, total: max(job.total, job.done))
            if sent == nil || sent! != progress {
                try await writer.write(
                    ServerSentEventWriter.jsonEvent("progress") {
                        $0.field("done", progress.done)
                        $0.field("total", progress.total)
                    })
                sent = progress
                lastWrite = .now()
            }
            if job.status.isFinished {
                if job.status == .succeeded {
                    try await writer.write(
                        ServerSentEventWriter.jsonEvent("done") { JobRoutes.write(job, language: language, into: &$0) })
                } else if let error = JobRoutes.error(of: job) {
                    try await writer.write(
                        ServerSentEventWriter.jsonEvent("error") { $0.errorFields(error, language: language) })
                }
                return
            }
            if control.endReason == .shutdown {
                try await writer.write(
                    ServerSentEventWriter.jsonEvent("error") { $0.errorFields(.shuttingDown, language: language) })
                return
            }
            if Task.isCancelled { return }
            if lastWrite.nanoseconds(until: .now()) >= UInt64(jobs.heartbeat / .nanoseconds(1)) {
                try await writer.write(ServerSentEventWriter.comment("ping"))
                lastWrite = .now()
            }
            await wakeup.wait(timeout: min(pollInterval, jobs.heartbeat))
            do {
                if let read = try await jobs.store.job(id: job.id) { job = read }
            } catch {
                // The next poll tries again; the client sees heartbeats meanwhile.
                jobs.faults.record(error, operation: .jobs)
            }
        }
    }

}

/// Job ids: 128 random bits from the system's generator, as 32 lower-case hex digits.
enum JobID {
    static func make() -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(32)
        for byte in SystemRandom.bytes(16) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func isWellFormed(_ id: String) -> Bool {
        id.utf8.count == 32 && id.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}

extension SubmitJobRoute {
    /// How `POST /api/jobs` keeps its answer for an `Idempotency-Key`: a job is made once, so
    /// a retry is told where it is, with `200` rather than `202`.
    struct Keeping: AnswerKeeping {
        func replay(_ answer: StoredAnswer, requestID: String) -> HTTPResponse {
            var response = Self.wholeReplay(answer)
            guard answer.status == 202 else { return response }
            response.status = .ok
            if let id = (try? JSONValue.parse(answer.body))?["jobId"]?.stringValue {
                response.headers.add(name: "Location", value: "/api/jobs/" + id)
            }
            return response
        }
    }
}
