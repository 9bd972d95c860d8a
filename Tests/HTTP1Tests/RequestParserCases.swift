import Testing

@testable import HTTP1

/// A request stream the parser must accept, with the heads and bodies it must produce.
struct ValidCase: Sendable, CustomTestStringConvertible {
    var name: String
    var bytes: [UInt8]
    var heads: [RequestHead]
    var bodies: [[UInt8]]
    var limits = RequestParser.Limits()

    var testDescription: String { name }
}

/// A request stream the parser must reject, with the error, its status, and how many
/// events (heads, merged bodies, ends) come before the error.
struct ErrorCase: Sendable, CustomTestStringConvertible {
    var name: String
    var bytes: [UInt8]
    var error: HTTPParseError
    var status: Int
    var eventsBeforeError = 0
    var limits = RequestParser.Limits()

    var testDescription: String { "\(name) → \(status)" }
}

private func head(
    _ method: HTTPMethod = .GET,
    _ target: String = "/",
    path: String? = nil,
    query: String? = nil,
    version: HTTPVersion = .http1_1,
    _ headers: [(String, String)] = [("Host", "example.com")],
    framing: BodyFraming = .none
) -> RequestHead {
    RequestHead(
        method: method,
        target: target,
        path: path ?? target,
        query: query,
        version: version,
        headers: HTTPHeaders(headers.map { (name: $0.0, value: $0.1) }),
        framing: framing
    )
}

private let host = "Host: example.com\r\n"

/// Small limits, so that the limit cases stay small enough to split at every byte.
let smallLimits = RequestParser.Limits(maxRequestLineBytes: 32, maxHeaderBytes: 64, maxHeaderCount: 3, maxBodyBytes: 10)

enum RequestParserCases {
    static let valid: [ValidCase] = [
        ValidCase(
            name: "simple GET",
            bytes: Array(raw: "GET /api/health HTTP/1.1\r\n\(host)\r\n"),
            heads: [head(.GET, "/api/health")],
            bodies: [[]]
        ),
        ValidCase(
            name: "query split from the path",
            bytes: Array(raw: "GET /v1/tasks?dry=1&x=%20 HTTP/1.1\r\n\(host)\r\n"),
            heads: [head(.GET, "/v1/tasks?dry=1&x=%20", path: "/v1/tasks", query: "dry=1&x=%20")],
            bodies: [[]]
        ),
        ValidCase(
            name: "empty query is not nil",
            bytes: Array(raw: "GET /x? HTTP/1.1\r\n\(host)\r\n"),
            heads: [head(.GET, "/x?", path: "/x", query: "")],
            bodies: [[]]
        ),
        ValidCase(
            name: "HTTP/1.0 without Host",
            bytes: Array(raw: "GET / HTTP/1.0\r\n\r\n"),
            heads: [head(.GET, "/", version: .http1_0, [])],
            bodies: [[]]
        ),
        ValidCase(
            name: "leading empty lines are skipped",
            bytes: Array(raw: "\r\n\r\nGET / HTTP/1.1\r\n\(host)\r\n"),
            heads: [head()],
            bodies: [[]]
        ),
        ValidCase(
            name: "OPTIONS asterisk-form",
            bytes: Array(raw: "OPTIONS * HTTP/1.1\r\n\(host)\r\n"),
            heads: [head(.OPTIONS, "*")],
            bodies: [[]]
        ),
        ValidCase(
            name: "absolute-form reduced to path and query",
            bytes: Array(raw: "GET http://example.com/x?y HTTP/1.1\r\n\(host)\r\n"),
            heads: [head(.GET, "http://example.com/x?y", path: "/x", query: "y")],
            bodies: [[]]
        ),
        ValidCase(
            name: "absolute-form, https, any case, empty path",
            bytes: Array(raw: "GET HTTPS://Example.COM:8443 HTTP/1.1\r\n\(host)\r\n"),
            heads: [head(.GET, "HTTPS://Example.COM:8443", path: "/")],
            bodies: [[]]
        ),
        ValidCase(
            name: "absolute-form, IPv6 literal, query without path",
            bytes: Array(raw: "GET http://[::1]:8080?q=1 HTTP/1.1\r\n\(host)\r\n"),
            heads: [head(.GET, "http://[::1]:8080?q=1", path: "/", query: "q=1")],
            bodies: [[]]
        ),
        ValidCase(
            name: "values trimmed, name case kept, empty value, inner tab",
            bytes: Array(
                raw: "GET / HTTP/1.1\r\n\(host)content-TYPE: \t text/plain \t\r\nX-Empty:\r\nX-Tab: a\tb\r\n"
                    + "\r\n"),
            heads: [
                head(
                    .GET, "/",
                    [
                        ("Host", "example.com"), ("content-TYPE", "text/plain"), ("X-Empty", ""), ("X-Tab", "a\tb"),
                    ])
            ],
            bodies: [[]]
        ),
        ValidCase(
            name: "obs-text in a value is allowed (decoded as UTF-8)",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)X-Name: caf") + [0xC3, 0xA9] + Array(raw: "\r\n\r\n"),
            heads: [head(.GET, "/", [("Host", "example.com"), ("X-Name", "café")])],
            bodies: [[]]
        ),
        ValidCase(
            name: "custom and lower-case methods are tokens",
            bytes: Array(raw: "PURGE / HTTP/1.1\r\n\(host)\r\nget / HTTP/1.1\r\n\(host)\r\n"),
            heads: [head(HTTPMethod("PURGE")), head(HTTPMethod("get"))],
            bodies: [[], []]
        ),
        ValidCase(
            name: "empty Host is allowed",
            bytes: Array(raw: "GET / HTTP/1.1\r\nHost:\r\n\r\n"),
            heads: [head(.GET, "/", [("Host", "")])],
            bodies: [[]]
        ),
        ValidCase(
            name: "POST with Content-Length body",
            bytes: Array(raw: "POST /v1/tasks HTTP/1.1\r\n\(host)Content-Length: 5\r\n\r\nhello"),
            heads: [
                head(
                    .POST, "/v1/tasks", [("Host", "example.com"), ("Content-Length", "5")], framing: .contentLength(5)
                )
            ],
            bodies: [Array(raw: "hello")]
        ),
        ValidCase(
            name: "Content-Length 0",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 0\r\n\r\n"),
            heads: [head(.POST, "/", [("Host", "example.com"), ("Content-Length", "0")], framing: .contentLength(0))],
            bodies: [[]]
        ),
        ValidCase(
            name: "duplicate identical Content-Length folded",
            bytes: Array(raw: "POST / HTTP/1.1\r\ncontent-length: 3\r\n\(host)Content-Length: 3\r\n\r\nabc"),
            heads: [head(.POST, "/", [("content-length", "3"), ("Host", "example.com")], framing: .contentLength(3))],
            bodies: [Array(raw: "abc")]
        ),
        ValidCase(
            name: "Content-Length list of one value folded",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 3 ,3,\t3\r\n\r\nabc"),
            heads: [head(.POST, "/", [("Host", "example.com"), ("Content-Length", "3")], framing: .contentLength(3))],
            bodies: [Array(raw: "abc")]
        ),
        ValidCase(
            name: "Content-Length with leading zeros folded",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 003\r\n\r\nabc"),
            heads: [head(.POST, "/", [("Host", "example.com"), ("Content-Length", "3")], framing: .contentLength(3))],
            bodies: [Array(raw: "abc")]
        ),
        ValidCase(
            name: "HTTP/1.0 with Content-Length body",
            bytes: Array(raw: "POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\nok"),
            heads: [head(.POST, "/", version: .http1_0, [("Content-Length", "2")], framing: .contentLength(2))],
            bodies: [Array(raw: "ok")]
        ),
        ValidCase(
            name: "chunked body",
            bytes: Array(
                raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n"
                    + " world\r\n0\r\n\r\n"),
            heads: [
                head(.POST, "/", [("Host", "example.com"), ("Transfer-Encoding", "chunked")], framing: .chunked)
            ],
            bodies: [Array(raw: "hello world")]
        ),
        ValidCase(
            name: "chunked in any case, upper-case hex, leading zeros, 16 digits",
            bytes: Array(
                raw: "POST / HTTP/1.1\r\n\(host)transfer-encoding:  Chunked \r\n\r\n00A\r\n0123456789\r\n"
                    + "000000000000000B\r\nabcdefghijk\r\n0\r\n\r\n"),
            heads: [
                head(.POST, "/", [("Host", "example.com"), ("transfer-encoding", "Chunked")], framing: .chunked)
            ],
            bodies: [Array(raw: "0123456789abcdefghijk")]
        ),
        ValidCase(
            name: "chunk extensions and trailers are skipped",
            bytes: Array(
                raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n"
                    + "3;name=value;flag\r\nabc\r\n"
                    + "2 ; q=\"a \\\" ;b\" ; x = y\r\nde\r\n"
                    + "0;last\r\nX-Checksum: 42\r\nX-Other: \t1\r\n\r\n"),
            heads: [
                head(.POST, "/", [("Host", "example.com"), ("Transfer-Encoding", "chunked")], framing: .chunked)
            ],
            bodies: [Array(raw: "abcde")]
        ),
        ValidCase(
            name: "chunked with no data",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            heads: [
                head(.POST, "/", [("Host", "example.com"), ("Transfer-Encoding", "chunked")], framing: .chunked)
            ],
            bodies: [[]]
        ),
        ValidCase(
            name: "pipelined GET, Content-Length POST, chunked POST, extra CRLF between",
            bytes: Array(
                raw: "GET /a HTTP/1.1\r\n\(host)\r\n"
                    + "POST /b HTTP/1.1\r\n\(host)Content-Length: 4\r\n\r\nGET \r\n"
                    + "PUT /c HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n4\r\nGET \r\n0\r\n\r\n"
                    + "HEAD /d?e HTTP/1.0\r\n\r\n"),
            heads: [
                head(.GET, "/a"),
                head(.POST, "/b", [("Host", "example.com"), ("Content-Length", "4")], framing: .contentLength(4)),
                head(.PUT, "/c", [("Host", "example.com"), ("Transfer-Encoding", "chunked")], framing: .chunked),
                head(.HEAD, "/d?e", path: "/d", query: "e", version: .http1_0, []),
            ],
            bodies: [[], Array(raw: "GET "), Array(raw: "GET "), []]
        ),
        ValidCase(
            name: "limits reached exactly",
            bytes: Array(
                raw: "GET /\(String(repeating: "a", count: 18)) HTTP/1.1\r\n"
                    + "Host: h\r\nX: \(String(repeating: "b", count: 42))\r\nY: 1\r\n\r\n"
                    + "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789"
                    + "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "5\r\n01234\r\n5\r\n56789\r\n0\r\n"
                    + "\r\n"),
            heads: [
                head(
                    .GET, "/" + String(repeating: "a", count: 18),
                    [
                        ("Host", "h"), ("X", String(repeating: "b", count: 42)), ("Y", "1"),
                    ]),
                head(.POST, "/", [("Host", "h"), ("Content-Length", "10")], framing: .contentLength(10)),
                head(.POST, "/", [("Host", "h"), ("Transfer-Encoding", "chunked")], framing: .chunked),
            ],
            bodies: [[], Array(raw: "0123456789"), Array(raw: "0123456789")],
            limits: smallLimits
        ),
    ]

    static let errors: [ErrorCase] = [
        // Request line.
        ErrorCase(
            name: "double space",
            bytes: Array(raw: "GET  / HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidRequestLine, status: 400
        ),
        ErrorCase(
            name: "leading space",
            bytes: Array(raw: " GET / HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidRequestLine, status: 400
        ),
        ErrorCase(
            name: "trailing space",
            bytes: Array(raw: "GET / HTTP/1.1 \r\n\(host)\r\n"),
            error: .invalidRequestLine, status: 400
        ),
        ErrorCase(
            name: "tab separator",
            bytes: Array(raw: "GET\t/ HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidRequestLine, status: 400
        ),
        ErrorCase(
            name: "no version",
            bytes: Array(raw: "GET /\r\n\(host)\r\n"),
            error: .invalidRequestLine, status: 400
        ),
        ErrorCase(name: "HTTP/0.9 style", bytes: Array(raw: "GET / \r\n"), error: .invalidRequestLine, status: 400),
        ErrorCase(
            name: "method not a token",
            bytes: Array(raw: "GE(T / HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidMethod, status: 400
        ),
        ErrorCase(
            name: "non-ASCII method",
            bytes: [0xC3, 0x89] + Array(raw: " / HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidMethod, status: 400
        ),
        ErrorCase(
            name: "HTTP/2.0",
            bytes: Array(raw: "GET / HTTP/2.0\r\n\(host)\r\n"),
            error: .unsupportedVersion, status: 505
        ),
        ErrorCase(
            name: "HTTP/1.2",
            bytes: Array(raw: "GET / HTTP/1.2\r\n\(host)\r\n"),
            error: .unsupportedVersion, status: 505
        ),
        ErrorCase(
            name: "HTTP/0.9",
            bytes: Array(raw: "GET / HTTP/0.9\r\n\(host)\r\n"),
            error: .unsupportedVersion, status: 505
        ),
        ErrorCase(
            name: "HTTP/1.1x",
            bytes: Array(raw: "GET / HTTP/1.1x\r\n\(host)\r\n"),
            error: .invalidRequestLine, status: 400
        ),
        ErrorCase(
            name: "lower-case http/1.1",
            bytes: Array(raw: "GET / http/1.1\r\n\(host)\r\n"),
            error: .invalidRequestLine, status: 400
        ),
        ErrorCase(
            name: "HTTP/11.1",
            bytes: Array(raw: "GET / HTTP/11.1\r\n\(host)\r\n"),
            error: .invalidRequestLine, status: 400
        ),
        ErrorCase(
            name: "HTTP/1",
            bytes: Array(raw: "GET / HTTP/1\r\n\(host)\r\n"),
            error: .invalidRequestLine, status: 400
        ),
        ErrorCase(
            name: "asterisk with GET",
            bytes: Array(raw: "GET * HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidTarget, status: 400
        ),
        ErrorCase(
            name: "fragment in target",
            bytes: Array(raw: "GET /a#b HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidTarget, status: 400
        ),
        ErrorCase(
            name: "non-ASCII in target",
            bytes: Array(raw: "GET /caf") + [0xC3, 0xA9] + Array(raw: " HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidTarget, status: 400
        ),
        ErrorCase(
            name: "control byte in target",
            bytes: Array(raw: "GET /a\u{1}b HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidTarget, status: 400
        ),
        ErrorCase(
            name: "NUL in target",
            bytes: Array(raw: "GET /a\u{0} HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidTarget, status: 400
        ),
        ErrorCase(
            name: "relative target",
            bytes: Array(raw: "GET a/b HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidTarget, status: 400
        ),
        ErrorCase(
            name: "absolute-form with empty host",
            bytes: Array(raw: "GET http:///x HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidTarget, status: 400
        ),
        ErrorCase(
            name: "absolute-form with userinfo",
            bytes: Array(raw: "GET http://u@h/x HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidTarget, status: 400
        ),
        ErrorCase(
            name: "absolute-form with another scheme",
            bytes: Array(raw: "GET ftp://h/x HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidTarget, status: 400
        ),
        ErrorCase(
            name: "CONNECT authority-form",
            bytes: Array(raw: "CONNECT example.com:443 HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidTarget, status: 400
        ),
        ErrorCase(
            name: "CONNECT origin-form",
            bytes: Array(raw: "CONNECT / HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidTarget, status: 400
        ),
        ErrorCase(
            name: "too many leading empty lines",
            bytes: Array(raw: String(repeating: "\r\n", count: 9) + "GET / HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidRequestLine, status: 400
        ),
        ErrorCase(
            name: "request line over the limit",
            bytes: Array(raw: "GET /\(String(repeating: "a", count: 19)) HTTP/1.1\r\n\(host)\r\n"),
            error: .requestLineTooLong, status: 414, limits: smallLimits
        ),
        ErrorCase(
            name: "request line over the limit, no CRLF yet",
            bytes: Array(raw: "GET /\(String(repeating: "a", count: 40))"),
            error: .requestLineTooLong, status: 414, limits: smallLimits
        ),
        ErrorCase(
            name: "request line over 8 KiB",
            bytes: Array(raw: "GET /\(String(repeating: "a", count: 8192)) HTTP/1.1\r\n\(host)\r\n"),
            error: .requestLineTooLong, status: 414
        ),

        // Line endings.
        ErrorCase(
            name: "bare CR in request line",
            bytes: Array(raw: "GET /\r HTTP/1.1\r\n\(host)\r\n"),
            error: .bareCarriageReturn, status: 400
        ),
        ErrorCase(
            name: "bare CR in a value",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)X-A: a\rb\r\n\r\n"),
            error: .bareCarriageReturn, status: 400
        ),
        ErrorCase(
            name: "bare CR ending a field line",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)X-A: a\rX-B: b\r\n\r\n"),
            error: .bareCarriageReturn, status: 400
        ),
        ErrorCase(
            name: "bare LF after request line",
            bytes: Array(raw: "GET / HTTP/1.1\n\(host)\r\n"),
            error: .bareLineFeed, status: 400
        ),
        ErrorCase(
            name: "bare LF after a field",
            bytes: Array(raw: "GET / HTTP/1.1\r\nHost: example.com\n\r\n"),
            error: .bareLineFeed, status: 400
        ),
        ErrorCase(
            name: "bare LF ending the section",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)\n"),
            error: .bareLineFeed, status: 400
        ),
        ErrorCase(
            name: "bare LF empty line before request",
            bytes: Array(raw: "\nGET / HTTP/1.1\r\n\(host)\r\n"),
            error: .bareLineFeed, status: 400
        ),

        // Field lines.
        ErrorCase(
            name: "obs-fold",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)X-A: a\r\n b\r\n\r\n"),
            error: .obsoleteLineFolding, status: 400
        ),
        ErrorCase(
            name: "obs-fold with tab",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)X-A: a\r\n\tb\r\n\r\n"),
            error: .obsoleteLineFolding, status: 400
        ),
        ErrorCase(
            name: "whitespace after request line",
            bytes: Array(raw: "GET / HTTP/1.1\r\n \(host)\r\n"),
            error: .obsoleteLineFolding, status: 400
        ),
        ErrorCase(
            name: "space before colon",
            bytes: Array(raw: "GET / HTTP/1.1\r\nHost : example.com\r\n\r\n"),
            error: .whitespaceBeforeColon, status: 400
        ),
        ErrorCase(
            name: "tab before colon in Content-Length",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length\t: 1\r\n\r\nx"),
            error: .whitespaceBeforeColon, status: 400
        ),
        ErrorCase(
            name: "space inside a name",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)X A: b\r\n\r\n"),
            error: .invalidHeaderName, status: 400
        ),
        ErrorCase(
            name: "non-token in a name",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)X(A): b\r\n\r\n"),
            error: .invalidHeaderName, status: 400
        ),
        ErrorCase(
            name: "non-ASCII in a name",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)X") + [0xC3, 0xA9] + Array(raw: ": b\r\n\r\n"),
            error: .invalidHeaderName, status: 400
        ),
        ErrorCase(
            name: "empty name",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host): b\r\n\r\n"),
            error: .invalidHeaderName, status: 400
        ),
        ErrorCase(
            name: "no colon",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)X-A\r\n\r\n"),
            error: .invalidHeaderName, status: 400
        ),
        ErrorCase(
            name: "NUL in a value",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)X-A: a\u{0}b\r\n\r\n"),
            error: .invalidHeaderValue, status: 400
        ),
        ErrorCase(
            name: "control byte in a value",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)X-A: a\u{1}b\r\n\r\n"),
            error: .invalidHeaderValue, status: 400
        ),
        ErrorCase(
            name: "DEL in a value",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)X-A: a\u{7F}b\r\n\r\n"),
            error: .invalidHeaderValue, status: 400
        ),
        ErrorCase(
            name: "101 headers",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)" + (1...100).map { "X-\($0): v\r\n" }.joined() + "\r\n"),
            error: .tooManyHeaders, status: 431
        ),
        ErrorCase(
            name: "header section over 32 KiB",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)X-Big: \(String(repeating: "b", count: 32768))\r\n\r\n"),
            error: .headerSectionTooLarge, status: 431
        ),
        ErrorCase(
            name: "4 headers over a limit of 3",
            bytes: Array(raw: "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"),
            error: .tooManyHeaders, status: 431, limits: smallLimits
        ),
        ErrorCase(
            name: "header section one byte over the limit",
            bytes: Array(raw: "GET / HTTP/1.1\r\nHost: h\r\nX: \(String(repeating: "b", count: 49))\r\n\r\n"),
            error: .headerSectionTooLarge, status: 431, limits: smallLimits
        ),
        ErrorCase(
            name: "header section over the limit, no CRLF yet",
            bytes: Array(raw: "GET / HTTP/1.1\r\nHost: h\r\nX: \(String(repeating: "b", count: 60))"),
            error: .headerSectionTooLarge, status: 431, limits: smallLimits
        ),

        // Host.
        ErrorCase(
            name: "missing Host",
            bytes: Array(raw: "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n"),
            error: .missingHost, status: 400
        ),
        ErrorCase(
            name: "two Hosts",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)host: other.example\r\n\r\n"),
            error: .duplicateHost, status: 400
        ),
        ErrorCase(
            name: "two identical Hosts",
            bytes: Array(raw: "GET / HTTP/1.1\r\n\(host)\(host)\r\n"),
            error: .duplicateHost, status: 400
        ),
        ErrorCase(
            name: "two Hosts in HTTP/1.0",
            bytes: Array(raw: "GET / HTTP/1.0\r\n\(host)\(host)\r\n"),
            error: .duplicateHost, status: 400
        ),
        ErrorCase(
            name: "Host with a space",
            bytes: Array(raw: "GET / HTTP/1.1\r\nHost: a b\r\n\r\n"),
            error: .invalidHost, status: 400
        ),
        ErrorCase(
            name: "Host with userinfo",
            bytes: Array(raw: "GET / HTTP/1.1\r\nHost: user@h\r\n\r\n"),
            error: .invalidHost, status: 400
        ),
        ErrorCase(
            name: "Host with a slash",
            bytes: Array(raw: "GET / HTTP/1.1\r\nHost: h/x\r\n\r\n"),
            error: .invalidHost, status: 400
        ),

        // Content-Length.
        ErrorCase(
            name: "Content-Length: +1",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: +1\r\n\r\nx"),
            error: .invalidContentLength, status: 400
        ),
        ErrorCase(
            name: "Content-Length: -1",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: -1\r\n\r\nx"),
            error: .invalidContentLength, status: 400
        ),
        ErrorCase(
            name: "Content-Length: 1e3",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 1e3\r\n\r\nx"),
            error: .invalidContentLength, status: 400
        ),
        ErrorCase(
            name: "Content-Length:  1 2",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length:  1 2\r\n\r\nx"),
            error: .invalidContentLength, status: 400
        ),
        ErrorCase(
            name: "Content-Length: 0x10",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 0x10\r\n\r\nx"),
            error: .invalidContentLength, status: 400
        ),
        ErrorCase(
            name: "Content-Length: 1.0",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 1.0\r\n\r\nx"),
            error: .invalidContentLength, status: 400
        ),
        ErrorCase(
            name: "Content-Length overflowing",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 99999999999999999999\r\n\r\nx"),
            error: .invalidContentLength, status: 400
        ),
        ErrorCase(
            name: "Content-Length with 19 digits",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 0000000000000000001\r\n\r\nx"),
            error: .invalidContentLength, status: 400
        ),
        ErrorCase(
            name: "Content-Length empty",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: \r\n\r\n"),
            error: .invalidContentLength, status: 400
        ),
        ErrorCase(
            name: "Content-Length list with an empty element",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 1,\r\n\r\nx"),
            error: .invalidContentLength, status: 400
        ),
        ErrorCase(
            name: "conflicting Content-Length fields",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 1\r\nContent-Length: 2\r\n\r\nxy"),
            error: .conflictingContentLength, status: 400
        ),
        ErrorCase(
            name: "conflicting Content-Length list",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 1, 2\r\n\r\nxy"),
            error: .conflictingContentLength, status: 400
        ),
        ErrorCase(
            name: "Content-Length over the body limit: head, then 413",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 1048577\r\n\r\nxyz"),
            error: .bodyTooLarge, status: 413, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "Content-Length 11 over a limit of 10",
            bytes: Array(raw: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n"),
            error: .bodyTooLarge, status: 413, eventsBeforeError: 1, limits: smallLimits
        ),

        // Transfer-Encoding.
        ErrorCase(
            name: "Content-Length with Transfer-Encoding",
            bytes: Array(
                raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
                    + "\r\n"),
            error: .contentLengthWithTransferEncoding, status: 400
        ),
        ErrorCase(
            name: "Transfer-Encoding with Content-Length",
            bytes: Array(
                raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n"
                    + "\r\n"),
            error: .contentLengthWithTransferEncoding, status: 400
        ),
        ErrorCase(
            name: "unsupported Transfer-Encoding with Content-Length",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\nhello"),
            error: .contentLengthWithTransferEncoding, status: 400
        ),
        ErrorCase(
            name: "Transfer-Encoding in HTTP/1.0",
            bytes: Array(raw: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            error: .transferEncodingInHTTP10, status: 400
        ),
        ErrorCase(
            name: "chunked, identity",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n"),
            error: .unsupportedTransferEncoding, status: 501
        ),
        ErrorCase(
            name: "identity",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: identity\r\n\r\n"),
            error: .unsupportedTransferEncoding, status: 501
        ),
        ErrorCase(
            name: "gzip, chunked",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
            error: .unsupportedTransferEncoding, status: 501
        ),
        ErrorCase(
            name: "xchunked",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n"),
            error: .unsupportedTransferEncoding, status: 501
        ),
        ErrorCase(
            name: "chunked with a trailing comma",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked,\r\n\r\n0\r\n\r\n"),
            error: .unsupportedTransferEncoding, status: 501
        ),
        ErrorCase(
            name: "chunked with a parameter",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked;q=1\r\n\r\n0\r\n\r\n"),
            error: .unsupportedTransferEncoding, status: 501
        ),
        ErrorCase(
            name: "chunked in two fields",
            bytes: Array(
                raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"
                    + "\r\n0\r\n\r\n"),
            error: .unsupportedTransferEncoding, status: 501
        ),
        ErrorCase(
            name: "chunked and identity in two fields",
            bytes: Array(
                raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n"
                    + "Transfer-Encoding: identity\r\n\r\n0\r\n\r\n"),
            error: .unsupportedTransferEncoding, status: 501
        ),
        ErrorCase(
            name: "empty Transfer-Encoding",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding:\r\n\r\n"),
            error: .unsupportedTransferEncoding, status: 501
        ),

        // Chunked framing.
        ErrorCase(
            name: "chunk size -1",
            bytes: chunked("-1\r\nx\r\n0\r\n\r\n"),
            error: .invalidChunkSize, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "chunk size 0x1",
            bytes: chunked("0x1\r\nx\r\n0\r\n\r\n"),
            error: .invalidChunkSize, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "chunk size g",
            bytes: chunked("g\r\nx\r\n0\r\n\r\n"),
            error: .invalidChunkSize, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "empty chunk size",
            bytes: chunked("\r\nx\r\n0\r\n\r\n"),
            error: .invalidChunkSize, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "chunk size with 17 hex digits",
            bytes: chunked("00000000000000001\r\nx\r\n0\r\n\r\n"),
            error: .invalidChunkSize, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "chunk size overflowing Int",
            bytes: chunked("FFFFFFFFFFFFFFFF\r\nx\r\n0\r\n\r\n"),
            error: .invalidChunkSize, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "chunk size with trailing space",
            bytes: chunked("1 \r\nx\r\n0\r\n\r\n"),
            error: .invalidChunkSize, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "chunk size with leading space",
            bytes: chunked(" 1\r\nx\r\n0\r\n\r\n"),
            error: .invalidChunkSize, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "empty chunk extension",
            bytes: chunked("1;\r\nx\r\n0\r\n\r\n"),
            error: .invalidChunkFraming, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "chunk extension without a value",
            bytes: chunked("1;a=\r\nx\r\n0\r\n\r\n"),
            error: .invalidChunkFraming, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "unterminated quoted chunk extension",
            bytes: chunked("1;a=\"x\r\nx\r\n0\r\n\r\n"),
            error: .invalidChunkFraming, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "chunk extension over 4 KiB",
            bytes: chunked("1;a=\(String(repeating: "b", count: 4096))\r\nx\r\n0\r\n\r\n"),
            error: .invalidChunkFraming, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "bare LF after chunk size",
            bytes: chunked("1\nx\r\n0\r\n\r\n"),
            error: .bareLineFeed, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "bare CR in chunk size line",
            bytes: chunked("1;a\rb\r\nx\r\n0\r\n\r\n"),
            error: .bareCarriageReturn, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "chunk data longer than its size",
            bytes: chunked("5\r\nhelloX\r\n0\r\n\r\n"),
            error: .invalidChunkFraming, status: 400, eventsBeforeError: 2
        ),
        ErrorCase(
            name: "chunk data followed by CR only",
            bytes: chunked("5\r\nhello\rX\r\n0\r\n\r\n"),
            error: .invalidChunkFraming, status: 400, eventsBeforeError: 2
        ),
        ErrorCase(
            name: "chunk data followed by LF only",
            bytes: chunked("5\r\nhello\n0\r\n\r\n"),
            error: .invalidChunkFraming, status: 400, eventsBeforeError: 2
        ),
        ErrorCase(
            name: "chunked body over the limit",
            bytes: Array(
                raw: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nB\r\n0123456789a\r\n"
                    + "0\r\n\r\n"),
            error: .bodyTooLarge, status: 413, eventsBeforeError: 1, limits: smallLimits
        ),
        ErrorCase(
            name: "chunked body over the limit in the second chunk",
            bytes: Array(
                raw: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n012345\r\n5\r\n"
                    + "6789a\r\n0\r\n\r\n"),
            error: .bodyTooLarge, status: 413, eventsBeforeError: 2, limits: smallLimits
        ),
        ErrorCase(
            name: "huge chunk size over the limit",
            bytes: chunked("7FFFFFFFFFFFFFFF\r\nx"),
            error: .bodyTooLarge, status: 413, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "obs-fold in trailers",
            bytes: chunked("0\r\nX-A: a\r\n b\r\n\r\n"),
            error: .obsoleteLineFolding, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "bad trailer name",
            bytes: chunked("0\r\nX A: a\r\n\r\n"),
            error: .invalidHeaderName, status: 400, eventsBeforeError: 1
        ),
        ErrorCase(
            name: "trailer section over the limit",
            bytes: Array(
                raw: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
                    + "X: \(String(repeating: "t", count: 60))\r\n\r\n"),
            error: .headerSectionTooLarge, status: 431, eventsBeforeError: 1, limits: smallLimits
        ),
        ErrorCase(
            name: "too many trailers",
            bytes: Array(
                raw: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\nB: 2\r\n"
                    + "C: 3\r\nD: 4\r\n\r\n"),
            error: .tooManyHeaders, status: 431, eventsBeforeError: 1, limits: smallLimits
        ),

        // Errors in a pipelined second request come after the first request's events.
        ErrorCase(
            name: "smuggled second request with CL and TE",
            bytes: Array(
                raw: "GET / HTTP/1.1\r\n\(host)\r\nPOST / HTTP/1.1\r\n\(host)Content-Length: 4\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            error: .contentLengthWithTransferEncoding, status: 400, eventsBeforeError: 2
        ),
        ErrorCase(
            name: "body bytes of a Content-Length request do not start a request",
            bytes: Array(raw: "POST / HTTP/1.1\r\n\(host)Content-Length: 4\r\n\r\nGET / HTTP/1.1\r\n\(host)\r\n"),
            error: .invalidRequestLine, status: 400, eventsBeforeError: 3
        ),
    ]
}

/// A chunked POST head followed by `body`.
private func chunked(_ body: String) -> [UInt8] {
    Array(raw: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n\(body)")
}
