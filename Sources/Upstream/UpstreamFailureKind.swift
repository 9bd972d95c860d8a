/// The kinds of upstream failure, by the bounded label logs and metrics give them. Apart from
/// ``UpstreamFailure`` so that the gateway's error can name one without the chat wire types
/// (the ProcessBody fuzz target builds it alone).
package enum UpstreamFailureKind: String, Sendable {
    case connect, tls, timeout, busy
    case rejected = "status_4xx"
    case serverError = "status_5xx"
    case contextLength = "context_length"
    case streamError = "stream_error"
    case unreadable
    case noContent = "no_content"
    case transport
    /// A `"format": "json"` answer that did not match its schema, even after a repair call.
    case invalidOutput = "invalid_output"
}
