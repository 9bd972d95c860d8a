#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads `.env` files into dictionaries and merges them under the real environment.
///
/// Nothing here calls `setenv`: configuration is a plain `[String: String]` built once at
/// start-up, so it is safe however many threads are already running.
///
/// ## Syntax
///
/// The common dotenv dialect, as Docker Compose, python-dotenv and Vapor read it:
///
/// ```
/// # a comment line; blank lines are skipped too
/// export DARVAREH_BASE_URL=https://api.darvareh.ir/v1   # optional `export `
/// DARVAREH_MODEL_ID = gpt-4o-mini        # blanks around the key and `=` are fine
/// LANDING_URL=https://example.com/#top   # `#` without a blank before it is part of the value
/// GREETING='literal text, no escapes, ${NOT_EXPANDED}'
/// PROMPT="two\nlines, \"quoted\", \\ and \$"
/// CERT="-----BEGIN-----
/// spans lines until the closing quote
/// -----END-----"
/// EMPTY=
/// ```
///
/// - A key matches `[A-Za-z_][A-Za-z0-9_.]*`.
/// - An unquoted value is trimmed of blanks (spaces and tabs); an inline comment starts at a
///   `#` preceded by a blank.
/// - A single-quoted value is literal and must close on its line.
/// - A double-quoted value knows the escapes `\n`, `\r`, `\t`, `\\`, `\"` and `\$`; any other
///   backslash is kept as written. It may span lines; line breaks inside it are kept as `\n`.
/// - After a closing quote only blanks and a ` # comment` may follow.
/// - Lines end in LF or CRLF; a UTF-8 byte order mark at the start is skipped.
/// - There is **no variable interpolation**: `${X}` and `$X` stay as written in every kind of
///   value. The real environment is applied afterwards, by ``merged(environment:files:)``, and
///   only to whole variables.
///
/// Parsing is one linear pass. A line longer than ``maximumLineLength`` bytes is an error, and
/// ``load(path:)`` refuses a file larger than ``maximumFileSize`` bytes.
package enum DotEnv {
    /// The largest file ``load(path:)`` reads: 1 MiB.
    package static let maximumFileSize = 1 << 20
    /// The longest line, in bytes without its line break, the parser accepts: 64 KiB.
    package static let maximumLineLength = 1 << 16

    /// Parses `.env` text into its entries, in file order.
    ///
    /// A key may appear more than once; every occurrence is returned, and a dictionary made
    /// from the result (as ``parseDictionary(_:)`` does) keeps the last one.
    package static func parse(_ text: String) throws(DotEnvError) -> [(key: String, value: String)] {
        try parse(bytes: Array(text.utf8))
    }

    /// Parses `.env` text into a dictionary; of a duplicated key, the last value wins.
    package static func parseDictionary(_ text: String) throws(DotEnvError) -> [String: String] {
        dictionary(try parse(text))
    }

    /// The effective configuration: `files` applied in order, each overriding the ones before,
    /// then `environment` (the real process environment) overriding them all.
    ///
    /// Typically `merged(environment: env, files: [dotEnv, dotEnvProduction])` for `.env`
    /// and then `.env.production`.
    package static func merged(environment: [String: String], files: [[String: String]]) -> [String: String] {
        var result: [String: String] = [:]
        for file in files {
            result.merge(file) { _, later in later }
        }
        result.merge(environment) { _, real in real }
        return result
    }

    // MARK: - Internals

    /// Parses UTF-8 `.env` bytes; see ``DotEnv`` for the syntax.
    static func parse(bytes: [UInt8]) throws(DotEnvError) -> [(key: String, value: String)] {
        var parser = Parser(bytes: bytes)
        return try parser.parseAll()
    }

    static func dictionary(_ pairs: [(key: String, value: String)]) -> [String: String] {
        var result: [String: String] = [:]
        result.reserveCapacity(pairs.count)
        for (key, value) in pairs {
            result[key] = value
        }
        return result
    }

}

extension DotEnv {
    /// One pass over the bytes of a `.env` text, line by line.
    private struct Parser {
        let bytes: [UInt8]
        /// Where the next line starts.
        var position: Int
        /// The 1-based number of the line last returned by ``nextLine()``.
        var lineNumber = 0

        init(bytes: [UInt8]) {
            self.bytes = bytes
            let hasBOM = bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF
            self.position = hasBOM ? 3 : 0
        }

        /// The next line without its LF or CRLF, or `nil` at the end of the text.
        mutating func nextLine() throws(DotEnvError) -> Range<Int>? {
            guard position < bytes.count else { return nil }
            lineNumber += 1
            let start = position
            let lineFeed = bytes[start...].firstIndex(of: ASCII.lineFeed)
            var end = lineFeed ?? bytes.count
            position = lineFeed.map { $0 + 1 } ?? bytes.count
            if end > start, bytes[end - 1] == ASCII.carriageReturn {
                end -= 1
            }
            guard end - start <= DotEnv.maximumLineLength else { throw .lineTooLong(line: lineNumber) }
            return start..<end
        }

        mutating func parseAll() throws(DotEnvError) -> [(key: String, value: String)] {
            var pairs: [(key: String, value: String)] = []
            while let line = try nextLine() {
                if let pair = try parseEntry(startingOn: line) {
                    pairs.append(pair)
                }
            }
            return pairs
        }

        /// Parses the entry that starts on `line`, reading further lines for a multi-line
        /// double-quoted value; `nil` for a blank or comment line.
        private mutating func parseEntry(startingOn line: Range<Int>) throws(DotEnvError) -> (
            key: String, value: String
        )? {
            let number = lineNumber
            let end = line.upperBound
            var cursor = skipBlanks(from: line.lowerBound, to: end)
            if cursor == end || bytes[cursor] == ASCII.hash { return nil }

            // `export KEY=…`; but in `export = x` the key is `export` itself.
            if hasExportPrefix(at: cursor, end: end) {
                let afterExport = skipBlanks(from: cursor + 6, to: end)
                if afterExport < end, bytes[afterExport] != ASCII.equals {
                    cursor = afterExport
                }
            }

            guard let equals = bytes[cursor..<end].firstIndex(of: ASCII.equals) else {
                throw .expectedKeyValue(line: number)
            }
            let keyBytes = bytes[cursor..<trimBlanks(from: cursor, to: equals)]
            guard Self.isValidKey(keyBytes) else { throw .invalidKey(line: number) }
            let key = String(decoding: keyBytes, as: UTF8.self)

            let valueStart = skipBlanks(from: equals + 1, to: end)
            let value: [UInt8]
            if valueStart == end {
                value = []
            } else if bytes[valueStart] == ASCII.singleQuote {
                guard let close = bytes[(valueStart + 1)..<end].firstIndex(of: ASCII.singleQuote) else {
                    throw .unterminatedSingleQuote(line: number, key: key)
                }
                try checkTail(from: close + 1, to: end, line: number, key: key)
                value = Array(bytes[(valueStart + 1)..<close])
            } else if bytes[valueStart] == ASCII.doubleQuote {
                value = try parseDoubleQuoted(from: valueStart + 1, lineEnd: end, startLine: number, key: key)
            } else {
                // An inline comment starts at a `#` preceded by a blank; the blank may be the
                // one right after `=`, so `KEY= # note` is empty while `KEY=#1` is "#1".
                var valueEnd = end
                var index = valueStart
                while index < end {
                    if bytes[index] == ASCII.hash, Self.isBlank(bytes[index - 1]) {
                        valueEnd = index
                        break
                    }
                    index += 1
                }
                value = Array(bytes[valueStart..<trimBlanks(from: valueStart, to: valueEnd)])
            }

            guard let text = String(validating: value, as: UTF8.self) else {
                throw .invalidUTF8(line: number, key: key)
            }
            return (key, text)
        }

        /// Reads a double-quoted value whose opening quote is just before `start`, across
        /// lines if needed, and checks what follows the closing quote.
        private mutating func parseDoubleQuoted(
            from start: Int,
            lineEnd: Int,
            startLine: Int,
            key: String
        ) throws(DotEnvError) -> [UInt8] {
            var value: [UInt8] = []
            var index = start
            var end = lineEnd
            while true {
                while index < end {
                    let byte = bytes[index]
                    if byte == ASCII.doubleQuote {
                        try checkTail(from: index + 1, to: end, line: lineNumber, key: key)
                        return value
                    }
                    if byte == ASCII.backslash, index + 1 < end {
                        switch bytes[index + 1] {
                        case UInt8(ascii: "n"): value.append(ASCII.lineFeed)
                        case UInt8(ascii: "r"): value.append(ASCII.carriageReturn)
                        case UInt8(ascii: "t"): value.append(ASCII.tab)
                        case ASCII.backslash, ASCII.doubleQuote, UInt8(ascii: "$"): value.append(bytes[index + 1])
                        default: value.append(contentsOf: bytes[index...(index + 1)])
                        }
                        index += 2
                        continue
                    }
                    value.append(byte)
                    index += 1
                }
                // The line ended inside the quotes: the value goes on with the next line.
                guard let next = try nextLine() else {
                    throw .unterminatedDoubleQuote(line: startLine, key: key)
                }
                value.append(ASCII.lineFeed)
                index = next.lowerBound
                end = next.upperBound
            }
        }

        /// After a closing quote: nothing, blanks, or blanks then a `#` comment.
        private func checkTail(from start: Int, to end: Int, line: Int, key: String) throws(DotEnvError) {
            let next = skipBlanks(from: start, to: end)
            if next == end { return }
            if bytes[next] == ASCII.hash, next > start { return }
            throw .unexpectedTextAfterQuote(line: line, key: key)
        }

        private func hasExportPrefix(at index: Int, end: Int) -> Bool {
            let prefix = "export".utf8
            guard end - index > prefix.count else { return false }
            return bytes[index..<(index + prefix.count)].elementsEqual(prefix)
                && Self.isBlank(bytes[index + prefix.count])
        }

        private func skipBlanks(from start: Int, to end: Int) -> Int {
            var index = start
            while index < end, Self.isBlank(bytes[index]) { index += 1 }
            return index
        }

        /// The end of `start..<end` with trailing blanks removed.
        private func trimBlanks(from start: Int, to end: Int) -> Int {
            var index = end
            while index > start, Self.isBlank(bytes[index - 1]) { index -= 1 }
            return index
        }

        private static func isBlank(_ byte: UInt8) -> Bool {
            byte == ASCII.space || byte == ASCII.tab
        }

        /// `[A-Za-z_][A-Za-z0-9_.]*`
        private static func isValidKey(_ key: ArraySlice<UInt8>) -> Bool {
            guard let first = key.first, isKeyStart(first) else { return false }
            return key.dropFirst().allSatisfy { isKeyStart($0) || isDigit($0) || $0 == UInt8(ascii: ".") }
        }

        private static func isKeyStart(_ byte: UInt8) -> Bool {
            (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || byte == UInt8(ascii: "_")
        }

        private static func isDigit(_ byte: UInt8) -> Bool {
            byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
        }
    }

    /// The bytes the parser looks for.
    private enum ASCII {
        static let tab = UInt8(ascii: "\t")
        static let lineFeed = UInt8(ascii: "\n")
        static let carriageReturn = UInt8(ascii: "\r")
        static let space = UInt8(ascii: " ")
        static let hash = UInt8(ascii: "#")
        static let equals = UInt8(ascii: "=")
        static let singleQuote = UInt8(ascii: "'")
        static let doubleQuote = UInt8(ascii: "\"")
        static let backslash = UInt8(ascii: "\\")
    }
}
