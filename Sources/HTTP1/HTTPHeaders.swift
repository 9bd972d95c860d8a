/// An ordered list of header fields.
///
/// Field names are compared ignoring ASCII case, as HTTP requires, but are kept with the
/// case they were given. Repeated fields are kept as separate entries, in order.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One field: its name and its value.
    public typealias Element = (name: String, value: String)

    private var fields: [Element]

    /// Creates an empty list.
    public init() {
        fields = []
    }

    /// Creates a list holding these fields in this order.
    public init(_ fields: [(name: String, value: String)]) {
        self.fields = fields
    }

    /// Creates a list from a literal such as `["Content-Type": "text/plain"]`, in literal order,
    /// with room for a few fields more (a response usually gets some on its way out).
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = []
        fields.reserveCapacity(elements.count + 4)
        for (name, value) in elements { fields.append((name: name, value: value)) }
    }

    /// The number of fields, counting repeated names separately.
    public var count: Int { fields.count }

    /// The value of the first field with this name, or `nil`.
    public subscript(name: String) -> String? {
        for field in fields where field.name.asciiCaseInsensitiveEquals(name) {
            return field.value
        }
        return nil
    }

    /// The values of all fields with this name, in order.
    public func values(_ name: String) -> [String] {
        fields.compactMap { $0.name.asciiCaseInsensitiveEquals(name) ? $0.value : nil }
    }

    /// All field lines with this name as one value, joined with ", " in order (RFC 9110
    /// §5.3), or `nil` when there is none; a single line's value comes back as it is.
    ///
    /// Only for fields defined as comma-separated lists (`X-Forwarded-For`, `Accept`, …),
    /// whose repeated lines mean the same as one combined line: not for `Set-Cookie`, nor
    /// for a singleton field such as `Authorization`, where a repeat is an error to detect
    /// with ``firstRepeated(among:)``.
    public func combinedValue(_ name: String) -> String? {
        var combined: String?
        for field in fields where field.name.asciiCaseInsensitiveEquals(name) {
            if combined == nil {
                combined = field.value
            } else {
                combined! += ", "
                combined! += field.value
            }
        }
        return combined
    }

    /// The first of `names` (at most 64) that more than one field line carries, in one pass
    /// over the fields; nil when none repeats.
    public func firstRepeated(among names: [String]) -> String? {
        var seen: UInt64 = 0
        for field in fields {
            let length = field.name.utf8.count
            for index in names.indices
            where names[index].utf8.count == length && field.name.asciiCaseInsensitiveEquals(names[index]) {
                let name = names[index]
                let bit: UInt64 = 1 << UInt64(index & 63)
                if seen & bit != 0 { return name }
                seen |= bit
            }
        }
        return nil
    }

    /// Whether at least one field has this name.
    public func contains(_ name: String) -> Bool {
        fields.contains { $0.name.asciiCaseInsensitiveEquals(name) }
    }

    /// Appends a field, keeping any existing fields with the same name.
    public mutating func add(name: String, value: String) {
        fields.append((name: name, value: value))
    }

    /// Removes every field with this name, then appends one with this value.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    /// Removes every field with this name.
    public mutating func remove(name: String) {
        fields.removeAll { $0.name.asciiCaseInsensitiveEquals(name) }
    }

    /// The comma-separated elements of all fields with this name, with surrounding
    /// whitespace trimmed, lower-cased, and empty elements left out.
    ///
    /// Meant for token lists such as `Connection`, `Transfer-Encoding` and `Expect`.
    public func tokens(_ name: String) -> [String] {
        var result: [String] = []
        for field in fields where field.name.asciiCaseInsensitiveEquals(name) {
            field.value.utf8.withContiguousBytes { bytes in
                HTTPHeaders.forEachElement(in: bytes) { element in
                    result.append(String(decoding: element.lazy.map(ASCII.lower), as: UTF8.self))
                    return true
                }
            }
        }
        return result
    }

    /// Iterates over the fields in order.
    public func makeIterator() -> IndexingIterator<[Element]> {
        fields.makeIterator()
    }

    /// The fields as `[Name: value, …]`.
    public var description: String {
        "[" + fields.map { "\($0.name): \($0.value)" }.joined(separator: ", ") + "]"
    }

    /// Whether any field with this name has `token` (lower-case ASCII) as one of its
    /// comma-separated elements, ignoring case. Allocates nothing.
    func hasToken(_ name: String, _ token: String) -> Bool {
        for field in fields where field.name.asciiCaseInsensitiveEquals(name) {
            let found = field.value.utf8.withContiguousBytes { bytes in
                var found = false
                HTTPHeaders.forEachElement(in: bytes) { element in
                    found = token.utf8.withContiguousBytes { ASCII.caseInsensitiveEquals(element, $0) }
                    return !found
                }
                return found
            }
            if found { return true }
        }
        return false
    }

    /// Calls `body` with each non-empty, whitespace-trimmed element of a comma-separated
    /// list, until it returns `false`.
    static func forEachElement(
        in bytes: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) -> Bool
    ) {
        var start = 0
        while start <= bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != ASCII.comma { end += 1 }
            var lo = start
            var hi = end
            while lo < hi, ASCII.isWhitespace(bytes[lo]) { lo += 1 }
            while hi > lo, ASCII.isWhitespace(bytes[hi - 1]) { hi -= 1 }
            if lo < hi, !body(UnsafeRawBufferPointer(rebasing: bytes[lo..<hi])) { return }
            start = end + 1
        }
    }
}

extension HTTPHeaders: Equatable {
    /// Two lists are equal when they hold the same fields in the same order, names compared
    /// ignoring ASCII case and values compared exactly.
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        guard lhs.fields.count == rhs.fields.count else { return false }
        return zip(lhs.fields, rhs.fields).allSatisfy { l, r in
            l.value == r.value && l.name.asciiCaseInsensitiveEquals(r.name)
        }
    }
}

extension String.UTF8View {
    /// Calls `body` with the view's bytes, copying only if the string is not contiguous UTF-8.
    func withContiguousBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        if let result = withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return Array(self).withUnsafeBytes(body)
    }
}
