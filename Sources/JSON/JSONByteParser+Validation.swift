extension JSONByteParser {
    /// Checks that `buffer` is one JSON document, with the verdict of ``parseDocument(_:)``
    /// under the same strictness, without building its value: no string, array or
    /// dictionary is made (a member name only when it must be compared as a string).
    package mutating func validateDocument(_ buffer: UnsafeBufferPointer<UInt8>) throws(JSONParseError) {
        begin(buffer)
        skipWhitespace()
        try skipValue()
        skipWhitespace()
        guard index == input.count else { throw error("text after the value") }
    }

    /// Checks and skips the value at the parser, as ``validateDocument(_:)`` checks it.
    package mutating func skipValue() throws(JSONParseError) {
        guard index < input.count else { throw error("unexpected end") }
        switch input[index] {
        case UInt8(ascii: "{"): try skipObject()
        case UInt8(ascii: "["):
            try enter()
            index += 1
            var first = true
            while try nextElement(&first) { try skipValue() }
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        // also refuses what overflows
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try parseNumber()
        default: throw error("unexpected character")
        }
    }

    private mutating func skipObject() throws(JSONParseError) {
        let start = index
        try enter()
        index += 1
        var seen = JSONMemberNames()
        var first = true
        while let name = try nextMemberName(&first) {
            if case .plain(let bytes) = name, !UTF8Text.isValid(bytes) { throw error("invalid UTF-8") }
            if strictness == .interoperable, !seen.insert(name) {
                throw JSONParseError(offset: start, reason: "repeated member name")
            }
            try skipValue()
        }
    }

    /// A string starting at its opening quote, checked as ``parseString()`` checks it. The runs
    /// of bytes between escapes are checked for UTF-8 one by one: an escape always stands for
    /// whole scalars, so the decoded string is valid exactly when every run is.
    private mutating func skipString() throws(JSONParseError) {
        index += 1
        var run = index
        while true {
            index = JSONStringScan.firstSpecial(in: input, from: index, delete: false)
            guard index < input.count else { throw error("unterminated string") }
            let byte = input[index]
            if byte < 0x20 { throw error("control character in a string") }
            guard UTF8Text.isValid(UnsafeBufferPointer(rebasing: input[run..<index])) else {
                throw error("invalid UTF-8")
            }
            index += 1
            if byte == UInt8(ascii: "\"") { return }
            guard index < input.count else { throw error("unexpected end") }
            let escape = input[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                break
            case UInt8(ascii: "u"): _ = try parseUnicodeEscape()
            default: throw error("unknown escape")
            }
            run = index
        }
    }
}
