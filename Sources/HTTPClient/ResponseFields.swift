/// The header fields of a response as curl delivered them, kept as bytes: each field is its
/// name's length, its name, its value's length and its value (lengths as 4 bytes, native
/// order). Reading a response makes no `String` per field; a caller that looks one field up
/// (`Retry-After` on a refusal) decodes just that one. An upstream behind a CDN sends 15–20
/// fields (request id, rate-limit counters, cookies) that nobody here reads.
struct ResponseFields: Sendable {
    private var bytes: [UInt8] = []

    init() {}

    init(_ fields: [(name: String, value: String)]) {
        for field in fields {
            var name = field.name
            var value = field.value
            name.withUTF8 { name in
                value.withUTF8 { value in
                    append(name: UnsafeRawBufferPointer(name), value: UnsafeRawBufferPointer(value))
                }
            }
        }
    }

    /// Forgets every field, keeping the storage when no head shares it.
    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
    }

    mutating func append(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        if bytes.capacity == 0 { bytes.reserveCapacity(512) }
        Self.appendLength(name.count, to: &bytes)
        bytes.append(contentsOf: name)
        Self.appendLength(value.count, to: &bytes)
        bytes.append(contentsOf: value)
    }

    /// Every field in order, names as sent.
    var fields: [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        forEach { name, value in
            fields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            return true
        }
        return fields
    }

    /// The value of the first field named `name`, compared ignoring ASCII case as HTTP does.
    func value(of name: String) -> String? {
        var wanted = name
        return wanted.withUTF8 { wanted -> String? in
            var found: String?
            forEach { fieldName, value in
                guard Self.equalIgnoringASCIICase(fieldName, wanted) else { return true }
                found = String(decoding: value, as: UTF8.self)
                return false
            }
            return found
        }
    }

    /// Calls `body` with each field's name and value until it returns false.
    private func forEach(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Bool) {
        bytes.withUnsafeBufferPointer { buffer in
            var index = 0
            while index < buffer.count {
                let nameLength = Self.length(at: index, in: buffer)
                let name = UnsafeBufferPointer(rebasing: buffer[(index + 4)..<(index + 4 + nameLength)])
                index += 4 + nameLength
                let valueLength = Self.length(at: index, in: buffer)
                let value = UnsafeBufferPointer(rebasing: buffer[(index + 4)..<(index + 4 + valueLength)])
                index += 4 + valueLength
                if !body(name, value) { return }
            }
        }
    }

    private static func appendLength(_ length: Int, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: length)) { bytes.append(contentsOf: $0) }
    }

    private static func length(at index: Int, in buffer: UnsafeBufferPointer<UInt8>) -> Int {
        Int(UnsafeRawPointer(buffer.baseAddress! + index).loadUnaligned(as: UInt32.self))
    }

    private static func equalIgnoringASCIICase(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>)
        -> Bool
    {
        guard left.count == right.count else { return false }
        for index in 0..<left.count {
            let a = left[index]
            let b = right[index]
            if a == b { continue }
            let lowerA = a &- 0x41 < 26 ? a | 0x20 : a
            let lowerB = b &- 0x41 < 26 ? b | 0x20 : b
            if lowerA != lowerB { return false }
        }
        return true
    }
}
