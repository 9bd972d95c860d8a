package import EventLoop
package import HTTPClient
import Synchronization
package import Telemetry

/// Sends finished spans to the collector in batches, apart from the requests: a request only
/// puts its spans in a bounded queue (a lock and an append, never a wait), and one task takes
/// them out in batches of `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, as soon as a batch is full or
/// `OTEL_BSP_SCHEDULE_DELAY` after its first span, and posts them (OTLP/HTTP, protobuf).
///
/// What cannot be kept is counted, never waited for: a full queue drops the spans offered
/// (`textgateway_trace_spans_total{outcome="dropped_queue_full"}`), a batch the collector
/// still refuses after `OTEL_BSP_EXPORT_TIMEOUT` of retries (with backoff, `Retry-After`
/// heeded) is dropped (`dropped_export_failed`), one it refuses outright too. At stop, what is
/// queued is sent until the deadline.
package final class SpanExporter: Service {
    package let name = "trace_exporter"
    package let settings: TracingSettings
    private let client: HTTPClient
    private let logger: Logger
    private let metrics: Metrics
    private let scope: (name: String, version: String)
    /// The resource's attributes, encoded once.
    private let resource: SpanAttributes
    private let sleep: @Sendable (Duration) async throws -> Void
    /// Monotonic nanoseconds, for a batch's export timeout (a test's advances with its sleeps).
    private let clock: @Sendable () -> UInt64

    struct Metrics {
        let exported: Counter
        let droppedQueueFull: Counter
        let droppedExportFailed: Counter
        let rejected: Counter
        let exportsOK: Counter
        let exportsRetried: Counter
        let exportsFailed: Counter
    }

    private struct State {
        /// The spans waiting, as the bytes they are sent as: a request's are written straight
        /// in (under the lock: a few microseconds), so a request allocates no buffer of its own.
        var queue = EncodedSpans()
        /// The last batch's buffer, given back once it was sent: the next batch's queue, so a
        /// buffer of hundreds of kilobytes is not allocated and freed for every batch.
        var spare: EncodedSpans?
        /// The export task, waiting for a batch: resumed by a full batch, its timer, or at stop.
        var waiter: CheckedContinuation<Void, Never>?
        /// Which wait ``waiter`` is: a timer resumes only its own wait, never a later one.
        var wait = 0
        var stopping = false
        /// A failure is logged once, until an export succeeds again.
        var failing = false
    }

    private let state = Mutex(State())
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// - Parameters:
    ///   - sleep: how a backoff waits (a test's may record and return at once).
    ///   - clock: what a batch's export timeout is measured by.
    package init(
        settings: TracingSettings, client: HTTPClient, metrics registry: MetricsRegistry, logger: Logger,
        version: String, sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        clock: @escaping @Sendable () -> UInt64 = { MonotonicInstant.now().nanoseconds }
    ) {
        self.settings = settings
        self.client = client
        self.logger = logger
        self.sleep = sleep
        self.clock = clock
        scope = ("text-gateway", version)
        resource = SpanAttributes(settings.resource)
        let spans = registry.counter(
            "textgateway_trace_spans_total",
            help: "Spans finished, by what became of them: exported, dropped_queue_full, dropped_export_failed, "
                + "rejected (by the collector, in a partial success).",
            labels: ["outcome"])
        let exports = registry.counter(
            "textgateway_trace_exports_total",
            help: "Export requests to the OTLP collector, by result: ok, retried (a retryable failure, tried again), "
                + "failed (the batch dropped).",
            labels: ["result"])
        metrics = Metrics(
            exported: spans.labels("exported"), droppedQueueFull: spans.labels("dropped_queue_full"),
            droppedExportFailed: spans.labels("dropped_export_failed"), rejected: spans.labels("rejected"),
            exportsOK: exports.labels("ok"), exportsRetried: exports.labels("retried"),
            exportsFailed: exports.labels("failed"))
        registry.gaugeFunction("textgateway_trace_queue_spans", help: "Spans waiting to be exported.") {
            [weak self] in Double(self?.state.withLock { $0.queue.count } ?? 0)
        }
    }

    /// Queues `spans` for export; those that do not fit are dropped and counted. Never waits.
    package func submit(_ spans: [SpanRecord]) {
        submit(spans: spans.count) { queue in
            for span in spans { queue.append(span) }
        }
    }

    /// Queues the `count` spans `write` writes, straight into the queue's bytes; those that do
    /// not fit are dropped and counted (written and cut off: a trace is a few spans). Never
    /// waits, and takes no allocation of the request's.
    package func submit(spans count: Int, _ write: (inout EncodedSpans) -> Void) {
        guard count > 0 else { return }
        let maxQueue = settings.maxQueueSize
        let batch = settings.maxBatchSize
        let (dropped, waiter) = state.withLock { state -> (Int, CheckedContinuation<Void, Never>?) in
            let before = state.queue.count
            guard before < maxQueue else { return (count, nil) }
            write(&state.queue)
            let written = state.queue.count - before
            if state.queue.count > maxQueue { state.queue.truncate(toSpans: maxQueue) }
            let dropped = written - (state.queue.count - before)
            guard state.queue.count >= batch, let waiter = state.waiter else { return (dropped, nil) }
            state.waiter = nil
            return (dropped, waiter)
        }
        if dropped > 0 { metrics.droppedQueueFull.increment(by: dropped) }
        waiter?.resume()
    }

    package func start() async throws {
        task.withLock { $0 = Task { await self.run() } }
    }

    /// Sends what is queued until `deadline`, then stops; what is left is dropped and counted.
    package func stop(deadline: MonotonicInstant) async {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.stopping = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
        if let running = task.withLock({ $0 }) {
            // Past the deadline the export under way is cancelled: its spans are counted as dropped.
            let timer = Task {
                let left = MonotonicInstant.now().nanoseconds(until: deadline)
                try? await Task.sleep(for: .nanoseconds(Int64(clamping: left)))
                if !Task.isCancelled { running.cancel() }
            }
            await running.value
            timer.cancel()
        }
        let left = state.withLock { state -> Int in
            defer { state.queue = EncodedSpans() }
            return state.queue.count
        }
        if left > 0 { metrics.droppedExportFailed.increment(by: left) }
    }

    private func run() async {
        while var batch = await nextBatch() {
            await export(batch)
            batch.removeAll()
            state.withLock { $0.spare = batch }
        }
    }

    /// The next batch: as soon as a whole one is queued, or the schedule delay after the wait
    /// began with at least one span; at stop, whatever is left (nil once nothing is).
    private func nextBatch() async -> EncodedSpans? {
        let deadline = MonotonicInstant.now().nanoseconds &+ settings.scheduleDelay.nanosecondsClamped
        while true {
            if Task.isCancelled { return nil }
            let now = MonotonicInstant.now().nanoseconds
            let (batch, stopping) = state.withLock { state -> (EncodedSpans?, Bool) in
                let ready =
                    state.queue.count >= settings.maxBatchSize || state.stopping
                    || (now >= deadline && !state.queue.isEmpty)
                guard ready, !state.queue.isEmpty else { return (nil, state.stopping) }
                guard state.queue.count > settings.maxBatchSize else {
                    // The whole queue is the batch: handed over, not copied, and the last
                    // batch's buffer, emptied, takes its place.
                    // With no spare (the last batch still being sent), the new queue starts
                    // at this batch's size, rather than growing to it by reallocations.
                    var batch = state.spare ?? EncodedSpans(capacity: state.queue.byteCount)
                    state.spare = nil
                    swap(&batch, &state.queue)
                    return (batch, state.stopping)
                }
                var batch = EncodedSpans(capacity: state.queue.offset(ofSpan: settings.maxBatchSize))
                batch.append(contentsOf: state.queue, spans: settings.maxBatchSize)
                state.queue.removeFirst(settings.maxBatchSize)
                return (batch, state.stopping)
            }
            if let batch { return batch }
            if stopping { return nil }
            await waitForBatch(until: now >= deadline ? now &+ settings.scheduleDelay.nanosecondsClamped : deadline)
        }
    }

    /// Waits until a batch fills, the stop begins, or `deadline` (monotonic nanoseconds) passes.
    private func waitForBatch(until deadline: UInt64) async {
        let wait = state.withLock { state -> Int in
            state.wait &+= 1
            return state.wait
        }
        let timer = Task {
            let now = MonotonicInstant.now().nanoseconds
            // A timer that starts late does not wait at all (the subtraction would wrap).
            if deadline > now { try? await Task.sleep(for: .nanoseconds(Int64(clamping: deadline - now))) }
            let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard state.wait == wait else { return nil }
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                // Checked under the lock the timer takes too: a timer that fired before the
                // wait began finds no waiter, and the wait then sees its deadline passed.
                if state.stopping || state.queue.count >= settings.maxBatchSize
                    || MonotonicInstant.now().nanoseconds >= deadline
                {
                    return true
                }
                state.waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        timer.cancel()
    }

    /// Posts one batch, retrying what may succeed later until the export timeout.
    private func export(_ batch: EncodedSpans) async {
        let spans = batch.count
        let body = OTLPEncoding.exportRequest(resource: resource, scope: scope, encoded: batch)
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "application/x-protobuf"), ("User-Agent", "\(scope.name)/\(scope.version)"),
        ]
        headers.append(contentsOf: settings.headers)
        let request = HTTPClientRequest(
            method: "POST", url: settings.endpoint, headers: headers, body: body, timeout: settings.requestTimeout,
            connectTimeout: min(settings.requestTimeout, .seconds(5)), caFile: settings.certificateFile)
        let started = clock()
        var attempt = 0
        while true {
            let outcome: ExportOutcome
            do {
                let response = try await client.send(request)
                outcome = ExportOutcome(status: response.head.status, retryAfter: response.head.header("Retry-After"))
                if case .accepted = outcome {
                    let rejected = min(
                        Int64(spans), max(0, OTLPEncoding.rejectedSpans(inResponse: response.body)))
                    metrics.exportsOK.increment()
                    metrics.exported.increment(by: spans - Int(rejected))
                    if rejected > 0 { metrics.rejected.increment(by: Int(rejected)) }
                    recovered()
                    return
                }
            } catch {
                outcome = Task.isCancelled ? .refused("cancelled") : .retryable("connection", nil)
            }
            attempt += 1
            let elapsed = Duration.nanoseconds(Int64(clamping: clock() &- started))
            guard case .retryable(let reason, let retryAfter) = outcome,
                let wait = Self.backoff(attempt: attempt, retryAfter: retryAfter),
                elapsed + wait < settings.exportTimeout, !Task.isCancelled
            else {
                metrics.exportsFailed.increment()
                metrics.droppedExportFailed.increment(by: spans)
                failed(outcome.reason, spans: spans)
                return
            }
            metrics.exportsRetried.increment()
            failed(reason, spans: nil)
            do { try await sleep(wait) } catch { continue }
        }
    }

    /// The wait before try `attempt + 1`: `Retry-After` when the collector gave one, else
    /// 1 s doubling to 16 s, each with up to a fifth of it again at random.
    static func backoff(attempt: Int, retryAfter: Duration?) -> Duration? {
        // `Retry-After: 0` would make a tight loop of a collector that keeps refusing.
        if let retryAfter, retryAfter > .zero { return retryAfter }
        let base = Duration.seconds(1 << min(4, max(0, attempt - 1)))
        return base + .milliseconds(Int.random(in: 0...Int(base.components.seconds * 200)))
    }

    private func failed(_ reason: String, spans: Int?) {
        let first = state.withLock { state -> Bool in
            defer { state.failing = true }
            return !state.failing
        }
        if let spans {
            logger.warning("trace_export_dropped", [("reason", .string(reason)), ("spans", .int(spans))])
        } else if first {
            logger.warning(
                "trace_export_failing", [("reason", .string(reason)), ("endpoint", .string(settings.endpointForLogs))])
        }
    }

    private func recovered() {
        let was = state.withLock { state -> Bool in
            defer { state.failing = false }
            return state.failing
        }
        if was { logger.info("trace_export_resumed", [("endpoint", .string(settings.endpointForLogs))]) }
    }
}

/// What one export request came to.
enum ExportOutcome {
    case accepted
    /// Worth trying again (the collector busy or away): OTLP/HTTP's 429, 502, 503, 504.
    case retryable(String, Duration?)
    /// Never worth trying again: the batch is dropped.
    case refused(String)

    init(status: Int, retryAfter: String?) {
        switch status {
        case 200..<300: self = .accepted
        case 429, 502, 503, 504:
            let seconds = retryAfter.flatMap { Int($0) }.map { Duration.seconds(min(max(0, $0), 60)) }
            self = .retryable("status \(status)", seconds)
        default: self = .refused("status \(status)")
        }
    }

    var reason: String {
        switch self {
        case .accepted: "accepted"
        case .retryable(let reason, _), .refused(let reason): reason
        }
    }
}
