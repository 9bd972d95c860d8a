/// A CBOR data item (RFC 8949) of the kinds an App Attest attestation or assertion holds.
/// Tags, floating-point numbers and simple values other than `true`, `false` and `null` are
/// refused by ``CBORReader``, so they have no case here.
enum CBORValue: Equatable, Sendable {
    /// Major type 0.
    case unsigned(UInt64)
    /// Major type 1, the integer −1 − n, kept as n: every value the wire can carry fits.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBORValue])
    case map(CBORMap)
    case bool(Bool)
    case null

    var bytes: [UInt8]? {
        if case .bytes(let bytes) = self { bytes } else { nil }
    }

    var text: String? {
        if case .text(let text) = self { text } else { nil }
    }

    var array: [CBORValue]? {
        if case .array(let items) = self { items } else { nil }
    }

    var map: CBORMap? {
        if case .map(let map) = self { map } else { nil }
    }

    /// The integer, when it is one and fits an `Int64`.
    var integer: Int64? {
        switch self {
        case .unsigned(let value): value <= UInt64(Int64.max) ? Int64(value) : nil
        case .negative(let n): n <= UInt64(Int64.max) ? -1 - Int64(n) : nil
        default: nil
        }
    }

    /// Equal when their encodings are: text is compared by its UTF-8 bytes, not by Swift's
    /// canonical equivalence, so two keys a map may hold side by side are never "equal".
    static func == (lhs: CBORValue, rhs: CBORValue) -> Bool {
        switch (lhs, rhs) {
        case (.unsigned(let a), .unsigned(let b)): a == b
        case (.negative(let a), .negative(let b)): a == b
        case (.bytes(let a), .bytes(let b)): a == b
        case (.text(let a), .text(let b)): a.utf8.elementsEqual(b.utf8)
        case (.array(let a), .array(let b)): a == b
        case (.map(let a), .map(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.null, .null): true
        default: false
        }
    }
}

/// A CBOR map: its entries in the order they were written, each key a text string or an
/// integer, no key twice (``CBORReader`` refuses anything else).
struct CBORMap: Equatable, Sendable {
    let entries: [(key: CBORValue, value: CBORValue)]

    init(_ entries: [(key: CBORValue, value: CBORValue)]) {
        self.entries = entries
    }

    /// The value under the text key `key` (`"fmt"`, `"authData"`), compared byte for byte.
    subscript(_ key: String) -> CBORValue? {
        entries.first { $0.key.text?.utf8.elementsEqual(key.utf8) == true }?.value
    }

    /// The value under the integer key `key`, as COSE keys use them (1, 3, −1, −2, −3).
    subscript(_ key: Int) -> CBORValue? {
        let wanted: CBORValue = key >= 0 ? .unsigned(UInt64(key)) : .negative(UInt64(-1 - key))
        return entries.first { $0.key == wanted }?.value
    }

    static func == (lhs: CBORMap, rhs: CBORMap) -> Bool {
        lhs.entries.count == rhs.entries.count
            && zip(lhs.entries, rhs.entries).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

/// The bounds one decoding keeps to, checked before the work or memory they bound is spent.
struct CBORLimits: Equatable, Sendable {
    /// The most bytes a decoding looks at: more is refused before parsing.
    var maximumBytes = 65_536
    /// How many arrays and maps may nest, one inside another (an attestation needs 3).
    var maximumDepth = 16
    /// The most data items in all, map keys and containers included.
    var maximumItems = 4_096

    static let `default` = CBORLimits()
}

/// Why bytes are not the strict CBOR ``CBORReader`` reads. Holds no byte of the input.
struct CBORError: Error, Equatable, Sendable, CustomStringConvertible {
    enum Reason: String, Equatable, Sendable {
        /// The input ends inside an item, or a length or count claims more than is left.
        case truncated
        /// An indefinite length (additional information 31), or a break code.
        case indefiniteLength
        /// A tag (major type 6).
        case tag
        /// A float, `undefined`, or a simple value other than `true`, `false` and `null`.
        case unsupportedSimple
        case invalidUTF8
        case duplicateKey
        /// A map key that is neither a text string nor an integer.
        case badKey
        /// Bytes left after the one item the input must be.
        case trailingBytes
        /// Arrays and maps nested deeper than ``CBORLimits/maximumDepth``.
        case tooDeep
        /// More items than ``CBORLimits/maximumItems``.
        case tooManyItems
        /// An input longer than ``CBORLimits/maximumBytes``.
        case tooLarge
        /// Additional information 28, 29 or 30, which RFC 8949 reserves.
        case reservedInfo
        /// An integer, length or count not written in its shortest form.
        case nonShortestForm
    }

    let reason: Reason
    /// Where the offending item starts (or where the input ended), from the start of the input.
    let offset: Int

    init(_ reason: Reason, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    var description: String { "CBOR \(reason.rawValue) at byte \(offset)" }
}

/// A strict CBOR decoder for App Attest's attestation and assertion objects.
///
/// Strict, because the objects come from a device the gateway does not trust yet: definite
/// lengths only, no tags, no floats, text that is valid UTF-8, map keys that are text or
/// integers and never repeated, and every integer, length and count in its shortest form.
/// Apple's encoder writes every one of these in its shortest form (the real attestation and
/// assertion in the tests' fixture have no other), and one spelling per value means two
/// readers cannot see different items in the same bytes.
///
/// No length or count read from the input sizes an allocation before it is checked against
/// the bytes left (each item takes at least one byte) and the items left, and nesting is
/// bounded, so no input of ``CBORLimits/maximumBytes`` costs more than a bounded amount.
enum CBORReader {
    /// The one item `bytes` are, all of them.
    static func decode(_ bytes: [UInt8], limits: CBORLimits = .default) throws(CBORError) -> CBORValue {
        let (value, count) = try decodePrefix(bytes, from: 0, limits: limits)
        guard count == bytes.count else { throw CBORError(.trailingBytes, at: count) }
        return value
    }

    /// The one item that starts at `start` in `bytes`, and how many bytes it takes; what
    /// follows it is not read. Authenticator data needs this: its credential public key is a
    /// CBOR item whose length is written nowhere else. Offsets in errors count from the start
    /// of `bytes`. The limit on size applies to the bytes from `start` on.
    static func decodePrefix(
        _ bytes: [UInt8], from start: Int, limits: CBORLimits = .default
    ) throws(CBORError) -> (value: CBORValue, byteCount: Int) {
        guard start >= 0, start <= bytes.count else { throw CBORError(.truncated, at: max(0, min(start, bytes.count))) }
        guard bytes.count - start <= limits.maximumBytes else { throw CBORError(.tooLarge, at: start) }
        var parser = Parser(bytes: bytes, offset: start, limits: limits)
        let value = try parser.item(depth: 0)
        return (value, parser.offset - start)
    }

    /// One pass over the input. Recursion follows nesting, which ``CBORLimits/maximumDepth``
    /// bounds before each step down.
    private struct Parser {
        let bytes: [UInt8]
        var offset: Int
        let limits: CBORLimits
        var items = 0

        init(bytes: [UInt8], offset: Int, limits: CBORLimits) {
            self.bytes = bytes
            self.offset = offset
            self.limits = limits
        }

        var remaining: Int { bytes.count - offset }

        /// The item at `offset`, inside `depth` arrays and maps.
        mutating func item(depth: Int) throws(CBORError) -> CBORValue {
            let start = offset
            guard offset < bytes.count else { throw CBORError(.truncated, at: start) }
            guard items < limits.maximumItems else { throw CBORError(.tooManyItems, at: start) }
            items += 1
            let initial = bytes[offset]
            let major = initial >> 5
            let info = initial & 0x1F
            switch info {
            case 28...30: throw CBORError(.reservedInfo, at: start)
            case 31: throw CBORError(.indefiniteLength, at: start)
            default: break
            }
            switch major {
            case 6:
                throw CBORError(.tag, at: start)
            case 7:
                offset += 1
                switch info {
                case 20: return .bool(false)
                case 21: return .bool(true)
                case 22: return .null
                default: throw CBORError(.unsupportedSimple, at: start)
                }
            default:
                break
            }
            let argument = try readArgument(info: info, start: start)
            switch major {
            case 0:
                return .unsigned(argument)
            case 1:
                return .negative(argument)
            case 2, 3:
                // The length is checked against what is left before anything is copied.
                guard argument <= UInt64(remaining) else { throw CBORError(.truncated, at: start) }
                let end = offset + Int(argument)
                let content = Array(bytes[offset..<end])
                offset = end
                if major == 2 { return .bytes(content) }
                guard let text = String(validating: content, as: UTF8.self) else {
                    throw CBORError(.invalidUTF8, at: start)
                }
                return .text(text)
            case 4:
                // Each item takes at least one byte: a count above what is left cannot be met.
                guard argument <= UInt64(remaining) else { throw CBORError(.truncated, at: start) }
                guard argument <= UInt64(limits.maximumItems - items) else { throw CBORError(.tooManyItems, at: start) }
                guard depth < limits.maximumDepth else { throw CBORError(.tooDeep, at: start) }
                let count = Int(argument)
                var elements: [CBORValue] = []
                elements.reserveCapacity(count)
                for _ in 0..<count { elements.append(try item(depth: depth + 1)) }
                return .array(elements)
            default: // 5: a map; each entry takes at least two bytes.
                guard argument <= UInt64(remaining / 2) else { throw CBORError(.truncated, at: start) }
                guard argument <= UInt64((limits.maximumItems - items) / 2) else {
                    throw CBORError(.tooManyItems, at: start)
                }
                guard depth < limits.maximumDepth else { throw CBORError(.tooDeep, at: start) }
                let count = Int(argument)
                var entries: [(key: CBORValue, value: CBORValue)] = []
                entries.reserveCapacity(count)
                var keys = Set<Key>()
                keys.reserveCapacity(count)
                for _ in 0..<count {
                    let keyStart = offset
                    let key = try item(depth: depth + 1)
                    guard let hashable = Key(key) else { throw CBORError(.badKey, at: keyStart) }
                    guard keys.insert(hashable).inserted else { throw CBORError(.duplicateKey, at: keyStart) }
                    entries.append((key, try item(depth: depth + 1)))
                }
                return .map(CBORMap(entries))
            }
        }

        /// The argument of the head that starts at `start`, whose initial byte has been read
        /// but not consumed; leaves `offset` after the head.
        mutating func readArgument(info: UInt8, start: Int) throws(CBORError) -> UInt64 {
            offset += 1
            if info < 24 { return UInt64(info) }
            // 24...27 (28...31 were refused): 1, 2, 4 or 8 bytes follow.
            let width = 1 << Int(info - 24)
            guard width <= remaining else { throw CBORError(.truncated, at: start) }
            var value: UInt64 = 0
            for byte in bytes[offset..<(offset + width)] { value = value << 8 | UInt64(byte) }
            offset += width
            // The shortest form: below 24 fits the initial byte, and each wider form starts
            // where the narrower one ends.
            let smallest: UInt64 =
                switch width {
                case 1: 24
                case 2: 0x100
                case 4: 0x1_0000
                default: 0x1_0000_0000
                }
            guard value >= smallest else { throw CBORError(.nonShortestForm, at: start) }
            return value
        }
    }

    /// A map key as a set element: text by its UTF-8 bytes (Swift's `String` equality is
    /// canonical equivalence, which would call distinct keys equal).
    private enum Key: Hashable {
        case text([UInt8])
        case unsigned(UInt64)
        case negative(UInt64)

        init?(_ value: CBORValue) {
            switch value {
            case .text(let text): self = .text(Array(text.utf8))
            case .unsigned(let value): self = .unsigned(value)
            case .negative(let n): self = .negative(n)
            default: return nil
            }
        }
    }
}
