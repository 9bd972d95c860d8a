#if canImport(Glibc)
    import Glibc
#endif

/// One element of a comma-separated header value such as `Accept`, `Accept-Language` or
/// `Content-Type`: `text/event-stream;q=0.9`, `en-US; q=0.8`, `application/json; charset=utf-8`.
///
/// The three headers are read the same way: the value is everything before the first `;`,
/// compared without case, spaces or tabs, and empty when the element starts with `;` (so
/// `;application/json` is no media type at all).
///
/// All of it works on bytes, with ASCII case: the separators and the names are ASCII, and a
/// `Character` comparison would take Unicode's canonical equivalents for them (U+037E GREEK
/// QUESTION MARK is `;` as a `Character`), so `application/json\u{37E}x` would read as
/// `application/json` with a parameter.
struct HeaderElement {
    /// Before the first `;`: ASCII lower-cased, spaces and tabs removed.
    let value: String
    /// What follows each `;`, unparsed.
    let parameters: [Substring]

    init(_ element: Substring) {
        let parts = Self.split(element, at: UInt8(ascii: ";"))
        value = Self.compact(parts[0])
        parameters = Array(parts.dropFirst())
    }

    /// The non-empty elements of a comma-separated value, at most `limit` of them.
    static func list(_ header: String, limit: Int = 32) -> [HeaderElement] {
        split(Substring(header), at: UInt8(ascii: ",")).lazy.filter { !$0.isEmpty }.prefix(limit).map(
            HeaderElement.init)
    }

    /// Whether the value is `expected`, byte for byte.
    func valueIs(_ expected: String) -> Bool { value.hasSameUTF8(as: expected) }

    /// Whether the value starts with `prefix`, byte for byte.
    func valueStarts(with prefix: String) -> Bool { value.hasUTF8Prefix(prefix) }

    /// The `q` parameter's weight: 1 when there is none, 0 when it is not a number.
    var weight: Double {
        for parameter in parameters {
            let pair = Self.split(parameter, at: UInt8(ascii: "="), maxSplits: 1)
            if pair.count == 2, Self.compact(pair[0]).hasSameUTF8(as: "q") { return Double(Self.compact(pair[1])) ?? 0 }
        }
        return 1
    }

    /// `text` cut at every `separator` byte (an ASCII byte is always a scalar of its own in
    /// UTF-8), empty pieces kept; at most `maxSplits` cuts.
    private static func split(_ text: Substring, at separator: UInt8, maxSplits: Int = .max) -> [Substring] {
        let utf8 = text.utf8
        var parts: [Substring] = []
        var start = utf8.startIndex
        var index = start
        while index != utf8.endIndex, parts.count < maxSplits {
            if utf8[index] == separator {
                parts.append(Substring(utf8[start..<index]))
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        parts.append(Substring(utf8[start...]))
        return parts
    }

    private static func compact(_ text: Substring) -> String {
        let bytes = text.utf8.compactMap { byte -> UInt8? in
            if byte == 0x20 || byte == 0x09 { return nil }
            return 0x41...0x5A ~= byte ? byte | 0x20 : byte
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    /// Byte-for-byte equality of the UTF-8, not `==`'s canonical equivalence. Compared as
    /// contiguous bytes when both strings have them (native strings and literals do): the
    /// request path asks this of every `Content-Type`.
    func hasSameUTF8(as other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        return utf8.withContiguousStorageIfAvailable { bytes in
            other.utf8.withContiguousStorageIfAvailable { Self.sameBytes(bytes, $0, count: bytes.count) }
        }.flatMap { $0 } ?? utf8.elementsEqual(other.utf8)
    }

    /// Whether the UTF-8 starts with `prefix`'s, byte for byte (see ``hasSameUTF8(as:)``).
    func hasUTF8Prefix(_ prefix: String) -> Bool {
        guard utf8.count >= prefix.utf8.count else { return false }
        return utf8.withContiguousStorageIfAvailable { bytes in
            prefix.utf8.withContiguousStorageIfAvailable { Self.sameBytes(bytes, $0, count: $0.count) }
        }.flatMap { $0 } ?? utf8.starts(with: prefix.utf8)
    }

    /// Whether the first `count` bytes of both are the same (`memcmp`: the generic
    /// `elementsEqual` went a byte at a time, hundreds of instructions for a route's path).
    private static func sameBytes(
        _ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>, count: Int
    ) -> Bool {
        guard count > 0, let a = left.baseAddress, let b = right.baseAddress else { return true }
        return memcmp(a, b, count) == 0
    }
}
