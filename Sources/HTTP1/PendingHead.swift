/// A request head being collected field by field, validated as a whole when the header
/// section ends.
struct PendingHead: Sendable {
    private var requestLine: RequestLine?
    private var fields: [(name: String, value: String)] = []
    private var hostCount = 0
    private var contentLength: Int?
    private var contentLengthNeedsFolding = false
    private var transferEncodingCount = 0
    private var transferEncodingIsChunked = false

    init() {}

    init(requestLine: RequestLine) {
        self.requestLine = requestLine
        fields.reserveCapacity(16)
    }

    /// Adds a field, rejecting a second `Host` and `Content-Length` values that differ.
    mutating func add(_ field: HeaderField) throws(HTTPParseError) {
        switch field.kind {
        case .other:
            break
        case .host:
            hostCount += 1
            if hostCount > 1 { throw .duplicateHost }
        case .contentLength(let length, let canonical):
            if let contentLength {
                if contentLength != length { throw .conflictingContentLength }
                contentLengthNeedsFolding = true
            }
            if !canonical { contentLengthNeedsFolding = true }
            contentLength = length
        case .transferEncoding(let chunked):
            transferEncodingCount += 1
            transferEncodingIsChunked = chunked
        }
        fields.append((name: field.name, value: field.value))
    }

    /// Validates the head as a whole and decides the body framing (RFC 9112 §6.3).
    ///
    /// Errors, in order: HTTP/1.1 without `Host` → `missingHost`; `Transfer-Encoding` with
    /// `Content-Length` → `contentLengthWithTransferEncoding`; `Transfer-Encoding` in
    /// HTTP/1.0 → `transferEncodingInHTTP10`; `Transfer-Encoding` other than one field that
    /// is exactly `chunked` → `unsupportedTransferEncoding`.
    func finish() throws(HTTPParseError) -> RequestHead {
        guard let requestLine else { throw .invalidRequestLine }
        if requestLine.version == .http1_1, hostCount == 0 { throw .missingHost }
        var headers = fields
        let framing: BodyFraming
        if transferEncodingCount > 0 {
            if contentLength != nil { throw .contentLengthWithTransferEncoding }
            if requestLine.version == .http1_0 { throw .transferEncodingInHTTP10 }
            guard transferEncodingCount == 1, transferEncodingIsChunked else { throw .unsupportedTransferEncoding }
            framing = .chunked
        } else if let contentLength {
            framing = .contentLength(contentLength)
            if contentLengthNeedsFolding { Self.fold(contentLength, into: &headers) }
        } else {
            framing = .none
        }
        return RequestHead(
            method: requestLine.method,
            target: requestLine.target,
            path: requestLine.path,
            query: requestLine.query,
            version: requestLine.version,
            headers: HTTPHeaders(headers),
            framing: framing
        )
    }

    /// Replaces all `Content-Length` fields by one, where the first was, holding `length`.
    private static func fold(_ length: Int, into fields: inout [(name: String, value: String)]) {
        var kept = false
        fields.removeAll { field in
            guard field.name.asciiCaseInsensitiveEquals("content-length") else { return false }
            defer { kept = true }
            return kept
        }
        if let index = fields.firstIndex(where: { $0.name.asciiCaseInsensitiveEquals("content-length") }) {
            fields[index].value = String(length)
        }
    }
}
