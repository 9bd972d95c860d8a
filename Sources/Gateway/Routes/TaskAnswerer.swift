import ChatAPI
import Jobs
import Pricing
import Store
import Telemetry
import TextTasks
import Tracing
import Upstream

/// "Answer a text task through the pool": the one home of it, used by `/api/process`, the
/// jobs (as their ``JobAnswering``) and the eval. A stream asks the pool itself (it relays
/// the answer as it comes), with the same bodies.
struct TaskAnswerer: JobAnswering {
    let pool: UpstreamPool
    /// The upstream bodies, those of the configured models encoded once but for the text.
    let bodies: ProcessBodies
    let maxTokens: Int
    let logger: Logger
    /// Where a finished job's row goes; nil where no job runs (the eval).
    let recorder: LedgerRecorder?
    /// The budgets a job's calls count in; nil when none is set.
    var budgets: JobBudgets? = nil
    /// What a job's answers cost, priced when each comes; nil without `PRICES`.
    var prices: PriceList? = nil
    /// Traces a job's chunks, in the trace of the request that made the job; nil when tracing is off.
    var tracer: RequestTracer? = nil
    var clock: @Sendable () -> Instant = { Instant.now }

    /// The answer to `request`: its text, or for `"format": "json"` its checked data.
    func answer(_ request: ProcessRequest, requestID: String, attempts: inout UpstreamAttempts)
        async throws(GatewayError) -> ResponseCache.Answer
    {
        try await Self.answer(
            request, pool: pool, bodies: bodies, requestID: requestID, logger: logger, attempts: &attempts)
    }

    package func answer(_ question: JobQuestion, job: JobRecord) async throws(JobFailure) -> JobAnswer {
        guard let tracer, let trace = tracer.beginChunk(of: job) else { return try await untraced(question, job: job) }
        let started = WallClock.nanoseconds()
        // The chunk's upstream attempts find its trace here, as a request's do.
        let result = await CurrentTrace.$recorder.withValue(trace) { () async -> Result<JobAnswer, JobFailure> in
            do throws(JobFailure) {
                return .success(try await untraced(question, job: job))
            } catch {
                return .failure(error)
            }
        }
        tracer.endChunk(trace, of: job, question: question, since: started, result: result)
        return try result.get()
    }

    /// One of a job's questions answered, its budgets reserved and settled.
    private func untraced(_ question: JobQuestion, job: JobRecord) async throws(JobFailure) -> JobAnswer {
        guard let budgets else { return try await pricedAnswer(question, requestID: job.requestID).answer }
        let reservation =
            switch question {
            case .final(_, _, let format, let text):
                try await budgets.reserve(
                    for: job, inputBytes: text.utf8.count, prompted: true, json: format == .json)
            case .step(let prompt, _):
                try await budgets.reserve(
                    for: job, inputBytes: prompt.system.utf8.count + prompt.user.utf8.count, prompted: false,
                    json: false)
            }
        do throws(JobFailure) {
            let (answer, priced) = try await pricedAnswer(question, requestID: job.requestID)
            if let reservation { await budgets.settle(reservation, usage: answer.usage, costMicros: priced) }
            return answer
        } catch {
            if let reservation { await budgets.settle(reservation, usage: nil, costMicros: nil) }
            throw error
        }
    }

    /// The answer with its cost at the prices now, and whether that cost is known (a call
    /// without usage, or whose model has no price, is not; without prices there is nothing to
    /// know and it counts as 0).
    private func pricedAnswer(_ question: JobQuestion, requestID: String) async throws(JobFailure) -> (
        answer: JobAnswer, costMicros: Int64?
    ) {
        var (answer, attempts) = try await answer(question, requestID: requestID)
        guard let prices else { return (answer, 0) }
        if let usage = answer.usage, let model = attempts.last?.model {
            answer.costMicros = prices.cost(
                of: TokenCounts(usage), model: model, at: Int64(clock().secondsSinceEpoch * 1000))
        }
        return (answer, answer.costMicros)
    }

    /// The answer to one of a job's questions, and the attempts it took.
    private func answer(_ question: JobQuestion, requestID: String) async throws(JobFailure) -> (
        answer: JobAnswer, attempts: UpstreamAttempts
    ) {
        let answer: ResponseCache.Answer
        // A job's items are not logged one by one: their attempts go nowhere.
        var attempts = UpstreamAttempts()
        do throws(GatewayError) {
            switch question {
            case .final(let task, let tone, let format, let text):
                let request = ProcessRequest(
                    task: task, tone: tone, text: text, characterCount: 0, stream: false, format: format)
                answer = try await self.answer(request, requestID: requestID, attempts: &attempts)
            case .step(let prompt, let rounds):
                let maxTokens = self.maxTokens
                answer = try await Self.complete(
                    .task(rounds), pool: pool, requestID: requestID, logger: logger, attempts: &attempts
                ) { target in
                    ChatCompletionRequest(
                        model: target.model,
                        messages: [
                            ChatMessage(role: .system, content: prompt.system),
                            ChatMessage(role: .user, content: prompt.user),
                        ],
                        temperature: rounds.temperature, maxTokens: maxTokens
                    ).jsonBytes()
                }.answer
            }
        } catch {
            throw JobFailure(code: error.code.rawValue, message: error.message(.persian))
        }
        return (JobAnswer(result: answer.result, data: answer.data, usage: answer.usage), attempts)
    }

    var internalFailure: JobFailure {
        JobFailure(
            code: GatewayError.internalError.code.rawValue, message: GatewayError.internalError.message(.persian))
    }

    func recordEnd(_ job: JobRecord, durationMilliseconds: Double) {
        recorder?.record(job, durationMilliseconds: durationMilliseconds)
    }

    /// The answer to `request` from the upstream: its text, or for `"format": "json"` the
    /// answer checked against the task's schema, with one repair call when it broke it (the
    /// usage then counts both calls).
    static func answer(
        _ request: ProcessRequest, pool: UpstreamPool, bodies: ProcessBodies, requestID: String, logger: Logger,
        attempts: inout UpstreamAttempts
    ) async throws(GatewayError) -> ResponseCache.Answer {
        let choice = UpstreamModelChoice.task(request.task)
        let (first, target) = try await complete(
            choice, pool: pool, requestID: requestID, logger: logger, attempts: &attempts
        ) { target in
            bodies.body(for: request, model: target.model, mode: target.structuredMode)
        }
        guard request.format == .json else { return first }
        let violation: SchemaViolation
        switch StructuredOutput.read(first.result, task: request.task) {
        case .success(let structured):
            return ResponseCache.Answer(result: structured.result, usage: first.usage, data: structured.data)
        case .failure(let failure):
            violation = failure
        }
        logInvalid(violation, attempt: 1, task: request.task, requestID: requestID, logger: logger)
        // The repair goes to the upstream and model that gave the broken answer.
        let (second, _) = try await complete(
            choice, pool: pool, only: target.upstream, requestID: requestID, logger: logger, attempts: &attempts
        ) { target in
            bodies.repairBody(
                for: request, answer: first.result, violation: violation, model: target.model,
                mode: target.structuredMode)
        }
        let usage = Usage.sum(first.usage, second.usage)
        switch StructuredOutput.read(second.result, task: request.task) {
        case .success(let structured):
            return ResponseCache.Answer(result: structured.result, usage: usage, data: structured.data)
        case .failure(let failure):
            logInvalid(failure, attempt: 2, task: request.task, requestID: requestID, logger: logger)
            throw .invalidModelOutput
        }
    }

    /// Why the answer broke its schema (the schema's paths only, never the answer's text).
    static func logInvalid(
        _ violation: SchemaViolation, attempt: Int, task: TextTask, requestID: String, logger: Logger
    ) {
        logger.warning(
            "invalid_model_output",
            [
                ("request_id", .string(requestID)), ("task", .string(task.rawValue)), ("attempt", .int(attempt)),
                ("violation", .string(violation.logReason)),
            ])
    }

    /// One call for a task through the pool: the trimmed answer, its usage and the upstream
    /// that gave it, or the mapped error. `only` keeps the call on one upstream. Out of line:
    /// inlined twice (the answer and its repair), its frame would be the caller's twice over.
    @inline(never)
    static func complete(
        _ choice: UpstreamModelChoice, pool: UpstreamPool, only: String? = nil, requestID: String, logger: Logger,
        attempts: inout UpstreamAttempts, body: (UpstreamPool.Target) -> [UInt8]
    ) async throws(GatewayError) -> (answer: ResponseCache.Answer, target: UpstreamPool.Target) {
        let answered: (ChatCompletion, UpstreamPool.Target)
        do {
            answered = try await pool.run(choice, only: only, requestID: requestID, attempts: &attempts, body: body) {
                endpoint, body, limit, target throws(ChatError) in
                (try await endpoint.complete(body: body, requestID: requestID, timeout: limit), target)
            }
        } catch {
            throw UpstreamCall.gatewayError(for: error, requestID: requestID, logger: logger)
        }
        CurrentTrace.recorder?.note(finishReasons: answered.0.choices.compactMap(\.finishReason))
        let result = TextTrim.trimmed(answered.0.firstContent ?? "")
        guard !result.isEmpty else { throw .emptyResult }
        return (ResponseCache.Answer(result: result, usage: answered.0.usage), answered.1)
    }
}

extension Usage {
    /// The counts of two calls added up, each count as far as either reported it; nil when
    /// neither reported any usage.
    static func sum(_ first: Usage?, _ second: Usage?) -> Usage? {
        guard let first, let second else { return first ?? second }
        func add(_ a: Int?, _ b: Int?) -> Int? {
            guard let a, let b else { return a ?? b }
            return a &+ b
        }
        return Usage(
            promptTokens: add(first.promptTokens, second.promptTokens),
            completionTokens: add(first.completionTokens, second.completionTokens),
            totalTokens: add(first.effectiveTotalTokens, second.effectiveTotalTokens)
        )
    }
}
