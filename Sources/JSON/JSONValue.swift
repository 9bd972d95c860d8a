#if canImport(Glibc)
    import Glibc
#endif

/// A parsed JSON document, for the hot paths that read a few fields of a small document
/// (the request body, the upstream's answer) several times faster than `JSONDecoder`.
package enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The member `key` of an object, nil for anything else or a missing member.
    package subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    package var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// A whole number that fits `Int`.
    package var intValue: Int? {
        guard case .number(let value) = self, value.rounded() == value, abs(value) < 9.0e15 else { return nil }
        return Int(value)
    }

    package var isNull: Bool { self == .null }

    /// Parses `bytes` as one I-JSON value (RFC 7493, the strict profile of RFC 8259): strict
    /// syntax, valid UTF-8 only, nesting bounded by `maximumDepth`, and neither a member name
    /// repeated in an object nor a `\u` escape of a lone surrogate. Names are compared as
    /// strings, so canonically equivalent names are the same name.
    package static func parse(_ bytes: [UInt8], maximumDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        try parse(bytes, maximumDepth: maximumDepth, strictness: .interoperable)
    }

    package static func parse(
        _ bytes: [UInt8], maximumDepth: Int = 64, strictness: JSONByteParser.Strictness
    ) throws(JSONParseError) -> JSONValue {
        var parser = JSONByteParser(maximumDepth: maximumDepth, strictness: strictness)
        return try bytes.withUnsafeBufferPointer { buffer throws(JSONParseError) in
            try parser.parseDocument(buffer)
        }
    }

    /// Checks `bytes` exactly as ``parse(_:maximumDepth:)`` does, without building the value.
    package static func validate(_ bytes: [UInt8], maximumDepth: Int = 64) throws(JSONParseError) {
        var parser = JSONByteParser(maximumDepth: maximumDepth)
        try bytes.withUnsafeBufferPointer { buffer throws(JSONParseError) in
            try parser.validateDocument(buffer)
        }
    }
}

extension JSONValue {
    /// The members `names` of the object in `bytes` — for each name its value, or nil when
    /// absent — without building the rest of the tree.
    /// The whole document is checked as ``parse(_:maximumDepth:)`` checks it, and fails
    /// exactly when that fails; a valid document that is not an object gives nil.
    package static func parseMembers(
        of bytes: [UInt8], named names: [StaticString], maximumDepth: Int = 64
    ) throws(JSONParseError) -> [JSONValue?]? {
        var parser = JSONByteParser(maximumDepth: maximumDepth)
        return try bytes.withUnsafeBufferPointer { buffer throws(JSONParseError) in
            try parser.parseMembers(of: buffer, named: names)
        }
    }
}

/// Why bytes are not a JSON document. Says where, never what (it may be user text).
package struct JSONParseError: Error, Hashable, Sendable, CustomStringConvertible {
    package let offset: Int
    package let reason: String
    package var description: String { "invalid JSON at byte \(offset): \(reason)" }

    package init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }
}

/// The parser behind ``JSONValue/parse(_:maximumDepth:)``; ``ChatCompletion`` also reads
/// with its primitives directly (see `ChatCompletion+JSONValue.swift`).
package struct JSONByteParser {
    /// What the parser refuses beyond RFC 8259's grammar.
    package enum Strictness {
        /// I-JSON (RFC 7493), for what clients send: a repeated member name and a lone
        /// surrogate escape are errors.
        case interoperable
        /// For the upstream's answers, read as before: the last of a repeated name wins, and
        /// a lone surrogate escape reads as U+FFFD.
        case lenient
    }

    package let maximumDepth: Int
    package let strictness: Strictness
    package private(set) var input = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
    package var index = 0
    private var depth = 0

    package init(maximumDepth: Int, strictness: Strictness = .interoperable) {
        self.maximumDepth = maximumDepth
        self.strictness = strictness
    }

    /// Starts reading `buffer` from its first byte.
    package mutating func begin(_ buffer: UnsafeBufferPointer<UInt8>) {
        input = buffer
        index = 0
        depth = 0
    }

    package mutating func parseDocument(_ buffer: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> JSONValue {
        begin(buffer)
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == input.count else { throw error("text after the value") }
        return value
    }

    package mutating func parseMembers(of buffer: UnsafeBufferPointer<UInt8>, named names: [StaticString])
        throws(JSONParseError) -> [JSONValue?]?
    {
        begin(buffer)
        skipWhitespace()
        guard index < input.count, input[index] == UInt8(ascii: "{") else {
            _ = try parseDocument(buffer) // valid or not, but not an object
            return nil
        }
        try enter()
        index += 1
        var values = [JSONValue?](repeating: nil, count: names.count)
        var seen = JSONMemberNames()
        var first = true
        while let name = try nextMemberName(&first) {
            let slot = try self.slot(of: name, in: names)
            if strictness == .interoperable, !seen.insert(name) { throw error("repeated member name") }
            let value = try parseValue()
            if let slot { values[slot] = value }
        }
        skipWhitespace()
        guard index == input.count else { throw error("text after the value") }
        return values
    }

    /// Which of `names` a member name is. A plain name is compared as bytes, without making a
    /// string of it; one that is none of them must still be valid UTF-8.
    private func slot(of name: MemberName, in names: [StaticString]) throws(JSONParseError) -> Int? {
        switch name {
        case .escaped(let key):
            return names.firstIndex { $0.withUTF8Buffer { key.utf8.elementsEqual($0) } }
        case .plain(let key):
            if let slot = names.firstIndex(where: { Self.name(key, is: $0) }) { return slot }
            guard UTF8Text.isValid(key) else { throw error("invalid UTF-8") }
            return nil
        }
    }

    /// Whether the bytes of a plain member name are `expected`.
    package static func name(_ key: UnsafeBufferPointer<UInt8>, is expected: StaticString) -> Bool {
        guard key.count == expected.utf8CodeUnitCount else { return false }
        guard let start = key.baseAddress else { return true } // both empty
        return memcmp(start, expected.utf8Start, key.count) == 0
    }

    /// A member name as read: its bytes when it has no escapes (not yet checked for UTF-8: the
    /// caller keeps, compares or checks it), else the decoded string.
    package enum MemberName {
        case plain(UnsafeBufferPointer<UInt8>)
        case escaped(String)
    }

    /// A member's name as a string: its bytes checked as UTF-8, or its unescaped text.
    package func key(of name: MemberName) throws(JSONParseError) -> String {
        switch name {
        case .plain(let bytes):
            guard let text = UTF8Text.string(bytes) else { throw error("invalid UTF-8") }
            return text
        case .escaped(let text):
            return text
        }
    }

    /// Moves to the next member of the object being read — after its `{` (`first`) or after a
    /// member's value — and returns its name with the parser on its value; nil after the
    /// closing `}`, which also leaves the object's depth.
    package mutating func nextMemberName(_ first: inout Bool) throws(JSONParseError) -> MemberName? {
        skipWhitespace()
        guard index < input.count else { throw error("unexpected end") }
        if input[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return nil
        }
        if !first {
            guard input[index] == UInt8(ascii: ",") else { throw error("expected ',' or '}'") }
            index += 1
            skipWhitespace()
        }
        first = false
        guard index < input.count, input[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
        let start = index + 1
        let end = JSONStringScan.firstSpecial(in: input, from: start, delete: false)
        let name: MemberName
        if end < input.count, input[end] == UInt8(ascii: "\"") {
            index = end + 1
            name = .plain(UnsafeBufferPointer(rebasing: input[start..<end]))
        } else {
            name = .escaped(try parseString()) // escapes, or an error to report
        }
        skipWhitespace()
        guard index < input.count, input[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
        index += 1
        skipWhitespace()
        return name
    }

    package func error(_ reason: String) -> JSONParseError {
        JSONParseError(offset: index, reason: reason)
    }

    package mutating func skipWhitespace() {
        while index < input.count {
            switch input[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    package mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard index < input.count else { throw error("unexpected end") }
        switch input[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected character")
        }
    }

    package mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= input.count else { throw error("unexpected end") }
        for offset in 0..<count where input[index + offset] != word.utf8Start[offset] {
            throw error("unknown literal")
        }
        index += count
    }

    package mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > maximumDepth { throw error("nested too deeply") }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONValue {
        let start = index
        try enter()
        index += 1
        // Collected in order, then hashed into a dictionary of the right size in one go
        // (growing one member at a time rehashes several times).
        var members: [(String, JSONValue)] = []
        var first = true
        while let name = try nextMemberName(&first) {
            let key = try key(of: name)
            members.append((key, try parseValue()))
        }
        switch strictness {
        case .lenient:
            return .object(Dictionary(members, uniquingKeysWith: { _, last in last }))
        case .interoperable:
            // The dictionary meets a repeated name as it hashes the members: no check of its own.
            do {
                return .object(try Dictionary(members, uniquingKeysWith: { _, _ in throw RepeatedName() }))
            } catch {
                throw JSONParseError(offset: start, reason: "repeated member name")
            }
        }
    }

    private struct RepeatedName: Error {}

    private mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        index += 1
        var elements: [JSONValue] = []
        var first = true
        while try nextElement(&first) { elements.append(try parseValue()) }
        return .array(elements)
    }

    /// Moves to the next element of the array being read — after its `[` (`first`) or after
    /// an element — and returns true with the parser on it; false after the closing `]`, which
    /// also leaves the array's depth. The array counterpart of ``nextMemberName(_:)``.
    package mutating func nextElement(_ first: inout Bool) throws(JSONParseError) -> Bool {
        skipWhitespace()
        guard index < input.count else { throw error("unexpected end") }
        if input[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return false
        }
        if !first {
            guard input[index] == UInt8(ascii: ",") else { throw error("expected ',' or ']'") }
            index += 1
            skipWhitespace()
        }
        first = false
        return true
    }

    /// A string starting at the opening quote; leaves `index` after the closing one.
    package mutating func parseString() throws(JSONParseError) -> String {
        index += 1
        let start = index
        // Fast path: no escape before the closing quote.
        index = JSONStringScan.firstSpecial(in: input, from: index, delete: false)
        if index < input.count {
            let byte = input[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: input[start..<index])
                index += 1
                guard let text = UTF8Text.string(slice) else { throw error("invalid UTF-8") }
                return text
            }
            if byte < 0x20 { throw error("control character in a string") }
        }
        var bytes = Array(input[start..<index])
        while index < input.count {
            let byte = input[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = bytes.withUnsafeBufferPointer(UTF8Text.string) else { throw error("invalid UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard index < input.count else { throw error("unexpected end") }
                let escape = input[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): bytes.append(0x22)
                case UInt8(ascii: "\\"): bytes.append(0x5C)
                case UInt8(ascii: "/"): bytes.append(0x2F)
                case UInt8(ascii: "b"): bytes.append(0x08)
                case UInt8(ascii: "f"): bytes.append(0x0C)
                case UInt8(ascii: "n"): bytes.append(0x0A)
                case UInt8(ascii: "r"): bytes.append(0x0D)
                case UInt8(ascii: "t"): bytes.append(0x09)
                case UInt8(ascii: "u"): appendScalar(try parseUnicodeEscape(), to: &bytes)
                default: throw error("unknown escape")
                }
            default:
                if byte < 0x20 { throw error("control character in a string") }
                bytes.append(byte)
                index += 1
            }
        }
        throw error("unterminated string")
    }

    /// The scalar of `\uXXXX` (after the `u`), joining a surrogate pair. A lone surrogate is
    /// an error, or U+FFFD when lenient.
    package mutating func parseUnicodeEscape() throws(JSONParseError) -> Unicode.Scalar {
        let escapeStart = index - 2
        let high = try hex4()
        if (0xD800...0xDBFF).contains(high) {
            if index + 6 <= input.count, input[index] == UInt8(ascii: "\\"), input[index + 1] == UInt8(ascii: "u") {
                let saved = index
                index += 2
                let low = try hex4()
                if (0xDC00...0xDFFF).contains(low) {
                    return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)) ?? "\u{FFFD}"
                }
                index = saved
            }
            return try loneSurrogate(at: escapeStart)
        }
        guard let scalar = Unicode.Scalar(high) else { return try loneSurrogate(at: escapeStart) } // a low surrogate
        return scalar
    }

    private func loneSurrogate(at offset: Int) throws(JSONParseError) -> Unicode.Scalar {
        guard strictness == .lenient else { throw JSONParseError(offset: offset, reason: "lone surrogate escape") }
        return "\u{FFFD}"
    }

    private mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= input.count else { throw error("unexpected end") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = input[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("bad \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private func appendScalar(_ scalar: Unicode.Scalar, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: String(scalar).utf8)
    }

    package mutating func parseNumber() throws(JSONParseError) -> Double {
        let start = index
        if input[index] == UInt8(ascii: "-") { index += 1 }
        let digitsStart = index
        var isWhole = true
        guard index < input.count, isDigit(input[index]) else { throw error("bad number") }
        if input[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < input.count, isDigit(input[index]) { index += 1 }
        }
        if index < input.count, input[index] == UInt8(ascii: ".") {
            isWhole = false
            index += 1
            guard index < input.count, isDigit(input[index]) else { throw error("bad number") }
            while index < input.count, isDigit(input[index]) { index += 1 }
        }
        if index < input.count, input[index] == UInt8(ascii: "e") || input[index] == UInt8(ascii: "E") {
            isWhole = false
            index += 1
            if index < input.count, input[index] == UInt8(ascii: "+") || input[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < input.count, isDigit(input[index]) else { throw error("bad number") }
            while index < input.count, isDigit(input[index]) { index += 1 }
        }
        // A whole number of up to 15 digits (token counts, timestamps) is exact in a Double:
        // computed here rather than by text-to-double conversion.
        if isWhole, index - digitsStart <= 15 {
            var whole = 0
            for digit in input[digitsStart..<index] { whole = whole * 10 + Int(digit - UInt8(ascii: "0")) }
            return digitsStart > start ? -Double(whole) : Double(whole)
        }
        guard let value = Double(String(decoding: UnsafeBufferPointer(rebasing: input[start..<index]), as: UTF8.self)),
            value.isFinite
        else { throw error("number out of range") }
        return value
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
