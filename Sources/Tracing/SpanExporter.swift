package import EventLoop
package import HTTPClient
import Synchronization
package import Telemetry

/// Sends finished spans to the collector in batches, apart from the requests: a request only
/// puts its spans in a bounded queue (a lock and an append, never a wait), and one task takes
/// them out in batches of `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, as soon as a batch is full or
/// `OTEL_BSP_SCHEDULE_DELAY` after its first span, and posts them (OTLP/HTTP, protobuf).
///
/// A request's spans come either written (``submit(spans:_:)``) or as what they say
/// (``submit(_:)``, ``PendingSpans``), written into the batch by the export's task: the
/// request's loop then only keeps a reference, and the encoding runs beside it.
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
        /// The spans waiting as the bytes they are sent as (a job chunk's, written straight in
        /// under the lock).
        var queue = EncodedSpans()
        /// The spans waiting as what they say, written when a batch takes them.
        var pending: [any PendingSpans] = []
        /// How many spans ``pending`` writes.
        var pendingSpans = 0
        /// Pending spans already written, released one at each ``submit(_:)`` by the request
        /// that submits, on its own thread: `malloc` is quickest where the memory was taken,
        /// and a request's loop takes it again at once.
        var written: [any PendingSpans] = []
        /// An empty list with room, for the next batch's pending spans.
        var spareList: [any PendingSpans] = []
        /// The last batch's buffer, given back once it was sent: the next batch's, so a buffer
        /// of hundreds of kilobytes is not allocated and freed for every batch.
        var spare: EncodedSpans?
        /// The export task, waiting for a batch: resumed by a full batch, its timer, or at stop.
        var waiter: CheckedContinuation<Void, Never>?
        /// Which wait ``waiter`` is: a timer resumes only its own wait, never a later one.
        var wait = 0
        var stopping = false
        /// A failure is logged once, until an export succeeds again.
        var failing = false

        /// Every span waiting, written or not.
        var queued: Int { queue.count + pendingSpans }

        /// Takes a batch of at most `maxBatch` spans, if any wait: the written ones first, then
        /// the pending ones in their order while they fit whole (one alone always does).
        mutating func takeBatch(_ maxBatch: Int) -> (batch: EncodedSpans, pending: [any PendingSpans])? {
            guard queued > 0 else { return nil }
            // The last batch's buffer, emptied, keeps its size: a batch is not grown anew.
            var batch = spare ?? EncodedSpans(capacity: queue.byteCount)
            spare = nil
            let written = min(queue.count, maxBatch)
            batch.append(contentsOf: queue, spans: written)
            queue.removeFirst(written)
            var count = 0
            var spans = 0
            for next in pending {
                let size = next.spanCount
                guard written + spans + size <= maxBatch || (count == 0 && written == 0) else { break }
                count += 1
                spans += size
            }
            var taken = spareList
            spareList = []
            if count == pending.count {
                swap(&taken, &pending)
            } else {
                taken.append(contentsOf: pending[0..<count])
                pending.removeFirst(count)
            }
            pendingSpans -= spans
            return (batch, taken)
        }
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
            [weak self] in Double(self?.state.withLock { $0.queued } ?? 0)
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
        let (dropped, waiter) = state.withLock { state -> (Int, CheckedContinuation<Void, Never>?) in
            let before = state.queue.count
            let room = maxQueue - state.pendingSpans
            guard before < room else { return (count, nil) }
            write(&state.queue)
            let written = state.queue.count - before
            if state.queue.count > room { state.queue.truncate(toSpans: room) }
            return (written - (state.queue.count - before), wakeIfBatch(&state))
        }
        if dropped > 0 { metrics.droppedQueueFull.increment(by: dropped) }
        waiter?.resume()
    }

    /// Queues `spans`, to be written by the export's task when a batch takes them; when they do
    /// not all fit, they are dropped whole and counted (no trace loses only some of its spans).
    /// Never waits: a lock and an append.
    package func submit(_ spans: some PendingSpans) {
        let count = spans.spanCount
        guard count > 0 else { return }
        let maxQueue = settings.maxQueueSize
        let (kept, waiter, released) = state.withLock {
            state -> (Bool, CheckedContinuation<Void, Never>?, (any PendingSpans)?) in
            let released = state.written.popLast()
            guard state.queued + count <= maxQueue else { return (false, nil, released) }
            state.pending.append(spans)
            state.pendingSpans += count
            return (true, wakeIfBatch(&state), released)
        }
        if !kept { metrics.droppedQueueFull.increment(by: count) }
        waiter?.resume()
        withExtendedLifetime(released) {}
    }

    /// The export's task, to be resumed when a whole batch now waits.
    private func wakeIfBatch(_ state: inout State) -> CheckedContinuation<Void, Never>? {
        guard state.queued >= settings.maxBatchSize, let waiter = state.waiter else { return nil }
        state.waiter = nil
        return waiter
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
            defer {
                state.queue = EncodedSpans()
                state.pending = []
                state.pendingSpans = 0
                state.written = []
            }
            return state.queued
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
        let maxBatch = settings.maxBatchSize
        while true {
            if Task.isCancelled { return nil }
            let now = MonotonicInstant.now().nanoseconds
            let (taken, stopping) = state.withLock { state in
                let ready = state.queued >= maxBatch || state.stopping || (now >= deadline && state.queued > 0)
                return (ready ? state.takeBatch(maxBatch) : nil, state.stopping)
            }
            if var (batch, pending) = taken {
                // Written here, on the export's task, not on the loops that answered the requests.
                for spans in pending { spans.write(into: &batch) }
                state.withLock { state in
                    if state.written.isEmpty {
                        swap(&state.written, &pending)
                    } else {
                        state.written.append(contentsOf: pending)
                        pending.removeAll(keepingCapacity: true)
                    }
                    state.spareList = pending
                }
                return batch
            }
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
                if state.stopping || state.queued >= settings.maxBatchSize
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

/// Spans handed to the exporter as what they say, written into the export's bytes by its
/// task when a batch takes them: a request's loop keeps a reference instead of encoding.
/// What they hold is fixed when they are made (the clock read, the answer noted); writing
/// them reads no clock and no state that could still change.
package protocol PendingSpans: Sendable {
    /// How many spans ``write(into:)`` writes.
    var spanCount: Int { get }
    /// Writes the spans after those in `spans`.
    func write(into spans: inout EncodedSpans)
}
