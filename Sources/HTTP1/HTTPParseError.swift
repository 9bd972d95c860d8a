/// Why a request could not be parsed, and the status to answer it with.
///
/// After any of these errors the connection's framing can no longer be trusted: the server
/// answers with ``status`` (and `Connection: close`) and closes the connection.
public struct HTTPParseError: Error, Hashable, Sendable, CustomStringConvertible {
    enum Code: Hashable, Sendable {
        case invalidRequestLine
        case invalidMethod
        case invalidTarget
        case unsupportedVersion
        case requestLineTooLong
        case bareLineFeed
        case bareCarriageReturn
        case invalidHeaderName
        case invalidHeaderValue
        case whitespaceBeforeColon
        case obsoleteLineFolding
        case headerSectionTooLarge
        case tooManyHeaders
        case missingHost
        case duplicateHost
        case invalidHost
        case invalidContentLength
        case conflictingContentLength
        case contentLengthWithTransferEncoding
        case transferEncodingInHTTP10
        case unsupportedTransferEncoding
        case invalidChunkSize
        case invalidChunkFraming
        case bodyTooLarge
    }

    let code: Code

    init(_ code: Code) {
        self.code = code
    }

    /// The request line is not `method SP request-target SP HTTP-version` with single spaces,
    /// or the version is not of the form `HTTP/x.y`, or it is preceded by too many empty lines.
    public static let invalidRequestLine = HTTPParseError(.invalidRequestLine)
    /// The method is not a token.
    public static let invalidMethod = HTTPParseError(.invalidMethod)
    /// The request-target has a forbidden byte or form, `*` came with a method other than
    /// `OPTIONS`, or the method is `CONNECT` (this server never tunnels).
    public static let invalidTarget = HTTPParseError(.invalidTarget)
    /// The version is a well-formed `HTTP/x.y` other than 1.0 and 1.1. Status 505.
    public static let unsupportedVersion = HTTPParseError(.unsupportedVersion)
    /// The request line is longer than the limit. Status 414.
    public static let requestLineTooLong = HTTPParseError(.requestLineTooLong)
    /// A line ended in LF without CR. This parser requires CRLF everywhere.
    public static let bareLineFeed = HTTPParseError(.bareLineFeed)
    /// A CR not followed by LF.
    public static let bareCarriageReturn = HTTPParseError(.bareCarriageReturn)
    /// A field line with no colon, or a name that is empty or not a token.
    public static let invalidHeaderName = HTTPParseError(.invalidHeaderName)
    /// A field value with NUL or another control character other than HTAB.
    public static let invalidHeaderValue = HTTPParseError(.invalidHeaderValue)
    /// Whitespace between a field name and its colon.
    public static let whitespaceBeforeColon = HTTPParseError(.whitespaceBeforeColon)
    /// A field line starting with whitespace (obs-fold, or whitespace after the request line).
    public static let obsoleteLineFolding = HTTPParseError(.obsoleteLineFolding)
    /// The header (or trailer) section is larger than the limit. Status 431.
    public static let headerSectionTooLarge = HTTPParseError(.headerSectionTooLarge)
    /// More header (or trailer) fields than the limit. Status 431.
    public static let tooManyHeaders = HTTPParseError(.tooManyHeaders)
    /// An HTTP/1.1 request without `Host`.
    public static let missingHost = HTTPParseError(.missingHost)
    /// More than one `Host` field.
    public static let duplicateHost = HTTPParseError(.duplicateHost)
    /// A `Host` value that is not `uri-host [":" port]`.
    public static let invalidHost = HTTPParseError(.invalidHost)
    /// A `Content-Length` that is not 1 to 18 decimal digits.
    public static let invalidContentLength = HTTPParseError(.invalidContentLength)
    /// Several `Content-Length` values that differ.
    public static let conflictingContentLength = HTTPParseError(.conflictingContentLength)
    /// Both `Content-Length` and `Transfer-Encoding`.
    public static let contentLengthWithTransferEncoding = HTTPParseError(.contentLengthWithTransferEncoding)
    /// `Transfer-Encoding` in an HTTP/1.0 request, whose framing is then faulty (RFC 9112 §6.1).
    public static let transferEncodingInHTTP10 = HTTPParseError(.transferEncodingInHTTP10)
    /// A `Transfer-Encoding` other than exactly `chunked`. Status 501.
    public static let unsupportedTransferEncoding = HTTPParseError(.unsupportedTransferEncoding)
    /// A chunk size that is not 1 to 16 hexadecimal digits.
    public static let invalidChunkSize = HTTPParseError(.invalidChunkSize)
    /// A malformed or oversized chunk extension, or chunk data not followed by CRLF.
    public static let invalidChunkFraming = HTTPParseError(.invalidChunkFraming)
    /// The body is larger than the limit. Status 413.
    public static let bodyTooLarge = HTTPParseError(.bodyTooLarge)

    /// The status to answer with: 400 unless the error says otherwise.
    public var status: HTTPStatus {
        switch code {
        case .unsupportedVersion: .httpVersionNotSupported
        case .requestLineTooLong: .uriTooLong
        case .headerSectionTooLarge, .tooManyHeaders: .requestHeaderFieldsTooLarge
        case .unsupportedTransferEncoding: .notImplemented
        case .bodyTooLarge: .contentTooLarge
        default: .badRequest
        }
    }

    /// A short reason, safe to log and to send: it never contains request bytes.
    public var description: String {
        switch code {
        case .invalidRequestLine: "invalid request line"
        case .invalidMethod: "invalid method"
        case .invalidTarget: "invalid request target"
        case .unsupportedVersion: "unsupported HTTP version"
        case .requestLineTooLong: "request line too long"
        case .bareLineFeed: "line not terminated by CRLF"
        case .bareCarriageReturn: "bare CR"
        case .invalidHeaderName: "invalid header field name"
        case .invalidHeaderValue: "invalid header field value"
        case .whitespaceBeforeColon: "whitespace before colon in header field"
        case .obsoleteLineFolding: "obsolete line folding"
        case .headerSectionTooLarge: "header section too large"
        case .tooManyHeaders: "too many header fields"
        case .missingHost: "missing Host"
        case .duplicateHost: "duplicate Host"
        case .invalidHost: "invalid Host"
        case .invalidContentLength: "invalid Content-Length"
        case .conflictingContentLength: "conflicting Content-Length values"
        case .contentLengthWithTransferEncoding: "Content-Length with Transfer-Encoding"
        case .transferEncodingInHTTP10: "Transfer-Encoding in an HTTP/1.0 request"
        case .unsupportedTransferEncoding: "unsupported Transfer-Encoding"
        case .invalidChunkSize: "invalid chunk size"
        case .invalidChunkFraming: "invalid chunked framing"
        case .bodyTooLarge: "body too large"
        }
    }
}
