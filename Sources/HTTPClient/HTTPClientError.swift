/// Why an upstream request failed. Details are curl's generic error text: never a header,
/// a body or a key.
package struct HTTPClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure, stable for mapping to statuses.
    package enum Kind: String, Hashable, Sendable {
        /// The host could not be resolved or the connection was refused or unreachable.
        case connectFailed
        /// The connect timeout, the response-head timeout or the total timeout passed.
        case timedOut
        /// The calling task was cancelled; the transfer was aborted.
        case cancelled
        /// The response body was larger than the client's limit.
        case responseTooLarge
        /// The request could not be set up (bad URL, unsupported scheme).
        case invalidRequest
        /// The TLS handshake failed: the certificate was not trusted, expired or for another
        /// host, the CA file could not be read, or no common protocol or cipher was found.
        case tls
        /// The connection failed after it was made (reset, HTTP/2 framing error, truncated response).
        case transport
        /// The client was shut down.
        case shutdown
    }

    package var kind: Kind
    /// A short description for logs.
    package var detail: String
    /// True when the failure came before any byte of the response arrived: the client saw no
    /// answer, so sending the request again cannot duplicate one it saw. (The upstream may
    /// still have acted on the request.)
    package var beforeResponse: Bool

    /// `beforeResponse` nil means what `kind` implies: true for `connectFailed`, `tls` and
    /// `invalidRequest` (nothing was answered), false otherwise.
    package init(_ kind: Kind, _ detail: String = "", beforeResponse: Bool? = nil) {
        self.kind = kind
        self.detail = detail
        self.beforeResponse = beforeResponse ?? [.connectFailed, .tls, .invalidRequest].contains(kind)
    }

    package var description: String { detail.isEmpty ? kind.rawValue : "\(kind.rawValue): \(detail)" }
}
