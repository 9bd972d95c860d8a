extension RequestParser {
    /// Most hexadecimal digits in a chunk size.
    static let maxChunkSizeDigits = 16

    /// Parses a chunk-size line given without its CRLF (with no CR in it):
    /// `1*HEXDIG [ chunk-ext ]` (RFC 9112 §7.1). Extensions are checked and skipped.
    ///
    /// Errors: no digit, more than 16 digits, a size that overflows `Int`, or anything but
    /// `;` after the digits → `invalidChunkSize`; a malformed extension → `invalidChunkFraming`.
    static func parseChunkSizeLine(_ line: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) -> Int {
        var size = 0
        var index = 0
        while index < line.count, let digit = ASCII.hexValue(line[index]) {
            guard index < maxChunkSizeDigits, size <= (Int.max - digit) >> 4 else { throw .invalidChunkSize }
            size = size << 4 | digit
            index += 1
        }
        guard index > 0 else { throw .invalidChunkSize }
        let digitsEnd = index
        index = skipWhitespace(line, from: index)
        if index == line.count {
            guard index == digitsEnd else { throw .invalidChunkSize }
            return size
        }
        guard line[index] == ASCII.semicolon else { throw .invalidChunkSize }
        try validateExtensions(line, from: index)
        return size
    }

    /// Checks `*( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] )` from `start`.
    private static func validateExtensions(_ line: UnsafeBufferPointer<UInt8>, from start: Int) throws(HTTPParseError) {
        var index = start
        while index < line.count {
            guard line[index] == ASCII.semicolon else { throw .invalidChunkFraming }
            index = skipWhitespace(line, from: index + 1)
            let nameStart = index
            while index < line.count, ASCII.isTokenChar(line[index]) { index += 1 }
            guard index > nameStart else { throw .invalidChunkFraming }
            index = skipWhitespace(line, from: index)
            guard index < line.count, line[index] == ASCII.equals else { continue }
            index = skipWhitespace(line, from: index + 1)
            if index < line.count, line[index] == ASCII.quote {
                index = try skipQuotedString(line, from: index)
            } else {
                let valueStart = index
                while index < line.count, ASCII.isTokenChar(line[index]) { index += 1 }
                guard index > valueStart else { throw .invalidChunkFraming }
            }
            index = skipWhitespace(line, from: index)
        }
    }

    /// Skips a quoted-string starting at the `"` at `start`; returns the index after it.
    private static func skipQuotedString(
        _ line: UnsafeBufferPointer<UInt8>,
        from start: Int
    ) throws(HTTPParseError) -> Int {
        var index = start + 1
        while index < line.count {
            let byte = line[index]
            if byte == ASCII.quote { return index + 1 }
            if byte == ASCII.backslash {
                guard index + 1 < line.count, ASCII.isFieldValueChar(line[index + 1]) else {
                    throw .invalidChunkFraming
                }
                index += 2
            } else {
                guard ASCII.isFieldValueChar(byte) else { throw .invalidChunkFraming }
                index += 1
            }
        }
        throw .invalidChunkFraming
    }

    private static func skipWhitespace(_ line: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var index = start
        while index < line.count, ASCII.isWhitespace(line[index]) { index += 1 }
        return index
    }
}
