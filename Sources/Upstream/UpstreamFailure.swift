package import ChatAPI

/// What a failed upstream call means, decided once for every route: its kind (the bounded
/// label logs and metrics use, and what the gateway answers the client with), and whether
/// trying again could help. It knows no HTTP status of the gateway's own: the gateway maps
/// the kind to its answer. A cancelled call is not a failure (the client went away): it has
/// no classification.
package struct UpstreamFailure: Sendable, Equatable {
    package typealias Kind = UpstreamFailureKind

    package let kind: Kind
    /// The upstream's `Retry-After` on a busy answer, when it is one to pass on.
    package let retryAfter: String?
    /// A connect failure, a connection lost before the answer was whole, a timeout, `429`,
    /// `500`, `502`, `503`, `504`.
    let retryable: Bool

    /// Whether the failure says the upstream is unwell (its circuit counts it), rather than
    /// that it refused this request (a `4xx`, a context too long).
    var countsAgainstUpstream: Bool {
        switch kind {
        case .rejected, .contextLength, .invalidOutput: false
        case .connect, .tls, .timeout, .busy, .serverError, .streamError, .unreadable, .noContent, .transport: true
        }
    }

    /// The label logs and `textgateway_upstream_errors_total` use.
    package var label: String { kind.rawValue }

    /// The classification of `error`; nil for a cancellation.
    package init?(_ error: ChatError) {
        switch error {
        case .cancelled:
            return nil
        case .couldNotConnect:
            self.init(.connect, retryable: true)
        case .tlsFailed:
            // Retried: a handshake cut short by a server at its connection limit passes on
            // the next try; a certificate that is wrong fails fast every time.
            self.init(.tls, retryable: true)
        case .timedOut:
            self.init(.timeout, retryable: true)
        case .httpStatus(let status, let body, let retryAfter):
            // 400 from OpenAI, vLLM and llama.cpp; 500 from llama.cpp builds before its
            // context error had a status of its own; 413 from servers that say it in HTTP.
            if [400, 413, 500].contains(status), body?.saysContextExceeded == true {
                self.init(.contextLength, retryable: false)
            } else if status == 429 || status == 503 {
                self.init(
                    .busy, retryable: true, retryAfter: retryAfter.flatMap { Self.isValidRetryAfter($0) ? $0 : nil })
            } else {
                self.init(status >= 500 ? .serverError : .rejected, retryable: [500, 502, 504].contains(status))
            }
        case .streamError:
            self.init(.streamError, retryable: false)
        case .unreadableBody:
            self.init(.unreadable, retryable: false)
        case .noContent:
            self.init(.noContent, retryable: false)
        case .transport:
            // A connection lost before the answer was whole: a call through the pool has not
            // given the client a byte of it (a stream's failures past its head never come here).
            self.init(.transport, retryable: true)
        }
    }

    /// A stream that stalled or ran past its limits: the upstream's time is up.
    static let streamTimeout = UpstreamFailure(.timeout, retryable: false)
    /// An answer that ended without content, or a stream cut short.
    package static let emptyResult = UpstreamFailure(.noContent, retryable: false)
    package static let invalidModelOutput = UpstreamFailure(.invalidOutput, retryable: false)
    package static let truncated = UpstreamFailure(.transport, retryable: false)

    private init(_ kind: Kind, retryable: Bool, retryAfter: String? = nil) {
        self.kind = kind
        self.retryable = retryable
        self.retryAfter = retryAfter
    }

    /// A failure of `kind`, known only by its kind (as an answer already given records it).
    package init(kind: Kind) {
        self.init(kind, retryable: false)
    }

    /// `Retry-After` is passed on only when it is printable ASCII of a sensible length (a
    /// delay in seconds or an HTTP date), nothing else.
    private static func isValidRetryAfter(_ value: String) -> Bool {
        guard !value.isEmpty, value.utf8.count <= 64 else { return false }
        return value.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }
}
