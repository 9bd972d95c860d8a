/// Why a chat-completions call failed, in the terms the gateway maps to statuses.
/// Never carries the upstream's error text in its description (it can hold internals);
/// the text is in ``UpstreamErrorBody/message`` for the log only.
package enum ChatError: Error, Sendable, CustomStringConvertible {
    /// The upstream could not be reached (DNS, refused, unreachable).
    case couldNotConnect(detail: String)
    /// The TLS handshake failed: a certificate not trusted, expired or for another host.
    case tlsFailed(detail: String)
    /// The connect or total timeout passed.
    case timedOut
    /// The calling task was cancelled; the upstream transfer was aborted.
    case cancelled
    /// The upstream answered with a non-2xx status; `error` is its decoded error body, and
    /// `retryAfter` its `Retry-After` header.
    case httpStatus(Int, error: UpstreamErrorBody?, retryAfter: String?)
    /// The upstream sent an error event in the middle of a stream.
    case streamError(UpstreamErrorBody)
    /// A 2xx answer whose body is not a chat completion.
    case unreadableBody
    /// A 2xx answer without usable `choices[0].message.content`.
    case noContent
    /// The connection failed mid-answer, or a stream was malformed or cut short.
    case transport(detail: String)

    package var description: String {
        switch self {
        case .couldNotConnect(let detail): return "could not connect: \(detail)"
        case .timedOut: return "timed out"
        case .cancelled: return "cancelled"
        case .httpStatus(let status, let error, _):
            return "upstream status \(status)" + (error?.code.map { " (\($0))" } ?? "")
        case .streamError(let error): return "upstream stream error" + (error.code.map { " (\($0))" } ?? "")
        case .unreadableBody: return "unreadable upstream body"
        case .noContent: return "upstream answer has no content"
        case .transport(let detail): return "transport failure: \(detail)"
        case .tlsFailed(let detail): return "TLS failure: \(detail)"
        }
    }
}
