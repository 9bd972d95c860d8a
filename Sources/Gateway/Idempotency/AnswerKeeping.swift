import HTTP1
import HTTPServer
import Store

/// How a route that keeps its answers for an `Idempotency-Key` (docs/api.md, "Retries")
/// writes a keyed stream, keeps it and gives a kept answer back: each such route supplies its
/// own, so the idempotency step knows no route's events or bodies.
protocol AnswerKeeping: Sendable {
    /// Where a keyed stream for request `requestID` is written; nil when the route never streams.
    func tee(requestID: String) -> StreamTee?
    /// What is kept of a stream that reached its end.
    func kept(_ tee: StreamTee, contentType: String, upstream: String?) -> StoredAnswer
    /// A kept answer as the first request's client got it, for a retry with its key.
    func replay(_ answer: StoredAnswer, requestID: String) -> HTTPResponse
    /// Whether `request` asks for a stream other than in its body (`Accept`): a retry must ask
    /// for the form the first asked for, so this is part of the key's fingerprint.
    func asksForEventStream(_ request: HTTPRequest) -> Bool
}

extension AnswerKeeping {
    func tee(requestID: String) -> StreamTee? { nil }

    func kept(_ tee: StreamTee, contentType: String, upstream: String?) -> StoredAnswer {
        StoredAnswer(
            status: 200, contentType: contentType, upstream: upstream, body: tee.kept.transcript, text: nil,
            streamed: true)
    }

    func replay(_ answer: StoredAnswer, requestID: String) -> HTTPResponse {
        guard answer.streamed else { return Self.wholeReplay(answer) }
        return Self.streamReplay(answer.body)
    }

    func asksForEventStream(_ request: HTTPRequest) -> Bool { false }

    /// A kept whole answer, as it was sent, marked replayed.
    static func wholeReplay(_ answer: StoredAnswer) -> HTTPResponse {
        HTTPResponse(
            status: HTTPStatus(code: answer.status),
            headers: ["Content-Type": answer.contentType, "Idempotent-Replayed": "true"], body: .bytes(answer.body))
    }

    /// A kept stream's events, written at once, marked replayed.
    static func streamReplay(_ bytes: [UInt8]) -> HTTPResponse {
        HTTPResponse(headers: replayedStreamHeaders, body: .stream { writer in try await writer.write(bytes) })
    }

    /// A replayed or joined stream's head.
    static var replayedStreamHeaders: HTTPHeaders {
        [
            "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no", "Idempotent-Replayed": "true",
        ]
    }
}
