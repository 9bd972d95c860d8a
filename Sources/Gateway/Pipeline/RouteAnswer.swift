import ChatAPI
import EventLoop
import HTTP1
import HTTPServer

/// An upstream call as a route reports it: how long it took, and the tokens it used.
struct UpstreamSpan: Sendable {
    var nanoseconds: UInt64
    var usage: Usage?

    /// The span of a call that started at `start` and ended now.
    init(since start: MonotonicInstant, usage: Usage? = nil) {
        nanoseconds = start.nanoseconds(until: .now())
        self.usage = usage
    }
}

/// What a whole answer tells the finisher beyond its response.
struct AnswerReport: Sendable {
    /// Answered from the response cache, without an upstream call of its own.
    var cacheHit = false
    /// The upstream call the answer came from, when there was one.
    var upstream: UpstreamSpan?
}

/// How a gateway stream ended, as its producer returns it: the finisher settles the request
/// from it, then the pipeline writes ``lastEvent``.
struct StreamReport: Sendable {
    /// `done`, `cancelled`, `failed`, `streamTimeout` or `shutdown`.
    var outcome: RequestOutcome
    /// The error the last event carries.
    var error: GatewayError?
    var upstream: UpstreamSpan?
    /// The stream's last event (`done` or `error`), not yet written: the finisher may have to
    /// commit the request's row first.
    var lastEvent: [UInt8]?

    /// A stream the client left before its end.
    static func cancelled(upstream: UpstreamSpan?) -> StreamReport {
        StreamReport(outcome: .cancelled, upstream: upstream)
    }
}

/// A gateway stream's body: writes its events but the last, and reports how it ended. It
/// throws only when the client went away with nothing more to report.
typealias StreamProducer = @Sendable (ResponseBodyWriter) async throws -> StreamReport

/// What a route answers with: its response and its report, or for a gateway stream its
/// head and the producer of its body (the pipeline makes the body, so that the finisher
/// learns how the stream ended).
struct RouteAnswer: Sendable {
    var response: HTTPResponse
    var report: AnswerReport
    /// Set for a gateway stream; `response`'s body is then the pipeline's to make.
    var stream: StreamProducer?

    init(_ response: HTTPResponse, report: AnswerReport = AnswerReport()) {
        self.response = response
        self.report = report
        stream = nil
    }

    init(streaming headers: HTTPHeaders, _ producer: @escaping StreamProducer) {
        response = HTTPResponse(headers: headers)
        report = AnswerReport()
        stream = producer
    }
}
