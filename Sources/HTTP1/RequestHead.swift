/// The head of a parsed request: request line, header fields and body framing.
public struct RequestHead: Sendable, Equatable {
    /// The request method.
    public var method: HTTPMethod
    /// The request-target exactly as sent, for example `"/v1/tasks?dry=1"`.
    public var target: String
    /// The path without the query: `"/v1/tasks"` for origin-form, the path of an
    /// absolute-form target (`"http://h/x?y"` gives `"/x"`, an empty path gives `"/"`),
    /// and `"*"` for the asterisk-form of `OPTIONS *`. Not percent-decoded.
    public var path: String
    /// What follows the first `?` of the target, without it; `nil` if there is no `?`.
    public var query: String?
    /// The protocol version: `HTTP/1.0` or `HTTP/1.1`.
    public var version: HTTPVersion
    /// The header fields in order, values without surrounding whitespace. Repeated
    /// identical `Content-Length` values are folded into one field holding the decimal
    /// length. Value bytes 0x80–0xFF are decoded as UTF-8, invalid sequences as U+FFFD.
    public var headers: HTTPHeaders
    /// How the body is delimited.
    public var framing: BodyFraming

    /// Creates a request head.
    public init(
        method: HTTPMethod,
        target: String,
        path: String,
        query: String? = nil,
        version: HTTPVersion = .http1_1,
        headers: HTTPHeaders = HTTPHeaders(),
        framing: BodyFraming = .none
    ) {
        self.method = method
        self.target = target
        self.path = path
        self.query = query
        self.version = version
        self.headers = headers
        self.framing = framing
    }

    /// Whether the client wants the connection kept open after this request.
    ///
    /// HTTP/1.1 keeps it open unless `Connection` has the token `close`; HTTP/1.0 keeps it
    /// open only if `Connection` has `keep-alive` and not `close`.
    public var keepAlive: Bool {
        if headers.hasToken("connection", "close") { return false }
        if version.major > 1 || (version.major == 1 && version.minor >= 1) { return true }
        return headers.hasToken("connection", "keep-alive")
    }

    /// Whether the client waits for `100 Continue` before sending the body: `Expect` has
    /// `100-continue` (any case) in an HTTP/1.1 request. HTTP/1.0 expectations are ignored
    /// (RFC 9110 §10.1.1).
    public var expectsContinue: Bool {
        version == .http1_1 && headers.hasToken("expect", "100-continue")
    }
}

extension RequestHead {
    /// Stands in for a request whose head never arrived, so a refusal can be framed.
    public static var placeholder: RequestHead {
        RequestHead(
            method: .GET, target: "/", path: "/", query: nil, version: .http1_1,
            headers: HTTPHeaders(), framing: .none
        )
    }
}
