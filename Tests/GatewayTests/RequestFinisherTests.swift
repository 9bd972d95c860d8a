import HTTP1
import HTTPServer
import Store
import Synchronization
import Testing

@testable import Gateway
@testable import Telemetry

/// The end of a request as the HTTP server drives it (the pipeline's answer, its body written
/// to a client, the finished hook), with the client leaving at the last moment: the ledger's
/// row and the access-log line say the same thing of how the request ended.
@Suite("The finisher: the row and the log line agree however the client leaves")
struct RequestFinisherTests {
    /// A ledger in memory that keeps every committed row.
    final class CommittedRows: LedgerStore {
        let rows = Mutex<[LedgerRow]>([])
        func append(_ rows: [LedgerRow]) async throws(StoreError) { self.rows.withLock { $0 += rows } }
        var all: [LedgerRow] { rows.withLock { $0 } }
    }

    /// `/api/process` answering with a stream: `start`, then `done` as its last event.
    struct StreamingRoute: RouteHandler {
        static let lastEvent = Array("event: done\ndata: {}\n\n".utf8)

        func answer(_ request: HTTPRequest, context: RequestContext, report: inout RouteReport)
            async throws(GatewayError) -> RouteAnswer
        {
            RouteAnswer(streaming: ["Content-Type": "text/event-stream"]) { writer in
                try await writer.write(Array("event: start\ndata: {}\n\n".utf8))
                return StreamReport(outcome: .done, lastEvent: Self.lastEvent)
            }
        }
    }

    /// `/api/process` answering with a whole body.
    struct WholeRoute: ResponseHandler {
        func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
            HTTPResponse(headers: ["Content-Type": "application/json"], body: .bytes(Array("{}".utf8)))
        }
    }

    /// How the client leaves.
    enum Leaving: CaseIterable, CustomTestStringConvertible {
        /// The write of the stream's last event fails.
        case duringLastEvent
        /// The last event is written, then the connection closes before the response ends.
        case afterLastEvent
        var testDescription: String { self == .duringLastEvent ? "during the last event" : "after the last event" }
    }

    /// An empty `POST /api/process` with `X-Request-Id: id`, as the HTTP server hands it over.
    static func processRequest(id: String) -> HTTPRequest {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "x")
        headers.add(name: "X-Request-Id", value: id)
        let head = RequestHead(
            method: .POST, target: "/api/process", path: "/api/process", query: nil, version: .http1_1,
            headers: headers, framing: .contentLength(0))
        return HTTPRequest(head: head)
    }

    struct Setup {
        let ledger = CommittedRows()
        let writer: LedgerWriter
        let logs = LogSink.memory()
        let pipeline: Pipeline

        init(strict: Bool, handler: any RouteHandler) {
            writer = LedgerWriter(store: ledger)
            let recorder = LedgerRecorder(writer: writer, strict: strict, storesResults: false, clock: { .now })
            let logger = Logger(level: .info, sink: logs)
            let finisher = RequestFinisher(
                metrics: GatewayMetrics(), metricsEnabled: false, logger: logger, clock: { .now }, observers: [],
                ledger: recorder)
            pipeline = Pipeline(
                routes: [Route(method: .POST, path: "/api/process", middleware: [], handler: handler)],
                groups: [.api, .openAI], finisher: finisher, logger: logger, errorLanguage: nil,
                strictLedger: strict ? recorder : nil)
        }

        func request(id: String) -> HTTPRequest {
            RequestFinisherTests.processRequest(id: id)
        }

        /// The row committed for `id` and the log line written for it.
        func ended(_ id: String) async throws -> (row: LedgerRow, line: String) {
            await writer.flush()
            let row = try #require(ledger.all.first { $0.requestID == id })
            let line = try #require(logs.lines.first { $0.contains("request_id=\(id)") })
            return (row, line)
        }
    }

    @Test(
        "strict durability: a stream whose client leaves at its last event is done/200 in its row and its log line",
        arguments: Leaving.allCases)
    func strictStream(leaving: Leaving) async throws {
        let setup = Setup(strict: true, handler: StreamingRoute())
        try await setup.writer.start()
        let id = "strict-last-event"
        let response = await setup.pipeline.respond(to: setup.request(id: id))
        guard case .stream(let produce) = response.body else {
            Issue.record("expected a stream")
            return
        }
        let ledger = setup.ledger
        let committedBeforeLastEvent = Mutex<Bool?>(nil)
        let client = ResponseBodyWriter { bytes in
            guard bytes == StreamingRoute.lastEvent else { return }
            committedBeforeLastEvent.withLock { $0 = ledger.all.contains { $0.requestID == id } }
            if leaving == .duringLastEvent { throw ConnectionClosedError() }
        }
        do {
            try await produce(client)
            #expect(leaving == .afterLastEvent)
        } catch {
            #expect(leaving == .duringLastEvent)
        }
        await response.finished?(.connectionClosed)
        #expect(committedBeforeLastEvent.withLock { $0 } == true)
        let (row, line) = try await setup.ended(id)
        #expect(row.status == 200 && row.outcome == "done")
        #expect(line.contains("status=200") && line.contains("outcome=done"), "\(line)")
        #expect(!line.contains("code="), "\(line)")
        await setup.writer.stop(deadline: .now().advanced(by: .seconds(5)))
    }

    @Test("strict durability: a whole body committed before it is sent stays done/200 when its client leaves")
    func strictWholeBody() async throws {
        let setup = Setup(strict: true, handler: WholeRoute())
        try await setup.writer.start()
        let id = "strict-whole"
        let response = await setup.pipeline.respond(to: setup.request(id: id))
        // Committed before the body goes out.
        #expect(setup.ledger.all.contains { $0.requestID == id })
        await response.finished?(.connectionClosed)
        let (row, line) = try await setup.ended(id)
        #expect(row.status == 200 && row.outcome == "done")
        #expect(line.contains("status=200") && line.contains("outcome=done"), "\(line)")
        await setup.writer.stop(deadline: .now().advanced(by: .seconds(5)))
    }

    @Test(
        "fast durability: a stream whose client leaves at its last event is cancelled/499 in its row and its log line")
    func fastStream() async throws {
        let setup = Setup(strict: false, handler: StreamingRoute())
        try await setup.writer.start()
        let id = "fast-last-event"
        let response = await setup.pipeline.respond(to: setup.request(id: id))
        guard case .stream(let produce) = response.body else {
            Issue.record("expected a stream")
            return
        }
        let client = ResponseBodyWriter { bytes in
            if bytes == StreamingRoute.lastEvent { throw ConnectionClosedError() }
        }
        await #expect(throws: ConnectionClosedError.self) { try await produce(client) }
        #expect(setup.ledger.all.isEmpty)
        await response.finished?(.connectionClosed)
        let (row, line) = try await setup.ended(id)
        #expect(row.status == 499 && row.outcome == "cancelled")
        #expect(line.contains("status=499") && line.contains("outcome=cancelled"), "\(line)")
        await setup.writer.stop(deadline: .now().advanced(by: .seconds(5)))
    }
}
