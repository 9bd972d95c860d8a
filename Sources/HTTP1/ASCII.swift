/// Byte constants and character classes of the HTTP grammar (RFC 9110 §5.6, RFC 3986 §3.2.2).
///
/// The classes are bit sets over the 128 ASCII values, so a test is two shifts and a mask,
/// with no table lookup and no bounds check.
enum ASCII {
    static let tab: UInt8 = 0x09
    static let lf: UInt8 = 0x0A
    static let cr: UInt8 = 0x0D
    static let space: UInt8 = 0x20
    static let colon: UInt8 = UInt8(ascii: ":")
    static let semicolon: UInt8 = UInt8(ascii: ";")
    static let comma: UInt8 = UInt8(ascii: ",")
    static let equals: UInt8 = UInt8(ascii: "=")
    static let quote: UInt8 = UInt8(ascii: "\"")
    static let backslash: UInt8 = UInt8(ascii: "\\")
    static let slash: UInt8 = UInt8(ascii: "/")
    static let question: UInt8 = UInt8(ascii: "?")
    static let hash: UInt8 = UInt8(ascii: "#")
    static let at: UInt8 = UInt8(ascii: "@")
    static let star: UInt8 = UInt8(ascii: "*")

    /// `tchar` of RFC 9110 §5.6.2: `!#$%&'*+-.^_`|~`, digits and letters.
    private static let tcharLow: UInt64 = 0x03FF_6CFA_0000_0000
    private static let tcharHigh: UInt64 = 0x57FF_FFFF_C7FF_FFFE
    /// Bytes of a `uri-host [":" port]`: unreserved, sub-delims, `:`, `%`, `[` and `]`.
    private static let hostLow: UInt64 = 0x2FFF_7FF2_0000_0000
    private static let hostHigh: UInt64 = 0x47FF_FFFE_AFFF_FFFE

    @inline(__always)
    private static func member(_ byte: UInt8, _ low: UInt64, _ high: UInt64) -> Bool {
        if byte < 64 { return (low &>> UInt64(byte)) & 1 != 0 }
        if byte < 128 { return (high &>> UInt64(byte &- 64)) & 1 != 0 }
        return false
    }

    /// Whether the byte may appear in a token (method, field name, coding name).
    @inline(__always)
    static func isTokenChar(_ byte: UInt8) -> Bool { member(byte, tcharLow, tcharHigh) }

    /// Whether the byte may appear in a Host field value or an absolute-form authority.
    @inline(__always)
    static func isHostChar(_ byte: UInt8) -> Bool { member(byte, hostLow, hostHigh) }

    /// Whether the byte is optional whitespace (SP or HTAB).
    @inline(__always)
    static func isWhitespace(_ byte: UInt8) -> Bool { byte == space || byte == tab }

    /// Whether the byte may appear in a field value: VCHAR, SP, HTAB or obs-text.
    @inline(__always)
    static func isFieldValueChar(_ byte: UInt8) -> Bool { byte >= 0x20 ? byte != 0x7F : byte == tab }

    /// Whether the byte may appear in a request-target: visible ASCII except `#`.
    @inline(__always)
    static func isTargetChar(_ byte: UInt8) -> Bool { byte > 0x20 && byte < 0x7F && byte != hash }

    /// The value of a hexadecimal digit, or `nil`.
    @inline(__always)
    static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte &- UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte &- UInt8(ascii: "a") &+ 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte &- UInt8(ascii: "A") &+ 10)
        default: nil
        }
    }

    /// The byte with ASCII upper-case letters mapped to lower case.
    @inline(__always)
    static func lower(_ byte: UInt8) -> UInt8 {
        byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
    }

    /// Whether two byte sequences are equal, ignoring ASCII case.
    static func caseInsensitiveEquals(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for index in 0..<lhs.count {
            let l = lhs[index]
            let r = rhs[index]
            if l != r, lower(l) != lower(r) { return false }
        }
        return true
    }

    /// Whether the bytes equal a static ASCII string, ignoring ASCII case.
    static func caseInsensitiveEquals(_ bytes: UnsafeBufferPointer<UInt8>, _ string: StaticString) -> Bool {
        caseInsensitiveEquals(
            UnsafeRawBufferPointer(bytes),
            UnsafeRawBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount)
        )
    }
}

extension String {
    /// Whether this string equals `other`, ignoring ASCII case only.
    func asciiCaseInsensitiveEquals(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        return utf8.withContiguousBytes { lhs in
            other.utf8.withContiguousBytes { rhs in ASCII.caseInsensitiveEquals(lhs, rhs) }
        }
    }
}
