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
    /// The time allowed from the start until the response head has arrived; past it the
    /// request fails with ``HTTPClientError/Kind/timedOut``. Nil: only `timeout` applies.
    public var headTimeout: Duration?
    /// A PEM bundle of the CA certificates an https upstream's certificate must chain to,
    /// instead of the system's store (a private CA). Certificates and host names are always
    /// verified; there is no way to turn that off.
    public var caFile: String?

    public init(
        method: String = "GET",
        url: String,
        headers: [(name: String, value: String)] = [],
        body: [UInt8]? = nil,
        timeout: Duration? = nil,
        connectTimeout: Duration? = nil,
        headTimeout: Duration? = nil,
        caFile: String? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.headTimeout = headTimeout
        self.caFile = caFile
    }
}

/// The status line and header fields of a response. The fields are kept as received and
/// decoded when asked for.
public struct HTTPClientResponseHead: Sendable {
    /// The HTTP version a response came in (`1.1`, `2`), from its status line.
    public struct Version: Hashable, Sendable, CustomStringConvertible {
        public var major: Int
        public var minor: Int

        public init(major: Int, minor: Int) {
            self.major = major
            self.minor = minor
        }

        public static let http1_0 = Version(major: 1, minor: 0)
        public static let http1_1 = Version(major: 1, minor: 1)
        public static let http2 = Version(major: 2, minor: 0)

        public var description: String { major >= 2 && minor == 0 ? "\(major)" : "\(major).\(minor)" }
    }

    public var status: Int
    /// The version the upstream answered in: `.http2` when the connection multiplexes.
    public var httpVersion: Version
    var fields: ResponseFields

    public init(status: Int, headers: [(name: String, value: String)], httpVersion: Version = .http1_1) {
        self.status = status
        self.httpVersion = httpVersion
        fields = ResponseFields(headers)
    }

    init(status: Int, httpVersion: Version, fields: ResponseFields) {
        self.status = status
        self.httpVersion = httpVersion
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
