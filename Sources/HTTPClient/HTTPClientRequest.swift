/// A request to send upstream.
public struct HTTPClientRequest: Sendable {
    /// `GET`, `POST`, ...
    public var method: String
    /// An absolute `http://` or `https://` URL.
    public var url: String
    /// Header fields, sent in order.
    public var headers: [(name: String, value: String)]
    /// The body, sent with `Content-Length`.
    public var body: [UInt8]?
    /// The total time allowed for this request; nil for the client's default.
    public var timeout: Duration?
    /// The time allowed to connect; nil for the client's default.
    public var connectTimeout: Duration?

    public init(
        method: String = "GET",
        url: String,
        headers: [(name: String, value: String)] = [],
        body: [UInt8]? = nil,
        timeout: Duration? = nil,
        connectTimeout: Duration? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.connectTimeout = connectTimeout
    }
}

/// The status line and header fields of a response. The fields are kept as received and
/// decoded when asked for.
public struct HTTPClientResponseHead: Sendable {
    public var status: Int
    var fields: ResponseFields

    public init(status: Int, headers: [(name: String, value: String)]) {
        self.status = status
        fields = ResponseFields(headers)
    }

    init(status: Int, fields: ResponseFields) {
        self.status = status
        self.fields = fields
    }

    /// Header fields in the order received, names as sent.
    public var headers: [(name: String, value: String)] {
        get { fields.fields }
        set { fields = ResponseFields(newValue) }
    }

    /// The first value of the header named `name`, compared ignoring ASCII case.
    public func header(_ name: String) -> String? {
        fields.value(of: name)
    }
}

/// A complete response.
public struct HTTPClientResponse: Sendable {
    public var head: HTTPClientResponseHead
    public var body: [UInt8]

    public init(head: HTTPClientResponseHead, body: [UInt8]) {
        self.head = head
        self.body = body
    }

    public var status: Int { head.status }
    public func header(_ name: String) -> String? { head.header(name) }
}
