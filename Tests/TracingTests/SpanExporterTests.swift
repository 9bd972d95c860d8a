import EventLoop
import TestSupport
import Testing

@testable import Tracing

@Suite("Span exporter against a loopback collector")
struct SpanExporterTests {
    // MARK: Batches

    @Test("spans below the batch size go out after the schedule delay, in one batch")
    func scheduleDelay() async throws {
        try await withCollector { collector, endpoint in
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .milliseconds(50)
                    $0.maxBatchSize = 512
                }
            ) { harness in
                harness.exporter.submit(makeSpans(3, "delayed"))
                await eventually("the collector has the batch") { collector.posts.count == 1 }
                #expect(collector.acceptedSpanNames == ["delayed-0", "delayed-1", "delayed-2"])
                await eventually("exported counted") { harness.spans("exported") == 3 }
                #expect(harness.exports("ok") == 1)
                #expect(harness.queued == 0)
                // A second lot, later, goes out on its own the same way.
                harness.exporter.submit(makeSpans(2, "later"))
                await eventually("the second batch") { collector.posts.count == 2 }
                #expect(collector.posts.last?.spanNames == ["later-0", "later-1"])
            }
        }
    }

    @Test("a full batch goes at once, long before the schedule delay; the rest waits for it")
    func fullBatchAtOnce() async throws {
        try await withCollector { collector, endpoint in
            try await withExporter(
                endpoint: endpoint,
                {
                    // An hour: a send the delay caused could not come within the test's wait,
                    // however slowly a loaded machine makes each send (hence the long timeout:
                    // a send timed out and sent again would be a third post).
                    $0.scheduleDelay = .seconds(3600)
                    $0.requestTimeout = .seconds(120)
                    $0.maxBatchSize = 5
                }
            ) { harness in
                let started = MonotonicInstant.now()
                harness.exporter.submit(makeSpans(12, "s"))
                await eventually("two full batches", within: .seconds(120)) { collector.posts.count == 2 }
                #expect(MonotonicInstant.now() < started.advanced(by: .seconds(3600)))
                #expect(harness.exports("retried") ?? 0 == 0, "no send failed")
                #expect(collector.posts.map { $0.spanNames?.count } == [5, 5])
                #expect(collector.acceptedSpanNames == (0..<10).map { "s-\($0)" })
                await eventually("ten exported") { harness.spans("exported") == 10 }
                #expect(harness.queued == 2, "the last two wait for their delay")
                #expect(collector.posts.count == 2)
            }
        }
    }

    @Test("with a 1 ms schedule delay and a busy thread pool, a lone span still goes out")
    func shortDelayUnderLoad() async throws {
        try await withCollector { collector, endpoint in
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .milliseconds(1) // OTEL_BSP_SCHEDULE_DELAY's floor
                    $0.maxBatchSize = 512
                }
            ) { harness in
                for round in 0..<300 {
                    // Both cores busy for 5 ms: the exporter's timer task may start after its deadline.
                    await occupyThreadPool(for: .milliseconds(5))
                    harness.exporter.submit(makeSpans(1, "r\(round)"))
                    // A lost wake-up leaves the span queued for good; a loaded machine only
                    // delays its post's answer (a CI run took over 3 s), so the wait is long.
                    let sent = await eventually("round \(round)", within: .seconds(60), onTimeout: .returnsFalse) {
                        harness.spans("exported") == Double(round + 1)
                    }
                    guard sent else {
                        // A timer task that starts after its deadline must still wake the wait.
                        Issue.record(
                            "round \(round): \(harness.queued ?? -1) span queued, \(collector.posts.count) posts")
                        return
                    }
                }
            }
        }
    }

    // MARK: A full queue

    @Test("a full queue drops what does not fit and counts it; what was queued is still sent")
    func queueFullDrops() async throws {
        try await withCollector { collector, endpoint in
            try await withExporter(
                endpoint: endpoint,
                {
                    // No batch is ever full and the delay is long: nothing leaves the queue before stop.
                    $0.scheduleDelay = .seconds(60)
                    $0.maxBatchSize = 100
                    $0.maxQueueSize = 4
                }
            ) { harness in
                harness.exporter.submit(makeSpans(3, "a"))
                harness.exporter.submit(makeSpans(7, "b"))
                #expect(harness.spans("dropped_queue_full") == 6)
                #expect(harness.queued == 4)
                harness.exporter.submit(makeSpans(1, "c"))
                #expect(harness.spans("dropped_queue_full") == 7)
                #expect(collector.posts.isEmpty)
                await harness.stop()
                #expect(collector.acceptedSpanNames == ["a-0", "a-1", "a-2", "b-0"])
                #expect(harness.spans("exported") == 4)
                #expect(harness.spans("dropped_queue_full") == 7)
            }
        }
    }

    @Test("while the collector is stuck on a batch, the queue fills and the excess is dropped and counted")
    func blockedCollector() async throws {
        try await withCollector { collector, endpoint in
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .seconds(60)
                    $0.maxBatchSize = 2
                    $0.maxQueueSize = 4
                }
            ) { harness in
                collector.hold()
                harness.exporter.submit(makeSpans(2, "first"))
                await eventually("the first batch is at the collector") { collector.posts.count == 1 }
                // The exporter waits on that answer: 4 of these fit, 2 do not.
                harness.exporter.submit(makeSpans(6, "next"))
                #expect(harness.spans("dropped_queue_full") == 2)
                #expect(harness.queued == 4)
                collector.release()
                await eventually("everything that fit is exported") { harness.spans("exported") == 6 }
                #expect(
                    collector.acceptedSpanNames == ["first-0", "first-1", "next-0", "next-1", "next-2", "next-3"])
                #expect(harness.spans("dropped_queue_full") == 2)
                #expect(harness.spans("dropped_export_failed") == 0)
            }
        }
    }

    // MARK: Spans handed over unwritten

    @Test("pending spans are written by the export: after the written ones, a trace never split across batches")
    func pendingSpansBatched() async throws {
        try await withCollector { collector, endpoint in
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .seconds(3600)
                    $0.requestTimeout = .seconds(120)
                    $0.maxBatchSize = 5
                }
            ) { harness in
                harness.exporter.submit(Pending(makeSpans(2, "a")))
                harness.exporter.submit(Pending(makeSpans(2, "b")))
                #expect(collector.posts.isEmpty, "4 spans are no batch of 5")
                // The batch is full: it takes the two traces that fit whole, and the third waits.
                harness.exporter.submit(Pending(makeSpans(2, "c")))
                await eventually("the first batch", within: .seconds(120)) { collector.posts.count == 1 }
                #expect(collector.posts[0].spanNames == ["a-0", "a-1", "b-0", "b-1"])
                await eventually("four exported") { harness.spans("exported") == 4 }
                #expect(harness.queued == 2)
                harness.exporter.submit(makeSpans(1, "w"))
                #expect(harness.queued == 3)
                await harness.stop()
                // What was written goes first, then what waits unwritten, in its order.
                #expect(collector.posts.count == 2)
                #expect(collector.posts.last?.spanNames == ["w-0", "c-0", "c-1"])
                #expect(harness.spans("exported") == 7)
                #expect(harness.spans("dropped_queue_full") ?? 0 == 0)
            }
        }
    }

    @Test("a pending trace larger than a batch goes out alone, whole")
    func pendingLargerThanBatch() async throws {
        try await withCollector { collector, endpoint in
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .seconds(3600)
                    $0.requestTimeout = .seconds(120)
                    $0.maxBatchSize = 2
                }
            ) { harness in
                harness.exporter.submit(Pending(makeSpans(3, "big")))
                await eventually("the batch", within: .seconds(120)) { collector.posts.count == 1 }
                #expect(collector.posts[0].spanNames == ["big-0", "big-1", "big-2"])
                await eventually("exported") { harness.spans("exported") == 3 }
                #expect(harness.queued == 0)
            }
        }
    }

    @Test("a full queue drops a pending trace whole, and counts it; written and pending share the limit")
    func pendingQueueFull() async throws {
        try await withCollector { collector, endpoint in
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .seconds(60)
                    $0.maxBatchSize = 100
                    $0.maxQueueSize = 4
                }
            ) { harness in
                harness.exporter.submit(Pending(makeSpans(3, "a")))
                harness.exporter.submit(Pending(makeSpans(2, "b")))
                #expect(harness.spans("dropped_queue_full") == 2, "b does not fit whole")
                #expect(harness.queued == 3)
                harness.exporter.submit(makeSpans(3, "w"))
                #expect(harness.spans("dropped_queue_full") == 4, "one written span fits")
                #expect(harness.queued == 4)
                harness.exporter.submit(Pending(makeSpans(1, "c")))
                #expect(harness.spans("dropped_queue_full") == 5)
                await harness.stop()
                #expect(collector.acceptedSpanNames == ["w-0", "a-0", "a-1", "a-2"])
                #expect(harness.spans("exported") == 4)
            }
        }
    }

    @Test("pending spans once written are let go by the next submits and at stop: none is kept for good")
    func pendingReleased() async throws {
        try await withCollector { collector, endpoint in
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .seconds(3600)
                    $0.requestTimeout = .seconds(120)
                    $0.maxBatchSize = 2
                }
            ) { harness in
                weak var first: Pending?
                weak var second: Pending?
                do {
                    let a = Pending(makeSpans(1, "a"))
                    let b = Pending(makeSpans(1, "b"))
                    first = a
                    second = b
                    harness.exporter.submit(a)
                    harness.exporter.submit(b)
                }
                await eventually("the first batch", within: .seconds(120)) { harness.spans("exported") == 2 }
                weak var third: Pending?
                weak var fourth: Pending?
                do {
                    let c = Pending(makeSpans(1, "c"))
                    let d = Pending(makeSpans(1, "d"))
                    third = c
                    fourth = d
                    harness.exporter.submit(c)
                    harness.exporter.submit(d)
                }
                #expect(first == nil && second == nil, "two submits let go of the two written before")
                await harness.stop()
                #expect(collector.acceptedSpanNames == ["a-0", "b-0", "c-0", "d-0"])
                #expect(third == nil && fourth == nil, "stop lets go of the rest")
            }
        }
    }

    // MARK: Retries

    @Test("503 then 200: the batch is sent again after a backoff, and accepted once")
    func retriedThenAccepted() async throws {
        try await withCollector { collector, endpoint in
            collector.script([Collector.Answer(status: 503)])
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .seconds(60)
                    $0.maxBatchSize = 3
                }
            ) { harness in
                harness.exporter.submit(makeSpans(3, "r"))
                await eventually("exported after the retry") { harness.spans("exported") == 3 }
                #expect(collector.posts.map(\.status) == [503, 200])
                #expect(collector.posts.first?.body == collector.posts.last?.body, "the same batch sent again")
                #expect(collector.acceptedSpanNames == ["r-0", "r-1", "r-2"])
                #expect(harness.exports("retried") == 1)
                #expect(harness.exports("ok") == 1)
                #expect(harness.exports("failed") == 0)
                #expect(harness.spans("dropped_export_failed") == 0)
                // The first backoff: 1 s and up to a fifth of it again.
                let waits = harness.waits.all
                #expect(waits.count == 1)
                #expect(waits.allSatisfy { $0 >= .seconds(1) && $0 <= .milliseconds(1200) }, "\(waits)")
                #expect(harness.logged("trace_export_failing"))
                #expect(harness.logged("trace_export_resumed"))
            }
        }
    }

    @Test(
        "each retryable status is retried; Retry-After sets the wait",
        arguments: [(429, "2", 2), (503, "7", 7), (504, "600", 60)] as [(Int, String, Int)])
    func retryAfter(status: Int, retryAfter: String, seconds: Int) async throws {
        try await withCollector { collector, endpoint in
            collector.script([Collector.Answer(status: status, headers: [("Retry-After", retryAfter)])])
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .seconds(60)
                    $0.maxBatchSize = 1
                    // Above the longest wait: a wait past the export timeout drops the batch instead.
                    $0.exportTimeout = .seconds(90)
                }
            ) { harness in
                harness.exporter.submit(makeSpans(1, "w"))
                await eventually("exported after the retry") { harness.spans("exported") == 1 }
                #expect(collector.posts.map(\.status) == [status, 200])
                // A value over a minute is taken as a minute.
                #expect(harness.waits.all == [.seconds(seconds)])
                #expect(harness.exports("retried") == 1)
            }
        }
    }

    @Test("Retry-After: 0 is waited as the backoff's first step, so a collector refusing on and on is not hammered")
    func zeroRetryAfterWaitsTheBackoff() async throws {
        try await withCollector { collector, endpoint in
            collector.script([Collector.Answer(status: 502, headers: [("Retry-After", "0")])])
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .seconds(60)
                    $0.maxBatchSize = 1
                    $0.exportTimeout = .seconds(90)
                }
            ) { harness in
                harness.exporter.submit(makeSpans(1, "z"))
                await eventually("exported after the retry") { harness.spans("exported") == 1 }
                let waits = harness.waits.all
                #expect(waits.count == 1 && waits.allSatisfy { $0 >= .seconds(1) && $0 <= .milliseconds(1200) })
            }
        }
    }

    @Test("an unreachable collector is retried like a busy one")
    func connectionRefusedIsRetried() async throws {
        let refusing = try LoopbackPort.Refusing()
        try await withExporter(
            endpoint: "http://127.0.0.1:\(refusing.port)/v1/traces",
            {
                $0.scheduleDelay = .seconds(60)
                $0.maxBatchSize = 2
                $0.exportTimeout = .milliseconds(3900)
            }
        ) { harness in
            harness.exporter.submit(makeSpans(2, "x"))
            await eventually("dropped after its retries") { harness.spans("dropped_export_failed") == 2 }
            #expect(harness.waits.all.count == 2)
            #expect(harness.exports("retried") == 2)
            #expect(harness.exports("failed") == 1)
            #expect(harness.logged("trace_export_dropped"))
        }
        // Held to the end: released early, its port could go to another test's listener.
        withExtendedLifetime(refusing) {}
    }

    @Test(
        "a status that is not worth retrying drops the batch at once, and counts it",
        arguments: [400, 401, 404, 413, 500])
    func refusedOutright(status: Int) async throws {
        try await withCollector { collector, endpoint in
            collector.script([], fallback: Collector.Answer(status: status))
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .seconds(60)
                    $0.maxBatchSize = 4
                }
            ) { harness in
                harness.exporter.submit(makeSpans(4, "bad"))
                await eventually("dropped") { harness.spans("dropped_export_failed") == 4 }
                // Counted once the export ended: no retry can follow.
                #expect(collector.posts.count == 1)
                #expect(harness.waits.all.isEmpty)
                #expect(harness.exports("failed") == 1)
                #expect(harness.exports("retried") == 0)
                #expect(harness.exports("ok") == 0)
                #expect(harness.spans("exported") == 0)
                #expect(harness.logged("trace_export_dropped"))
                // The exporter goes on: the next batch is sent.
                collector.script([])
                harness.exporter.submit(makeSpans(4, "good"))
                await eventually("the next batch is exported") { harness.spans("exported") == 4 }
                #expect(collector.acceptedSpanNames == ["good-0", "good-1", "good-2", "good-3"])
            }
        }
    }

    @Test("a collector that stays busy past the export timeout: the batch is dropped and counted")
    func exportTimeout() async throws {
        try await withCollector { collector, endpoint in
            collector.script([], fallback: Collector.Answer(status: 503))
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .seconds(60)
                    $0.maxBatchSize = 3
                    // Backoffs of 1–1.2 s and 2–2.4 s fit; the third, 4 s or more, does not.
                    $0.exportTimeout = .milliseconds(3900)
                }
            ) { harness in
                harness.exporter.submit(makeSpans(3, "t"))
                await eventually("dropped") { harness.spans("dropped_export_failed") == 3 }
                #expect(collector.posts.count == 3)
                let waits = harness.waits.all
                #expect(waits.count == 2)
                #expect(waits.first.map { $0 >= .seconds(1) && $0 <= .milliseconds(1200) } == true, "\(waits)")
                #expect(waits.last.map { $0 >= .seconds(2) && $0 <= .milliseconds(2400) } == true, "\(waits)")
                #expect(harness.exports("retried") == 2)
                #expect(harness.exports("failed") == 1)
                #expect(harness.spans("exported") == 0)
            }
        }
    }

    @Test("an export timeout shorter than the first backoff: one try, then dropped")
    func exportTimeoutBelowBackoff() async throws {
        try await withCollector { collector, endpoint in
            collector.script([], fallback: Collector.Answer(status: 503))
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .seconds(60)
                    $0.maxBatchSize = 2
                    $0.exportTimeout = .milliseconds(500)
                }
            ) { harness in
                harness.exporter.submit(makeSpans(2, "t"))
                await eventually("dropped") { harness.spans("dropped_export_failed") == 2 }
                #expect(collector.posts.count == 1)
                #expect(harness.waits.all.isEmpty)
                #expect(harness.exports("failed") == 1)
                #expect(harness.exports("retried") == 0)
            }
        }
    }

    @Test("a partial success counts the spans the collector rejected, at most the batch")
    func partialSuccess() async throws {
        try await withCollector { collector, endpoint in
            // partial_success { rejected_spans: 2 }, then { rejected_spans: 100 }.
            collector.script([
                Collector.Answer(status: 200, body: [0x0A, 0x02, 0x08, 0x02]),
                Collector.Answer(status: 200, body: [0x0A, 0x02, 0x08, 0x64]),
            ])
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .seconds(60)
                    $0.maxBatchSize = 5
                }
            ) { harness in
                harness.exporter.submit(makeSpans(5, "p"))
                await eventually("rejected counted") { harness.spans("rejected") == 2 }
                #expect(harness.spans("exported") == 3)
                harness.exporter.submit(makeSpans(5, "q"))
                await eventually("all rejected") { harness.spans("rejected") == 7 }
                #expect(harness.spans("exported") == 3)
                #expect(harness.exports("ok") == 2)
            }
        }
    }

    // MARK: Stop

    @Test("stop sends what is queued before it returns")
    func stopFlushes() async throws {
        try await withCollector { collector, endpoint in
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .seconds(60)
                    $0.maxBatchSize = 4
                }
            ) { harness in
                harness.exporter.submit(makeSpans(6, "f"))
                await eventually("the full batch") { collector.posts.count == 1 }
                #expect(collector.posts.count == 1)
                await harness.stop()
                // No waiting here: stop returned, so the rest is at the collector.
                #expect(collector.acceptedSpanNames == (0..<6).map { "f-\($0)" })
                #expect(collector.posts.map { $0.spanNames?.count } == [4, 2])
                #expect(harness.spans("exported") == 6)
                #expect(harness.queued == 0)
            }
        }
    }

    @Test("stop gives up at its deadline: the batch under way is dropped and counted")
    func stopDeadline() async throws {
        let refusing = try LoopbackPort.Refusing()
        // Real backoffs (1 s, 2 s, …) for 120 s, each try allowed 60 s: only the stop's
        // deadline ends them early. The bound below sits far from both, so a loaded machine
        // that runs the stop late does not look like a stop that waited for them.
        try await withExporter(
            endpoint: "http://127.0.0.1:\(refusing.port)/v1/traces", instantSleep: false,
            {
                $0.scheduleDelay = .seconds(60)
                $0.maxBatchSize = 3
                $0.requestTimeout = .seconds(60)
                $0.exportTimeout = .seconds(120)
            }
        ) { harness in
            harness.exporter.submit(makeSpans(3, "d"))
            await eventually("the first try failed") { harness.exports("retried") == 1 }
            harness.exporter.submit(makeSpans(2, "e"))
            let started = MonotonicInstant.now()
            await harness.stop(within: .milliseconds(300))
            let took = Duration.nanoseconds(Int64(started.nanoseconds(until: .now())))
            #expect(took < .seconds(30), "stop took \(took)")
            #expect(harness.spans("dropped_export_failed") == 5)
            #expect(harness.spans("exported") == 0)
            #expect(harness.queued == 0)
        }
        withExtendedLifetime(refusing) {}
    }

    // MARK: The request

    @Test("the request: POST to the endpoint, protobuf, the configured headers, the resource and scope")
    func requestHeaders() async throws {
        try await withCollector { collector, endpoint in
            try await withExporter(
                endpoint: endpoint,
                {
                    $0.scheduleDelay = .milliseconds(20)
                    $0.headers = [("Authorization", "Bearer secret-token"), ("X-Scope-OrgID", "tenant-1")]
                    $0.resource = [
                        SpanAttribute("service.name", .string("gateway-test")),
                        SpanAttribute("deployment.environment", .string("test")),
                    ]
                }
            ) { harness in
                harness.exporter.submit(makeSpans(2, "h"))
                await eventually("the batch") { collector.posts.count == 1 }
                let post = try #require(collector.posts.first)
                #expect(post.method == "POST")
                #expect(post.path == "/v1/traces")
                #expect(post.header("Content-Type") == "application/x-protobuf")
                #expect(post.header("Authorization") == "Bearer secret-token")
                #expect(post.header("X-Scope-OrgID") == "tenant-1")
                #expect(post.header("User-Agent") == "text-gateway/9.9.9")
                let decoded = try OTLPPython.decodeRequest(post.body)
                #expect(decoded.canonical)
                let resourceSpans = try #require(decoded.request.resourceSpans.first)
                #expect(
                    attributes(resourceSpans.resource?.attributes) == [
                        SpanAttribute("service.name", .string("gateway-test")),
                        SpanAttribute("deployment.environment", .string("test")),
                    ])
                #expect(resourceSpans.scopeSpans?.first?.scope?.name == "text-gateway")
                #expect(resourceSpans.scopeSpans?.first?.scope?.version == "9.9.9")
                #expect(decoded.request.spans.map(\.name) == ["h-0", "h-1"])
            }
        }
    }
}

/// Spans handed over unwritten, as a request's are; a class, so a test can see it released.
private final class Pending: PendingSpans {
    let spans: [SpanRecord]

    init(_ spans: [SpanRecord]) { self.spans = spans }

    var spanCount: Int { spans.count }

    func write(into encoded: inout EncodedSpans) {
        for span in spans { encoded.append(span) }
    }
}

/// Keeps every thread of the cooperative pool spinning for `duration` (no suspension point).
private func occupyThreadPool(for duration: Duration) async {
    let end = MonotonicInstant.now().advanced(by: duration)
    let spinners = (0..<min(8, max(2, EventLoopGroup.processorCount))).map { _ in
        Task.detached {
            var spins = 0
            while MonotonicInstant.now() < end { spins &+= 1 }
            return spins
        }
    }
    for spinner in spinners { _ = await spinner.value }
}

@Suite("SpanExporter's backoff")
struct SpanExporterBackoffTests {
    @Test("Retry-After: 0 waits the backoff, not nothing (no tight loop against a refusing collector)")
    func zeroRetryAfter() throws {
        let wait = try #require(SpanExporter.backoff(attempt: 1, retryAfter: .zero))
        #expect(wait >= .seconds(1) && wait <= .milliseconds(1200))
        #expect(SpanExporter.backoff(attempt: 1, retryAfter: .seconds(3)) == .seconds(3))
        let fifth = try #require(SpanExporter.backoff(attempt: 9, retryAfter: nil))
        #expect(fifth >= .seconds(16) && fifth <= .milliseconds(19_200))
    }
}
