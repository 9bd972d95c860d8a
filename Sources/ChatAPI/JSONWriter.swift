/// Builds JSON documents straight into bytes — for hot paths (the upstream request, the
/// gateway's answers, log lines) where it is several times faster than `JSONEncoder`, and
/// the field order is exactly as written.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    private var needsComma = false

    public init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func object(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    public mutating func field(_ name: String, _ value: String) {
        key(name)
        string(value)
    }

    public mutating func field(_ name: String, _ value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }

    public mutating func field(_ name: String, _ value: Bool) {
        key(name)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        needsComma = true
    }

    public mutating func field(_ name: String, _ value: Int) {
        key(name)
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    public mutating func field(_ name: String, _ value: Int?) {
        key(name)
        if let value {
            bytes.append(contentsOf: String(value).utf8)
            needsComma = true
        } else {
            null()
        }
    }

    public mutating func field(_ name: String, object body: (inout JSONWriter) -> Void) {
        key(name)
        needsComma = false
        object(body)
    }

    public mutating func field<Element>(_ name: String, array elements: [Element], _ body: (inout JSONWriter, Element) -> Void) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        for element in elements {
            object { body(&$0, element) }
        }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// A finite number in Swift's shortest round-tripping form (`0.2`, `1e-05`); a
    /// non-finite one, which JSON cannot hold, as `null`.
    public mutating func field(_ name: String, _ value: Double) {
        key(name)
        if value.isFinite {
            bytes.append(contentsOf: value.description.utf8)
            needsComma = true
        } else {
            null()
        }
    }

    public mutating func field(_ name: String, strings values: [String]) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        for value in values {
            separate()
            string(value)
        }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    public mutating func nullField(_ name: String) {
        key(name)
        null()
    }

    /// A number with up to three decimals (milliseconds).
    public mutating func field(_ name: String, milliseconds value: Double) {
        key(name)
        bytes.append(contentsOf: Self.decimal(value).utf8)
        needsComma = true
    }

    private mutating func null() {
        bytes.append(contentsOf: "null".utf8)
        needsComma = true
    }

    private mutating func key(_ name: String) {
        separate()
        string(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            // Copy runs of plain bytes in bulk; escape only what JSON requires.
            var runStart = 0
            var index = JSONStringScan.firstSpecial(in: utf8, from: 0, delete: true)
            while index < utf8.count {
                if runStart < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index])) }
                appendEscaped(utf8[index])
                runStart = index + 1
                index = JSONStringScan.firstSpecial(in: utf8, from: runStart, delete: true)
            }
            if runStart < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
        }
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    private mutating func appendEscaped(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
        case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
        case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
        case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
        default:
            let hex = Array("0123456789abcdef".utf8)
            bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
        }
    }

    /// `12.345` style: at most three decimals, no exponent.
    public static func decimal(_ value: Double) -> String {
        guard value.isFinite, value >= 0 else { return "0" }
        let thousandths = Int((value * 1000).rounded())
        let whole = thousandths / 1000
        let fraction = thousandths % 1000
        if fraction == 0 { return String(whole) }
        var digits = String(fraction)
        while digits.count < 3 { digits = "0" + digits }
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(whole).\(digits)"
    }
}

