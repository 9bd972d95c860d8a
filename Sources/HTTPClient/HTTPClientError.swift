/// Why an upstream request failed. Details are curl's generic error text: never a header,
/// a body or a key.
public struct HTTPClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure, stable for mapping to statuses.
    public enum Kind: String, Hashable, Sendable {
        /// The host could not be resolved or the connection was refused or unreachable.
        case connectFailed
        /// The connect timeout or the total timeout passed.
        case timedOut
        /// The calling task was cancelled; the transfer was aborted.
        case cancelled
        /// The response body was larger than the client's limit.
        case responseTooLarge
        /// The request could not be set up (bad URL, unsupported scheme).
        case invalidRequest
        /// The connection failed after it was made (reset, TLS failure, truncated response).
        case transport
        /// The client was shut down.
        case shutdown
    }

    public var kind: Kind
    /// A short description for logs.
    public var detail: String

    public init(_ kind: Kind, _ detail: String = "") {
        self.kind = kind
        self.detail = detail
    }

    public var description: String { detail.isEmpty ? kind.rawValue : "\(kind.rawValue): \(detail)" }
}
