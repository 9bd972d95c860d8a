package import ChatAPI
import EventLoop
import Synchronization
package import Telemetry
package import TextTasks
import Tracing

/// Which model each upstream is asked for: a task's, or a `/v1` alias's.
package enum UpstreamModelChoice: Sendable, Equatable {
    case task(TextTask)
    case alias(String)
}

/// The upstreams in fallback order behind one policy (docs/api.md, "Upstreams: retries, fallback,
/// cooldown"): a call that fails before any byte of its answer (connect or TLS error, `429`,
/// `500`, `502`, `503`, `504`, a timeout before the head) is tried again on the same upstream
/// after a backoff with full jitter, or after its `Retry-After` when that is short enough, then
/// on the next upstream; an upstream that keeps failing is skipped for a cooldown, then probed.
/// All attempts together stay within `UPSTREAM_TIMEOUT_SECONDS`. Nothing here retries once an
/// answer has begun: the callers get a stream only after its head, and never come back.
package final class UpstreamPool: Sendable {
    /// One upstream of the pool: a class, so a call walking the pool takes one reference
    /// per upstream rather than copying its settings.
    final class Member: Sendable {
        let settings: UpstreamSettings
        let endpoint: any ChatUpstream
        let breaker: CircuitBreaker
        let metrics: UpstreamMetrics.Member
        /// Attempts answered and failed since start, for the operator's console.
        let answers = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        /// What the attempts' spans of each model this upstream is asked for always hold (their
        /// name, the model, this upstream's name and address), made once.
        let spans: [String: SpanTemplate]
        /// The default model's, found without hashing the model's name (most attempts use it).
        let defaultSpan: SpanTemplate?

        init(
            settings: UpstreamSettings, endpoint: any ChatUpstream, breaker: CircuitBreaker,
            metrics: UpstreamMetrics.Member
        ) {
            self.settings = settings
            self.endpoint = endpoint
            self.breaker = breaker
            self.metrics = metrics
            let models = Set(
                [settings.defaultModel].compactMap { $0 } + settings.taskModels.values + settings.aliasModels.values)
            let spans = Dictionary(
                uniqueKeysWithValues: models.map { ($0, AttemptSpan.template(upstream: settings, model: $0)) })
            self.spans = spans
            defaultSpan = settings.defaultModel.flatMap { spans[$0] }
        }

        /// What every attempt of `model` on this upstream holds.
        func span(_ model: String) -> SpanTemplate {
            if model == settings.defaultModel, let defaultSpan { return defaultSpan }
            return spans[model] ?? AttemptSpan.template(upstream: settings, model: model)
        }

        var name: String { settings.name }

        func model(_ choice: UpstreamModelChoice) -> String? {
            switch choice {
            case .task(let task): settings.model(for: task)
            case .alias(let alias): settings.model(forAlias: alias)
            }
        }
    }

    /// What one attempt goes to, for the caller to build its body and record who answered.
    package struct Target: Sendable, Equatable {
        package let upstream: String
        package let model: String
        package let structuredMode: StructuredMode
    }

    let members: [Member]
    let policy: UpstreamPolicy
    /// `UPSTREAM_TIMEOUT_SECONDS`: every attempt and wait of one call together.
    let deadline: Duration
    private let deadlineNanoseconds: UInt64
    private let tryTimeoutNanoseconds: UInt64?
    private let logger: Logger
    private let sleep: @Sendable (Duration) async throws -> Void

    /// - Parameter sleep: how a backoff waits (tests pass one that records); it throws when
    ///   the request is cancelled.
    package init(
        members: [(settings: UpstreamSettings, endpoint: any ChatUpstream)], policy: UpstreamPolicy, deadline: Duration,
        metrics: UpstreamMetrics, logger: Logger,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.members = members.map { member in
            Member(
                settings: member.settings, endpoint: member.endpoint,
                breaker: CircuitBreaker(threshold: policy.breakerFailures, cooldown: policy.cooldown),
                metrics: metrics.member(member.settings.name)
            )
        }
        self.policy = policy
        self.deadline = deadline
        deadlineNanoseconds = deadline.nanosecondsClamped
        tryTimeoutNanoseconds = policy.tryTimeout?.nanosecondsClamped
        self.logger = logger
        self.sleep = sleep
    }

    /// The model of the first upstream that has one for `choice`; nil when none has.
    package func firstModel(for choice: UpstreamModelChoice) -> String? {
        for member in members {
            if let model = member.model(choice) { return model }
        }
        return nil
    }

    /// Runs `call` on the upstreams by the policy until one answers, and returns that answer.
    ///
    /// - Parameters:
    ///   - attempts: every attempt, noted before it starts (the last one noted answered, or
    ///     failed last): what the call gives back whether it answered or not.
    ///   - body: the request body for an attempt's upstream, model and structured mode.
    ///   - call: one attempt: the upstream's endpoint, the body, the most time it may take
    ///     until its answer's head, and the target.
    ///   - only: keeps the call on the upstream of this name.
    ///   - deadline: all attempts together; nil for `UPSTREAM_TIMEOUT_SECONDS`.
    /// - Throws: the last attempt's failure; ``ChatError/cancelled`` when the caller's task
    ///   was cancelled.
    package func run<Answer: Sendable>(
        _ choice: UpstreamModelChoice, only: String? = nil, deadline: Duration? = nil, requestID: String,
        attempts tried: inout UpstreamAttempts,
        body: (Target) -> [UInt8],
        call: (any ChatUpstream, [UInt8], Duration, Target) async throws(ChatError) -> Answer
    ) async throws(ChatError) -> Answer {
        let end = MonotonicInstant(
            nanoseconds: MonotonicInstant.now().nanoseconds &+ (deadline?.nanosecondsClamped ?? deadlineNanoseconds))
        var lastError: ChatError?
        var resting: [(member: Member, model: String)] = []
        for (index, member) in members.enumerated() {
            if let only, member.name != only { continue }
            guard let model = member.model(choice) else { continue }
            let admission = member.breaker.admit()
            guard admission != .skip else {
                resting.append((member, model))
                continue
            }
            if admission == .probe { member.metrics.circuit.set(Double(CircuitBreaker.State.halfOpen.rawValue)) }
            if let answer = try await attempts(
                member, model: model, probe: admission == .probe, retries: policy.retries,
                isLast: index == members.count - 1,
                end: end, requestID: requestID, lastError: &lastError, tried: &tried, body: body, call: call
            ) {
                return answer
            }
        }
        // Every upstream with a model is resting. Refusing outright would keep the service
        // down until a cooldown ends even when an upstream is already back, so the first gets
        // one attempt without retries (what load balancers call panic routing).
        if lastError == nil, let (member, model) = resting.first,
            let answer = try await attempts(
                member, model: model, probe: false, retries: 0, isLast: true,
                end: end, requestID: requestID, lastError: &lastError, tried: &tried, body: body, call: call
            )
        {
            return answer
        }
        throw lastError ?? .couldNotConnect(detail: "no upstream available")
    }

    /// The attempts on one upstream: its answer, or nil to go on to the next (with
    /// `lastError` set); throws a failure that ends the call.
    private func attempts<Answer: Sendable>(
        _ member: Member, model: String, probe: Bool, retries: Int, isLast: Bool, end: MonotonicInstant,
        requestID: String,
        lastError: inout ChatError?,
        tried: inout UpstreamAttempts, body: (Target) -> [UInt8],
        call: (any ChatUpstream, [UInt8], Duration, Target) async throws(ChatError) -> Answer
    ) async throws(ChatError) -> Answer? {
        let target = Target(upstream: member.name, model: model, structuredMode: member.settings.structuredMode)
        let requestBody = body(target)
        var attempt = 0
        while true {
            let now = MonotonicInstant.now()
            let remaining = now.nanoseconds(until: end)
            guard remaining > 0 else {
                if probe { member.breaker.probeAbandoned() }
                throw lastError ?? .timedOut
            }
            let limit = min(tryTimeoutNanoseconds ?? remaining, remaining)
            tried.note(target)
            let span = AttemptSpan(member: member, model: model, retry: attempt)
            let error: ChatError
            do {
                let answer = try await call(member.endpoint, requestBody, .nanoseconds(Int64(clamping: limit)), target)
                answered(member, span: span, probe: probe, since: now)
                return answer
            } catch let failed {
                error = failed
            }
            switch afterFailure(
                error, of: member, span: span, probe: probe, since: now, attempt: attempt, retries: retries,
                isLast: isLast, end: end, requestID: requestID)
            {
            case .fail:
                throw error
            case .next:
                lastError = error
                return nil
            case .retry(let wait):
                lastError = error
                attempt += 1
                do {
                    if wait > 0 { try await sleep(.nanoseconds(Int64(clamping: wait))) }
                } catch {
                    throw .cancelled
                }
                if Task.isCancelled { throw .cancelled }
                member.metrics.retries.increment()
            }
        }
    }

    /// An attempt that answered, told to its span, its upstream's figures and circuit.
    /// Synchronous and out of line, like `afterFailure`: what it needs takes no room in the
    /// attempts' async frame, which a request in flight holds while it waits on the upstream.
    @inline(never)
    private func answered(_ member: Member, span: AttemptSpan?, probe: Bool, since now: MonotonicInstant) {
        span?.end(error: nil)
        member.metrics.succeeded(seconds: Self.seconds(since: now))
        member.answers.add(1, ordering: .relaxed)
        if probe || member.breaker.state != .closed { closeCircuit(member) }
    }

    private enum AfterFailure {
        /// The failure ends the call.
        case fail
        /// On to the next upstream.
        case next
        /// The same upstream again after this many nanoseconds.
        case retry(UInt64)
    }

    /// What follows a failed attempt, its span, figures, circuit and log told.
    @inline(never)
    private func afterFailure(
        _ error: ChatError, of member: Member, span: AttemptSpan?, probe: Bool, since now: MonotonicInstant,
        attempt: Int, retries: Int, isLast: Bool, end: MonotonicInstant, requestID: String
    ) -> AfterFailure {
        let failure = UpstreamFailure(error)
        span?.end(error: failure?.label ?? "cancelled")
        guard let failure else {
            member.metrics.failed("cancelled", seconds: Self.seconds(since: now))
            if probe { member.breaker.probeAbandoned() }
            return .fail
        }
        member.metrics.failed(failure.label, seconds: Self.seconds(since: now))
        member.failures.add(1, ordering: .relaxed)
        guard failure.retryable else {
            if failure.countsAgainstUpstream {
                noteFailure(member)
            } else if probe || member.breaker.state != .closed {
                // The upstream answered; the request was what it refused.
                closeCircuit(member)
            }
            return .fail
        }
        noteFailure(member)
        let next = attempt + 1
        let left = MonotonicInstant.now().nanoseconds(until: end)
        guard next <= retries, member.breaker.state == .closed,
            let wait = retryDelay(after: error, attempt: next), wait < left
        else {
            if !isLast { member.metrics.fallbacks.increment() }
            return .next
        }
        logger.info(
            "upstream_retry",
            [
                ("request_id", .string(requestID)), ("upstream", .string(member.name)),
                ("kind", .string(failure.label)),
                ("attempt", .int(next + 1)), ("wait_ms", .int(Int(wait / 1_000_000))),
            ])
        return .retry(wait)
    }

    /// Each upstream as the operator's console shows it, in the pool's order.
    package func snapshot() -> [UpstreamSnapshot] {
        members.map { member in
            let state: UpstreamSnapshot.State =
                switch member.breaker.state {
                case .closed: .inUse
                case .open: .coolingDown
                case .halfOpen: .probing
                }
            return UpstreamSnapshot(
                name: member.name, model: member.settings.defaultModel, state: state,
                answers: member.answers.load(ordering: .relaxed), failures: member.failures.load(ordering: .relaxed))
        }
    }

    private func closeCircuit(_ member: Member) {
        let wasOpen = member.breaker.state != .closed
        member.breaker.succeeded()
        member.metrics.circuit.set(0)
        if wasOpen { logger.info("upstream_circuit_closed", [("upstream", .string(member.name))]) }
    }

    private func noteFailure(_ member: Member) {
        if member.breaker.failed() {
            member.metrics.circuit.set(Double(CircuitBreaker.State.open.rawValue))
            member.metrics.circuitOpened.increment()
            logger.warning(
                "upstream_circuit_open",
                [
                    ("upstream", .string(member.name)),
                    ("cooldown_ms", .int(Int(policy.cooldown.nanosecondsClamped / 1_000_000))),
                ])
        }
    }

    /// The nanoseconds to wait before the next attempt on the same upstream: its
    /// `Retry-After` when given and within the limit, else a full-jitter backoff; nil when the
    /// upstream asked for a longer rest than the policy waits (go to the next one now).
    func retryDelay(after error: ChatError, attempt: Int) -> UInt64? {
        if case .httpStatus(_, _, let retryAfter?) = error, let seconds = Self.retryAfterSeconds(retryAfter) {
            let wait = UInt64(seconds) * 1_000_000_000
            return wait <= policy.retryAfterLimit.nanosecondsClamped ? wait : nil
        }
        let base = policy.backoff.nanosecondsClamped
        let ceiling = min(policy.maxBackoff.nanosecondsClamped, base << UInt64(min(max(attempt - 1, 0), 20)))
        return UInt64.random(in: 0...ceiling)
    }

    /// `Retry-After` as delay-seconds; nil for an HTTP date or anything else.
    static func retryAfterSeconds(_ value: String) -> Int? {
        guard !value.isEmpty, value.utf8.count <= 9, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return Int(value)
    }

    private static func seconds(since start: MonotonicInstant) -> Double {
        Double(start.nanoseconds(until: .now())) / 1e9
    }
}
