import EventLoop
import JSON
package import Store
import Synchronization
package import Telemetry
import TextTasks

/// Runs the items of every job in the store, as one service per gateway: it claims items
/// with a lease, asks the upstream pool for each (retries and fallback as for any call),
/// stores each answer while it holds the lease, adds the next level of a job once a level is
/// complete, and ends the job with its result or its first failure.
///
/// Nothing it knows lives only in memory: a gateway that dies leaves leases that pass, and
/// whichever gateway claims the items next goes on from the last stored answer. Jobs that a
/// worker left between two steps (a level complete but the next not added) are found by
/// ``JobStore/stalledJobs(limit:)`` and taken on.
package final class JobRunner: Service {
    var name: String { "job_runner" }

    package struct Dependencies: Sendable {
        package let store: any JobStore
        /// The items' answers, and the ledger a finished job's row goes to.
        package let answering: any JobAnswering
        package let settings: JobSettings
        package let metrics: JobMetrics
        package let events: JobEvents
        package let faults: StoreFaults
        package let logger: Logger
        package let clock: @Sendable () -> Instant
        /// Charges an answered item's tokens to its caller's quota (the limiter's count; the
        /// store's count is charged with the answer).
        package let charge: @Sendable (_ job: JobRecord, _ tokens: Int) async -> Void

        package init(
            store: any JobStore, answering: any JobAnswering, settings: JobSettings, metrics: JobMetrics,
            events: JobEvents, faults: StoreFaults, logger: Logger, clock: @escaping @Sendable () -> Instant,
            charge: @escaping @Sendable (_ job: JobRecord, _ tokens: Int) async -> Void
        ) {
            self.store = store
            self.answering = answering
            self.settings = settings
            self.metrics = metrics
            self.events = events
            self.faults = faults
            self.logger = logger
            self.clock = clock
            self.charge = charge
        }
    }

    /// Why an item's task was cancelled.
    private enum Stop: String {
        case cancelled
        case lostLease = "lost_lease"
        case stopped
    }

    private struct Running {
        let task: Task<Void, Never>
        var stop: Stop?
    }

    private struct State {
        var running: [JobItemKey: Running] = [:]
        var loop: Task<Void, Never>?
        var stopping = false
    }

    package let dependencies: Dependencies
    /// This process's name in leases: unique per start, so a restarted gateway never takes
    /// its predecessor's leases for its own.
    let worker: String
    private let state = Mutex(State())
    private let wakeup = Wakeup()

    /// How often an idle runner looks for items another instance made claimable.
    static let pollInterval: Duration = .milliseconds(500)
    static let stalledInterval: Duration = .seconds(5)

    package init(_ dependencies: Dependencies) {
        self.dependencies = dependencies
        worker = "w-" + String(UInt64.random(in: 1...UInt64.max), radix: 16)
    }

    /// New work may be claimable now (a job was submitted here).
    package func wake() {
        wakeup.raise()
    }

    /// Aborts this instance's upstream calls for job `id` (it was cancelled).
    package func cancelLocally(_ id: String) {
        let tasks = state.withLock { state -> [Task<Void, Never>] in
            var tasks: [Task<Void, Never>] = []
            for (key, running) in state.running where key.jobID == id {
                state.running[key]?.stop = .cancelled
                tasks.append(running.task)
            }
            return tasks
        }
        for task in tasks { task.cancel() }
    }

    func start() async throws {
        state.withLock { $0.loop = Task { await self.run() } }
    }

    /// Stops claiming, aborts the calls in flight and gives their leases back, so that
    /// another instance (or this one after its restart) takes them at once.
    func stop(deadline: MonotonicInstant) async {
        let (loop, tasks) = state.withLock { state -> (Task<Void, Never>?, [Task<Void, Never>]) in
            state.stopping = true
            for key in state.running.keys { state.running[key]?.stop = .stopped }
            return (state.loop, state.running.values.map(\.task))
        }
        loop?.cancel()
        for task in tasks { task.cancel() }
        await loop?.value
        for task in tasks { await task.value }
    }

    // MARK: The loop

    private func run() async {
        let settings = dependencies.settings
        let renewal = min(settings.renewalInterval, .seconds(2))
        var nextRenewal = MonotonicInstant.now().advanced(by: renewal)
        var nextStalledCheck = MonotonicInstant.now()
        while !Task.isCancelled {
            await claim()
            let now = MonotonicInstant.now()
            if !(now < nextRenewal) {
                await renew()
                nextRenewal = now.advanced(by: renewal)
            }
            if !(now < nextStalledCheck) {
                await resumeStalled()
                nextStalledCheck = now.advanced(by: Self.stalledInterval)
            }
            if Task.isCancelled { break }
            await wakeup.wait(timeout: Self.pollInterval)
        }
    }

    private func claim() async {
        let settings = dependencies.settings
        let free = settings.workers - state.withLock { $0.running.count }
        guard free > 0 else { return }
        let now = milliseconds(dependencies.clock())
        let items: [ClaimedJobItem]
        do {
            items = try await dependencies.store.claimItems(
                JobClaim(
                    worker: worker, limit: free, perJob: settings.concurrencyPerJob, nowMilliseconds: now,
                    leaseUntil: now + Int64(settings.lease / .milliseconds(1))
                ))
        } catch {
            dependencies.faults.record(error, operation: .jobs)
            return
        }
        for item in items { launch(item) }
    }

    private func launch(_ item: ClaimedJobItem) {
        let launched = state.withLock { current -> Bool in
            guard !current.stopping else { return false }
            dependencies.metrics.inFlight.increment()
            // Made under the lock its own end takes, so it is in `running` before it can leave it.
            current.running[item.key] = Running(
                task: Task { [self] in
                    await runItem(item)
                    state.withLock { _ = $0.running.removeValue(forKey: item.key) }
                    dependencies.metrics.inFlight.decrement()
                    wakeup.raise()
                })
            return true
        }
        if !launched { Task { await release(item.key) } }
    }

    /// Moves the leases of everything in flight on; an item whose lease is no longer this
    /// worker's (its job was cancelled or ended elsewhere, or the lease passed and was taken)
    /// is aborted.
    private func renew() async {
        let keys = state.withLock { Array($0.running.keys) }
        guard !keys.isEmpty else { return }
        let now = milliseconds(dependencies.clock())
        let held: [JobItemKey]
        do {
            held = try await dependencies.store.renewLeases(
                worker: worker, items: keys, until: now + Int64(dependencies.settings.lease / .milliseconds(1)),
                nowMilliseconds: now
            )
        } catch {
            // The leases stand until they pass; the next renewal tries again.
            dependencies.faults.record(error, operation: .jobs)
            return
        }
        let lost = Set(keys).subtracting(held)
        guard !lost.isEmpty else { return }
        let tasks = state.withLock { state -> [Task<Void, Never>] in
            lost.compactMap { key in
                guard state.running[key] != nil else { return nil }
                if state.running[key]?.stop == nil { state.running[key]?.stop = .lostLease }
                return state.running[key]?.task
            }
        }
        for task in tasks { task.cancel() }
    }

    /// Takes on jobs whose items are all answered but that did not go on: a worker stopped
    /// between storing the last answer of a level and adding the next level or ending it.
    private func resumeStalled() async {
        let jobs: [JobRecord]
        do {
            jobs = try await dependencies.store.stalledJobs(limit: 32)
        } catch {
            dependencies.faults.record(error, operation: .jobs)
            return
        }
        for job in jobs {
            let busy = state.withLock { state in state.running.keys.contains { $0.jobID == job.id } }
            guard !busy else { continue }
            do throws(StoreError) {
                // Levels are few (each round at least halves the answers): find the top one.
                var level = 0
                while try await dependencies.store.levelAnswers(jobID: job.id, level: level + 1).count > 0 {
                    level += 1
                }
                await advance(job, level: level)
            } catch {
                dependencies.faults.record(error, operation: .jobs)
            }
        }
    }

    // MARK: One item

    private func runItem(_ item: ClaimedJobItem) async {
        let job = item.job
        guard let task = TextTask(rawValue: job.task) else {
            let failure = dependencies.answering.internalFailure
            await end(job, .failed(code: failure.code, message: failure.message))
            return
        }
        let answer: JobAnswer
        do {
            answer = try await call(item, task: task)
        } catch {
            let stop = state.withLock { $0.running[item.key]?.stop }
            if let stop {
                dependencies.metrics.abandoned.labels(stop.rawValue).increment()
                if stop == .stopped { await release(item.key) }
                return
            }
            dependencies.metrics.abandoned.labels("failed").increment()
            dependencies.logger.warning(
                "job_failed",
                [
                    ("job_id", .string(job.id)), ("request_id", .string(job.requestID)),
                    ("level", .int(item.key.level)),
                    ("index", .int(item.key.index)), ("code", .string(error.code)),
                ])
            // The usage of the items answered so far stays charged and shown.
            await end(job, .failed(code: error.code, message: error.message))
            return
        }
        let now = dependencies.clock()
        let inputTokens = max(0, answer.usage?.promptTokens ?? 0)
        let outputTokens = max(0, answer.usage?.completionTokens ?? 0)
        let completion = JobItemCompletion(
            key: item.key, worker: worker, answer: answer.result,
            data: answer.data.map { String(decoding: $0.jsonBytes(), as: UTF8.self) },
            inputTokens: inputTokens, outputTokens: outputTokens, costMicros: answer.costMicros, ownerID: job.ownerID,
            day: now.utcDay,
            nowMilliseconds: milliseconds(now)
        )
        let stored = await retryingStore { () throws(StoreError) in
            try await self.dependencies.store.completeItem(completion)
        }
        guard stored == true else {
            // Lost its lease, or the job ended meanwhile; or the store would not take it (the
            // lease then passes and the item is asked again: counted here).
            dependencies.metrics.abandoned.labels(stored == nil ? "store_failed" : "lost_lease").increment()
            return
        }
        dependencies.metrics.items.labels(item.kind.rawValue).increment()
        await dependencies.charge(job, inputTokens + outputTokens)
        dependencies.events.changed(job.id)
        await advance(job, level: item.key.level)
    }

    /// The upstream's answer to one item.
    private func call(_ item: ClaimedJobItem, task: TextTask) async throws(JobFailure) -> JobAnswer {
        let job = item.job
        let tone = job.tone.flatMap(Tone.init(rawValue:))
        let question: JobQuestion
        switch item.kind {
        case .final:
            question = .final(
                task: task, tone: tone, format: OutputFormat(rawValue: job.format) ?? .text, text: item.input)
        case .map, .reduce:
            let prompt =
                item.kind == .map
                ? JobPrompts.map(
                    task: task, tone: tone, part: item.key.index + 1, of: item.levelCount, text: item.input)
                : JobPrompts.reduce(task: task, text: item.input)
            // Titles come from a summary of the text: its rounds are the summary's, with its model.
            question = .step(prompt: prompt, rounds: task == .rewrite || task == .keyPoints ? task : .summarize)
        }
        return try await dependencies.answering.answer(question, job: job)
    }

    // MARK: Levels and ends

    /// When `level` of `job` is complete: the next level, or the job's end.
    private func advance(_ job: JobRecord, level: Int) async {
        let store = dependencies.store
        let answers: JobLevelAnswers
        do {
            answers = try await store.levelAnswers(jobID: job.id, level: level)
        } catch {
            // The stalled-job check takes it on.
            dependencies.faults.record(error, operation: .jobs)
            return
        }
        guard answers.isComplete, let task = TextTask(rawValue: job.task) else { return }
        if answers.answers.count == 1, answers.answers[0].kind == .final {
            await end(job, .succeeded(result: answers.answers[0].answer, data: answers.answers[0].data))
            return
        }
        let planned = JobPlan.next(
            task: task,
            answers: answers.answers.map { (answer: $0.answer, sourceStart: $0.sourceStart, sourceEnd: $0.sourceEnd) },
            budget: dependencies.settings.chunkCharacters
        )
        let items: [NewJobItem]
        switch planned {
        case .concatenate(let text):
            var data: String?
            if job.format == OutputFormat.json.rawValue {
                var writer = JSONWriter(capacity: text.utf8.count + 16)
                writer.object { $0.field("text", text) }
                data = String(decoding: writer.bytes, as: UTF8.self)
            }
            await end(job, .succeeded(result: text, data: data))
            return
        case .final(let item):
            items = [NewJobItem(item)]
        case .reduce(let planned):
            items = planned.map(NewJobItem.init)
        }
        // The final pass was counted at the submission; a reduce round adds its calls.
        let addedCalls = items.first?.kind == .final ? 0 : items.count
        let now = milliseconds(dependencies.clock())
        let added = await retryingStore { () throws(StoreError) in
            try await store.addLevel(
                NewJobLevel(jobID: job.id, level: level + 1, items: items, addedCalls: addedCalls, nowMilliseconds: now)
            )
        }
        if added == true {
            dependencies.events.changed(job.id)
            wakeup.raise()
        }
    }

    /// Ends `job` (once, whoever gets there first) and records its row.
    private func end(_ job: JobRecord, _ outcome: JobFinish.Outcome) async {
        let store = dependencies.store
        let now = dependencies.clock()
        let ended = await retryingStore { () throws(StoreError) in
            try await store.finishJob(
                JobFinish(jobID: job.id, outcome: outcome, nowMilliseconds: self.milliseconds(now)))
        }
        guard ended == true else { return }
        dependencies.events.changed(job.id)
        let record = (try? await store.job(id: job.id)) ?? job
        JobRunner.recordEnd(record, metrics: dependencies.metrics, answering: dependencies.answering, now: now)
        dependencies.logger.info(
            "job_finished",
            [
                ("job_id", .string(job.id)), ("request_id", .string(job.requestID)),
                ("status", .string(record.status.rawValue)),
                ("items", .int(record.done)), ("input_tokens", .int(record.inputTokens)),
                ("output_tokens", .int(record.outputTokens)),
            ])
    }

    /// A job's end in the metrics and the ledger (here, or where it was cancelled).
    package static func recordEnd(_ job: JobRecord, metrics: JobMetrics, answering: any JobAnswering, now: Instant) {
        metrics.finished.labels(job.status.rawValue).increment()
        let nowMilliseconds = Int64(now.secondsSinceEpoch * 1000)
        let duration = Double(max(0, nowMilliseconds - job.createdAtMilliseconds))
        metrics.duration.observe(duration / 1000)
        answering.recordEnd(job, durationMilliseconds: duration)
    }

    /// Gives `key`'s lease back (the runner stopping), past the cancellation of its task.
    private func release(_ key: JobItemKey) async {
        let store = dependencies.store
        let worker = self.worker
        let faults = dependencies.faults
        // An unstructured task: the stopping item's own cancellation must not stop this.
        await Task {
            do throws(StoreError) {
                try await store.releaseItem(key, worker: worker)
            } catch {
                faults.record(error, operation: .jobs)
            }
        }.value
    }

    /// `body`'s value, tried again after a store failure (a few times, with a growing
    /// pause, while the lease holds); nil when it kept failing (counted).
    private func retryingStore<T: Sendable>(_ body: @escaping @Sendable () async throws(StoreError) -> T) async -> T? {
        let faults = dependencies.faults
        // Unstructured, so that a write the answer depends on is not given up because the
        // item's task was cancelled after the answer came.
        return await Task { () -> T? in
            var pause: Duration = .milliseconds(100)
            for attempt in 1...6 {
                do throws(StoreError) {
                    return try await body()
                } catch {
                    faults.record(error, operation: .jobs)
                    guard error.isTransient, attempt < 6 else { return nil }
                }
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(3))
            }
            return nil
        }.value
    }

    private func milliseconds(_ instant: Instant) -> Int64 {
        Int64(instant.secondsSinceEpoch * 1000)
    }
}

extension NewJobItem {
    package init(_ planned: PlannedItem) {
        let kind: JobItemKind =
            switch planned.kind {
            case .map: .map
            case .reduce: .reduce
            case .final: .final
            }
        self.init(kind: kind, input: planned.input, sourceStart: planned.sourceStart, sourceEnd: planned.sourceEnd)
    }
}
