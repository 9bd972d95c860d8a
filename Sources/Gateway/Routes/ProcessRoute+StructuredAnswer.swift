import ChatAPI

extension ProcessRoute {
    /// The answer to `request` from the upstream: its text, or for `"format": "json"` the
    /// answer checked against the task's schema, with one repair call when it broke it (the
    /// usage then counts both calls).
    static func answer(
        _ request: ProcessRequest, pool: UpstreamPool, bodies: ProcessBodies, requestID: String, logger: Logger,
        onAttempt: (UpstreamPool.Target) -> Void
    ) async throws(GatewayError) -> ResponseCache.Answer {
        let choice = UpstreamModelChoice.task(request.task)
        let (first, target) = try await complete(
            choice, pool: pool, requestID: requestID, logger: logger, onAttempt: onAttempt
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
            choice, pool: pool, only: target.upstream, requestID: requestID, logger: logger, onAttempt: onAttempt
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
