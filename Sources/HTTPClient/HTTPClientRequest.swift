/// A request to send upstream.
package struct HTTPClientRequest: Sendable {
    /// `GET`, `POST`, ...
    package var method: String
    /// An absolute `http://` or `https://` URL.
    package var url: String
    /// Header fields, sent in order.
    package var headers: [(name: String, value: String)]
    /// The body, sent with `Content-Length`.
    package var body: [UInt8]?
    /// The total time allowed for this request; nil for the client's default.
    package var timeout: Duration?
    /// The time allowed to connect; nil for the client's default.
    package var connectTimeout: Duration?
    /// The time allowed from the start until the response head has arrived; past it the
    /// request fails with ``HTTPClientError/Kind/timedOut``. Nil: only `timeout` applies.
    package var headTimeout: Duration?
    /// A PEM bundle of the CA certificates an https upstream's certificate must chain to,
    /// instead of the system's store (a private CA). Certificates and host names are always
    /// verified; there is no way to turn that off.
    package var caFile: String?

    package init(
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
package struct HTTPClientResponseHead: Sendable {
    /// The HTTP version a response came in (`1.1`, `2`), from its status line.
    package struct Version: Hashable, Sendable, CustomStringConvertible {
        package var major: Int
        package var minor: Int

        package init(major: Int, minor: Int) {
            self.major = major
            self.minor = minor
        }

        package static let http1_0 = Version(major: 1, minor: 0)
        package static let http1_1 = Version(major: 1, minor: 1)
        package static let http2 = Version(major: 2, minor: 0)

        package var description: String { major >= 2 && minor == 0 ? "\(major)" : "\(major).\(minor)" }
    }

    package var status: Int
    /// The version the upstream answered in: `.http2` when the connection multiplexes.
    package var httpVersion: Version
    var fields: ResponseFields

    package init(status: Int, headers: [(name: String, value: String)], httpVersion: Version = .http1_1) {
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
    package var headers: [(name: String, value: String)] {
        get { fields.fields }
        set { fields = ResponseFields(newValue) }
    }

    /// The first value of the header named `name`, compared ignoring ASCII case.
    package func header(_ name: String) -> String? {
        fields.value(of: name)
    }
}

/// A complete response.
package struct HTTPClientResponse: Sendable {
    package var head: HTTPClientResponseHead
    package var body: [UInt8]

    package init(head: HTTPClientResponseHead, body: [UInt8]) {
        self.head = head
        self.body = body
    }

    package var status: Int { head.status }
    package func header(_ name: String) -> String? { head.header(name) }
}
