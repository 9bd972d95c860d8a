#if canImport(Glibc)
    import Glibc
#endif

/// The member names of one object read so far, to find a repeated one (RFC 7493 §2.3).
///
/// Two names are the same when they are equal strings — canonical equivalents included, as
/// the `[String: JSONValue]` of a parsed object keys them — so a reading that checks names
/// here refuses exactly the objects the whole parse refuses.
///
/// Objects are small, so up to 16 names are kept as read and each new one is compared with
/// them in turn: nothing is allocated, and a plain ASCII name (the usual case) is compared
/// byte for byte, which for ASCII is string equality. From the 17th name on, a `Set` keeps
/// them instead, so a large object is not quadratic.
package struct JSONMemberNames {
    package init() {}

    private enum Name {
        /// Plain ASCII bytes of the input.
        case ascii(UnsafeBufferPointer<UInt8>)
        /// Any other name, decoded.
        case text(String)

        var string: String {
            switch self {
            case .ascii(let bytes): String(decoding: bytes, as: UTF8.self)
            case .text(let text): text
            }
        }

        func isSame(as other: Name) -> Bool {
            switch (self, other) {
            case (.ascii(let a), .ascii(let b)):
                guard a.count == b.count else { return false }
                guard let aStart = a.baseAddress, let bStart = b.baseAddress else { return true } // both empty
                return memcmp(aStart, bStart, a.count) == 0
            default:
                // An ASCII name can equal another one: "K" and U+212A KELVIN SIGN.
                return string == other.string
            }
        }
    }

    private static let scanLimit = 16
    private var names = InlineArray<16, Name?>(repeating: nil)
    private var count = 0
    private var overflow: Set<String>?

    /// Adds `name` (its bytes valid UTF-8) and returns false when an equal name came before.
    package mutating func insert(_ name: JSONByteParser.MemberName) -> Bool {
        let new: Name
        switch name {
        case .plain(let bytes):
            new = Self.isASCII(bytes) ? .ascii(bytes) : .text(String(decoding: bytes, as: UTF8.self))
        case .escaped(let text): new = .text(text)
        }
        if overflow != nil { return overflow!.insert(new.string).inserted }
        for index in 0..<count where names[index]!.isSame(as: new) { return false }
        if count < Self.scanLimit {
            names[count] = new
            count += 1
            return true
        }
        var all = Set<String>(minimumCapacity: 2 * Self.scanLimit)
        for index in 0..<count { all.insert(names[index]!.string) }
        all.insert(new.string)
        overflow = all
        return true
    }

    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.allSatisfy { $0 < 0x80 }
    }
}
