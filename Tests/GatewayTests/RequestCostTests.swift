import ChatAPI
import HTTP1
import HTTPServer
import Pricing
import Store
import Synchronization
import Testing

@testable import Gateway
@testable import Telemetry

/// A request's cost, as the finisher writes it into the ledger's row, the access-log line and
/// the metrics: from the upstream's usage at the price of the model that answered, in force
/// when the request started.
@Suite("The cost of a request: its row, its log line and its metrics")
struct RequestCostTests {
    /// A route that answers as if `model` had been called and reported `usage`.
    struct PricedRoute: RouteHandler {
        let model: String
        let usage: Usage?
        var cacheHit = false

        func answer(_ request: HTTPRequest, context: RequestContext, report: inout RouteReport)
            async throws(GatewayError) -> RouteAnswer
        {
            report.task = "summarize"
            report.model = model
            report.upstream = "main"
            report.upstreamAttempts = 1
            report.cacheHit = cacheHit
            if !cacheHit { report.span = UpstreamSpan(since: .now(), usage: usage) }
            return RouteAnswer(HTTPResponse(headers: ["Content-Type": "application/json"], body: .bytes([])))
        }
    }

    struct Setup {
        let ledger = RequestFinisherTests.CommittedRows()
        let writer: LedgerWriter
        let logs = LogSink.memory()
        let metrics = GatewayMetrics()
        let pipeline: Pipeline

        init(prices: PriceList?, route: PricedRoute, now: Instant = .now) {
            writer = LedgerWriter(store: ledger)
            let recorder = LedgerRecorder(
                writer: writer, strict: false, storesResults: false, clock: { now }, prices: prices)
            let logger = Logger(level: .info, sink: logs)
            let finisher = RequestFinisher(
                metrics: metrics, metricsEnabled: true, logger: logger, clock: { now }, observers: [],
                ledger: recorder, prices: prices)
            pipeline = Pipeline(
                routes: [Route(method: .POST, path: "/api/process", middleware: [], handler: route)],
                groups: [.api, .openAI], finisher: finisher, logger: logger, errorLanguage: nil)
        }

        /// The value of the sample of `name` whose labels include `labels`, as exposed.
        func sample(_ name: String, labels: [String]) -> String? {
            for line in metrics.registry.exposition().split(separator: "\n") where line.hasPrefix(name + "{") {
                guard labels.allSatisfy({ line.contains($0) }), let space = line.lastIndex(of: " ") else { continue }
                return String(line[line.index(after: space)...])
            }
            return nil
        }

        /// Sends one request and gives its committed row and its log line.
        func send(id: String) async throws -> (row: LedgerRow, line: String) {
            try await writer.start()
            let response = await pipeline.respond(to: RequestFinisherTests.processRequest(id: id))
            await response.finished?(.completed)
            await writer.flush()
            let row = try #require(ledger.all.first { $0.requestID == id })
            let line = try #require(logs.lines.first { $0.contains("request_id=\(id)") })
            return (row, line)
        }
    }

    static let december = Instant(secondsSinceEpoch: 1_796_083_200) // 2026-12-01T00:00:00Z

    @Test("cached prompt tokens at the cached price, the rest at the input price, output at its own, rounded up")
    func cachedTokens() async throws {
        let prices = try PriceList.parse("m=2/0.5/8", currency: .standard)
        // 10,000 prompt tokens of which 6,000 cached, 101 output: 8,000 + 3,000 + 808 = 11,808 micro-units.
        let usage = Usage(promptTokens: 10_000, completionTokens: 101, totalTokens: 10_101, cachedPromptTokens: 6000)
        let setup = Setup(prices: prices, route: PricedRoute(model: "m", usage: usage))
        let (row, line) = try await setup.send(id: "cached")
        #expect(row.costMicros == 11_808)
        #expect(line.contains("cost_micros=11808"), "\(line)")
        #expect(
            setup.sample("textgateway_cost_micros_total", labels: [#"task="summarize""#, #"model="m""#]) == "11808")
    }

    @Test("the price of the model that answered: after a fallback, the fallback's")
    func fallbackModelsPrice() async throws {
        let prices = try PriceList.parse("first=1/1; second=3/3", currency: .standard)
        let usage = Usage(promptTokens: 1000, completionTokens: 1000, totalTokens: 2000)
        let setup = Setup(prices: prices, route: PricedRoute(model: "second", usage: usage))
        #expect(try await setup.send(id: "fallback").row.costMicros == 6000)
    }

    @Test("a price change applies to the requests that start from its instant on")
    func priceChange() async throws {
        let prices = try PriceList.parse("m=1/1; m=2/2@2026-12-01T00:00:00Z", currency: .standard)
        let usage = Usage(promptTokens: 1_000_000, completionTokens: 0, totalTokens: 1_000_000)
        let before = Setup(
            prices: prices, route: PricedRoute(model: "m", usage: usage),
            now: Instant(secondsSinceEpoch: Self.december.secondsSinceEpoch - 60))
        #expect(try await before.send(id: "before").row.costMicros == 1_000_000)
        let after = Setup(
            prices: prices, route: PricedRoute(model: "m", usage: usage),
            now: Instant(secondsSinceEpoch: Self.december.secondsSinceEpoch + 60))
        #expect(try await after.send(id: "after").row.costMicros == 2_000_000)
    }

    @Test("an answer from the cache costs nothing, and says so")
    func cacheHitCostsNothing() async throws {
        let prices = try PriceList.parse("m=1/1", currency: .standard)
        let setup = Setup(prices: prices, route: PricedRoute(model: "m", usage: nil, cacheHit: true))
        let (row, line) = try await setup.send(id: "hit")
        #expect(row.costMicros == 0)
        #expect(line.contains("cost_micros=0"), "\(line)")
    }

    @Test("a model without a price is served, its cost unknown and counted as unpriced")
    func unpriced() async throws {
        let prices = try PriceList.parse("other=1/1", currency: .standard)
        let usage = Usage(promptTokens: 10, completionTokens: 10, totalTokens: 20)
        let setup = Setup(prices: prices, route: PricedRoute(model: "m", usage: usage))
        let (row, line) = try await setup.send(id: "unpriced")
        #expect(row.costMicros == nil)
        #expect(!line.contains("cost_micros"), "\(line)")
        #expect(setup.sample("textgateway_unpriced_requests_total", labels: [#"model="m""#]) == "1")
    }

    @Test("without prices no request has a cost")
    func noPrices() async throws {
        let usage = Usage(promptTokens: 10, completionTokens: 10, totalTokens: 20)
        let setup = Setup(prices: nil, route: PricedRoute(model: "m", usage: usage))
        let (row, line) = try await setup.send(id: "free")
        #expect(row.costMicros == nil)
        #expect(!line.contains("cost_micros"), "\(line)")
        #expect(setup.sample("textgateway_unpriced_requests_total", labels: []) == nil)
        #expect(setup.sample("textgateway_cost_micros_total", labels: []) == nil)
    }
}
