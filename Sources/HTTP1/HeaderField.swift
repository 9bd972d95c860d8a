/// One parsed field line, `field-name ":" OWS field-value OWS` (RFC 9112 §5), with the
/// framing-relevant fields recognised by name.
struct HeaderField: Sendable {
    /// The fields whose values decide how a request is delimited or routed.
    enum Kind: Sendable, Equatable {
        case other
        /// `Host`, whose value has been checked to be `uri-host [":" port]` characters.
        case host
        /// `Content-Length` with its value; `canonical` is false when the field was a list
        /// or had leading zeros, so that it must be rewritten.
        case contentLength(Int, canonical: Bool)
        /// `Transfer-Encoding`; `chunked` is true when the value is exactly `chunked`.
        case transferEncoding(chunked: Bool)
    }

    var name: String
    var value: String
    var kind: Kind

    /// Most decimal digits in a `Content-Length`: 18 digits always fit in an `Int`.
    static let maxContentLengthDigits = 18

    /// Parses a field line given without its CRLF (non-empty, with no CR in it).
    init(parsing line: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) {
        let (nameEnd, valueRange) = try Self.validate(line)
        let nameBytes = UnsafeBufferPointer(rebasing: line[0..<nameEnd])
        let valueBytes = UnsafeBufferPointer(rebasing: line[valueRange])
        switch nameEnd {
        case 4 where ASCII.caseInsensitiveEquals(nameBytes, "host"):
            for byte in valueBytes where !ASCII.isHostChar(byte) { throw .invalidHost }
            kind = .host
        case 14 where ASCII.caseInsensitiveEquals(nameBytes, "content-length"):
            let (length, canonical) = try Self.parseContentLength(valueBytes)
            kind = .contentLength(length, canonical: canonical)
        case 17 where ASCII.caseInsensitiveEquals(nameBytes, "transfer-encoding"):
            kind = .transferEncoding(chunked: ASCII.caseInsensitiveEquals(valueBytes, "chunked"))
        default:
            kind = .other
        }
        name = String(decoding: nameBytes, as: UTF8.self)
        value = String(decoding: valueBytes, as: UTF8.self)
    }

    /// Checks a field line given without its CRLF (non-empty, with no CR in it) and returns
    /// where its name ends and where its whitespace-trimmed value is.
    ///
    /// Errors: starts with whitespace → `obsoleteLineFolding`; whitespace before the colon →
    /// `whitespaceBeforeColon`; no colon, empty name or a non-token byte in it →
    /// `invalidHeaderName`; a control byte other than HTAB in the value → `invalidHeaderValue`.
    /// Bytes 0x80–0xFF (obs-text) are allowed in values.
    static func validate(
        _ line: UnsafeBufferPointer<UInt8>
    ) throws(HTTPParseError) -> (nameEnd: Int, value: Range<Int>) {
        guard let first = line.first else { throw .invalidHeaderName }
        if ASCII.isWhitespace(first) { throw .obsoleteLineFolding }
        var nameEnd = 0
        while nameEnd < line.count, ASCII.isTokenChar(line[nameEnd]) { nameEnd += 1 }
        guard nameEnd < line.count, nameEnd > 0 else { throw .invalidHeaderName }
        if line[nameEnd] != ASCII.colon {
            var index = nameEnd
            while index < line.count, ASCII.isWhitespace(line[index]) { index += 1 }
            if index > nameEnd, index < line.count, line[index] == ASCII.colon { throw .whitespaceBeforeColon }
            throw .invalidHeaderName
        }
        var start = nameEnd + 1
        var end = line.count
        while start < end, ASCII.isWhitespace(line[start]) { start += 1 }
        while end > start, ASCII.isWhitespace(line[end - 1]) { end -= 1 }
        for index in start..<end where !ASCII.isFieldValueChar(line[index]) { throw .invalidHeaderValue }
        return (nameEnd, start..<end)
    }

    /// Parses a `Content-Length` value: `1*DIGIT`, or a comma-separated list of the same
    /// number (RFC 9110 §8.6). No sign, no inner space, at most 18 digits.
    static func parseContentLength(
        _ bytes: UnsafeBufferPointer<UInt8>
    ) throws(HTTPParseError) -> (Int, canonical: Bool) {
        var result: Int?
        var elements = 0
        var hasLeadingZero = false
        var index = 0
        while true {
            while index < bytes.count, ASCII.isWhitespace(bytes[index]) { index += 1 }
            let start = index
            var value = 0
            while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 {
                guard index - start < maxContentLengthDigits else { throw .invalidContentLength }
                value = value &* 10 &+ Int(bytes[index] &- UInt8(ascii: "0"))
                index += 1
            }
            guard index > start else { throw .invalidContentLength }
            if index - start > 1, bytes[start] == UInt8(ascii: "0") { hasLeadingZero = true }
            while index < bytes.count, ASCII.isWhitespace(bytes[index]) { index += 1 }
            if let result, result != value { throw .conflictingContentLength }
            result = value
            elements += 1
            if index == bytes.count { break }
            guard bytes[index] == ASCII.comma else { throw .invalidContentLength }
            index += 1
        }
        return (result ?? 0, elements == 1 && !hasLeadingZero)
    }
}
