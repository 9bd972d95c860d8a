import EventLoop
import HTTP1
import HTTPClient
import HTTPServer
import Synchronization
import Telemetry
import TestSupport
import Testing

@testable import Tracing

/// An OTLP/HTTP collector stand-in on 127.0.0.1 (the project's own server, ephemeral port):
/// it keeps every POST and answers each with the next scripted answer, then the fallback.
/// `hold()` keeps the next answers back until `release()`, the POST recorded first, so a test
/// knows the exporter is stuck in a send.
final class Collector: Sendable {
    struct Post: Sendable {
        let method: String
        let path: String
        let headers: [(name: String, value: String)]
        let body: [UInt8]
        /// The status it was answered with.
        let status: Int

        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        /// The names of the spans in the body (nil when it does not read as OTLP).
        var spanNames: [String]? { otlpSpanNames(body) }
    }

    struct Answer: Sendable {
        var status: Int
        var headers: [(name: String, value: String)] = []
        var body: [UInt8] = []
    }

    private struct State {
        var posts: [Post] = []
        var script: [Answer] = []
        var fallback = Answer(status: 200)
        var held = false
    }

    private let state = Mutex(State())

    /// Every POST so far, in order.
    var posts: [Post] { state.withLock { $0.posts } }

    /// The names of the spans of every POST answered 2xx, in order.
    var acceptedSpanNames: [String] {
        posts.filter { (200..<300).contains($0.status) }.flatMap { $0.spanNames ?? ["<unreadable>"] }
    }

    /// The next answers, in order; once they are used, `fallback`.
    func script(_ answers: [Answer], fallback: Answer = Answer(status: 200)) {
        state.withLock {
            $0.script = answers
            $0.fallback = fallback
        }
    }

    func hold() { state.withLock { $0.held = true } }
    func release() { state.withLock { $0.held = false } }

    fileprivate func answer(_ request: HTTPRequest) async throws -> HTTPResponse {
        let answer = state.withLock { state -> Answer in
            let answer = state.script.isEmpty ? state.fallback : state.script.removeFirst()
            state.posts.append(
                Post(
                    method: request.method.rawValue, path: request.path, headers: Array(request.headers),
                    body: request.body, status: answer.status))
            return answer
        }
        // Bounded: a test that forgets to release fails on its own wait, not by hanging here.
        let deadline = MonotonicInstant.now().advanced(by: .seconds(60))
        while state.withLock({ $0.held }), MonotonicInstant.now() < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        return HTTPResponse(
            status: HTTPStatus(code: answer.status), headers: HTTPHeaders(answer.headers), body: .bytes(answer.body))
    }
}

/// A collector on an ephemeral loopback port for `body`, with its traces endpoint URL.
func withCollector(_ body: (Collector, String) async throws -> Void) async throws {
    let collector = Collector()
    var configuration = ServerConfiguration()
    configuration.port = 0
    configuration.loopCount = 1
    let server = try HTTPServer(configuration: configuration) { try await collector.answer($0) }
    let address = try await server.start()
    do {
        try await body(collector, "http://127.0.0.1:\(address.port)/v1/traces")
    } catch {
        collector.release()
        await server.shutdown(gracePeriod: .zero)
        throw error
    }
    collector.release()
    await server.shutdown(gracePeriod: .zero)
}

/// The backoff waits the exporter asked for, taken at once: retries are tested without
/// waiting for them.
final class RecordedWaits: Sendable {
    private let waits = Mutex<[Duration]>([])

    var all: [Duration] { waits.withLock { $0 } }

    func record(_ wait: Duration) { waits.withLock { $0.append(wait) } }

    /// The waits so far as a clock: a batch's export timeout counts only them, so how long a
    /// loaded machine takes to try a send changes nothing.
    var nanoseconds: UInt64 {
        waits.withLock {
            $0.reduce(0) {
                $0 + UInt64($1.components.seconds) * 1_000_000_000 + UInt64($1.components.attoseconds / 1_000_000_000)
            }
        }
    }
}

/// An exporter on its own HTTP client and metrics registry, started; `stop()` once, at the
/// latest when the test's body ends.
final class ExporterHarness: Sendable {
    let exporter: SpanExporter
    let registry = MetricsRegistry()
    let waits = RecordedWaits()
    let logs = LogSink.memory()
    private let client: HTTPClient
    private let stopped = Mutex(false)

    init(settings: TracingSettings, instantSleep: Bool) throws {
        client = try HTTPClient()
        let waits = waits
        if instantSleep {
            exporter = SpanExporter(
                settings: settings, client: client, metrics: registry, logger: Logger(level: .info, sink: logs),
                version: "9.9.9", sleep: { waits.record($0) }, clock: { waits.nanoseconds })
        } else {
            exporter = SpanExporter(
                settings: settings, client: client, metrics: registry, logger: Logger(level: .info, sink: logs),
                version: "9.9.9")
        }
    }

    /// Stops the exporter (the first call only) with `deadline` from now.
    func stop(within deadline: Duration = .seconds(20)) async {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        await exporter.stop(deadline: MonotonicInstant.now().advanced(by: deadline))
    }

    func shutdown() async {
        await stop()
        await client.shutdown()
    }

    /// A sample of the exposition, `name{labels}` as written there; nil when absent.
    func metric(_ sample: String) -> Double? {
        for line in registry.exposition().split(separator: "\n") where line.hasPrefix(sample + " ") {
            return Double(line.dropFirst(sample.count + 1))
        }
        return nil
    }

    func spans(_ outcome: String) -> Double? { metric("textgateway_trace_spans_total{outcome=\"\(outcome)\"}") }
    func exports(_ result: String) -> Double? { metric("textgateway_trace_exports_total{result=\"\(result)\"}") }
    var queued: Double? { metric("textgateway_trace_queue_spans") }

    /// Whether a logged line has `event`.
    func logged(_ event: String) -> Bool { logs.lines.contains { $0.contains(" \(event)") } }
}

/// A started exporter sending to `endpoint`, its settings made by `configure`; stopped and its
/// client shut down after `body`.
func withExporter(
    endpoint: String, instantSleep: Bool = true, _ configure: (inout TracingSettings) -> Void,
    _ body: (ExporterHarness) async throws -> Void
) async throws {
    var settings = TracingSettings(endpoint: endpoint)
    settings.requestTimeout = .seconds(10)
    configure(&settings)
    let harness = try ExporterHarness(settings: settings, instantSleep: instantSleep)
    try await harness.exporter.start()
    do {
        try await body(harness)
    } catch {
        await harness.shutdown()
        throw error
    }
    await harness.shutdown()
}

/// `count` spans named `prefix-0`, `prefix-1`, … of one trace.
func makeSpans(_ count: Int, _ prefix: String) -> [SpanRecord] {
    let trace = TraceID.random()
    let now = WallClock.nanoseconds()
    return (0..<count).map {
        SpanRecord(
            traceID: trace, spanID: .random(), parentSpanID: nil, name: "\(prefix)-\($0)", kind: .internal,
            startNanoseconds: now, endNanoseconds: now + 1000)
    }
}
