import ChatAPI

/// What a failed upstream call means, decided once for every route: the error the client
/// gets, the bounded label logs and metrics use, and whether trying again could help.
/// A cancelled call is not a failure (the client went away): it has no classification.
struct UpstreamFailure: Sendable, Equatable {
    typealias Kind = UpstreamFailureKind

    let kind: Kind
    /// What the client is answered with.
    let error: GatewayError
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
    var label: String { kind.rawValue }

    /// The classification of `error`; nil for a cancellation.
    init?(_ error: ChatError) {
        switch error {
        case .cancelled:
            return nil
        case .couldNotConnect:
            self.init(.connect, .upstreamError, retryable: true)
        case .tlsFailed:
            // Retried: a handshake cut short by a server at its connection limit passes on
            // the next try; a certificate that is wrong fails fast every time.
            self.init(.tls, .upstreamError, retryable: true)
        case .timedOut:
            self.init(.timeout, .upstreamTimeout, retryable: true)
        case .httpStatus(let status, let body, let retryAfter):
            // 400 from OpenAI, vLLM and llama.cpp; 500 from llama.cpp builds before its
            // context error had a status of its own; 413 from servers that say it in HTTP.
            if [400, 413, 500].contains(status), body?.saysContextExceeded == true {
                self.init(.contextLength, .contextLengthExceeded, retryable: false)
            } else if status == 429 || status == 503 {
                var busy = GatewayError.upstreamBusy
                if let retryAfter, Self.isValidRetryAfter(retryAfter) {
                    busy.headers.add(name: "Retry-After", value: retryAfter)
                }
                self.init(.busy, busy, retryable: true)
            } else {
                self.init(
                    status >= 500 ? .serverError : .rejected, .upstreamError,
                    retryable: [500, 502, 504].contains(status))
            }
        case .streamError:
            self.init(.streamError, .upstreamError, retryable: false)
        case .unreadableBody:
            self.init(.unreadable, .upstreamError, retryable: false)
        case .noContent:
            self.init(.noContent, .emptyResult, retryable: false)
        case .transport:
            // A connection lost before the answer was whole: a call through the pool has not
            // given the client a byte of it (a stream's failures past its head never come here).
            self.init(.transport, .upstreamError, retryable: true)
        }
    }

    /// A stream that stalled or ran past its limits: the upstream's time is up.
    static let streamTimeout = UpstreamFailure(.timeout, .upstreamTimeout, retryable: false)
    /// An answer that ended without content, or a stream cut short.
    static let emptyResult = UpstreamFailure(.noContent, .emptyResult, retryable: false)
    static let invalidModelOutput = UpstreamFailure(.invalidOutput, .invalidModelOutput, retryable: false)
    static let truncated = UpstreamFailure(.transport, .upstreamError, retryable: false)

    private init(_ kind: Kind, _ error: GatewayError, retryable: Bool) {
        var error = error
        error.upstreamKind = kind
        self.kind = kind
        self.error = error
        self.retryable = retryable
    }

    /// A failure of `kind` that was answered with `error`.
    init(kind: Kind, error: GatewayError) {
        self.kind = kind
        self.error = error
        retryable = false
    }

    /// `Retry-After` is passed on only when it is printable ASCII of a sensible length (a
    /// delay in seconds or an HTTP date), nothing else.
    private static func isValidRetryAfter(_ value: String) -> Bool {
        guard !value.isEmpty, value.utf8.count <= 64 else { return false }
        return value.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }
}
