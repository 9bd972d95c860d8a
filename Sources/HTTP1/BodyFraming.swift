/// How the body of a request is delimited on the wire (RFC 9112 §6.3).
public enum BodyFraming: Hashable, Sendable {
    /// No body: the request had neither `Content-Length` nor `Transfer-Encoding`.
    case none
    /// A body of exactly this many bytes (`Content-Length`).
    case contentLength(Int)
    /// A body in the chunked transfer coding (`Transfer-Encoding: chunked`).
    case chunked
}
