import EventLoop

/// Protobuf bytes written in place: the storage grows ahead of need, and only its first
/// ``used`` bytes are written. What attributes and spans are written into.
struct GrowingBytes: Sendable {
    private var storage: [UInt8] = []
    private(set) var used = 0

    init() {}

    init(capacity: Int) {
        reserve(capacity)
    }

    var bytes: ArraySlice<UInt8> { storage[0..<used] }

    func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        storage.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[0..<used])) }
    }

    /// Room for `more` bytes after those written, growing by at least half.
    mutating func reserve(_ more: Int) {
        let needed = used + more
        guard storage.count < needed else { return }
        let capacity = storage.isEmpty ? needed : max(needed, storage.count + storage.count / 2)
        storage.appendZeros(capacity - storage.count)
    }

    /// Writes exactly `size` bytes with `body`, after those written.
    mutating func write(_ size: Int, _ body: (inout ProtobufWriter) -> Void) {
        reserve(size)
        let start = used
        storage.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var writer = ProtobufWriter(base + start)
            body(&writer)
            // The size and the writing describe the same bytes; a difference is a bug here.
            precondition(writer.position == base + start + size, "protobuf writing took the wrong size")
        }
        used += size
    }

    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        write(bytes.count) { $0.bytes(bytes) }
    }

    mutating func append(_ other: GrowingBytes) {
        other.withBytes { append($0) }
    }

    /// Writes `value` little-endian over the eight bytes at `offset` (a fixed64 written before
    /// its value was known).
    mutating func store(_ value: UInt64, at offset: Int) {
        precondition(offset + 8 <= used, "a fixed64 past the bytes written")
        storage.withUnsafeMutableBytes { $0.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt64.self) }
    }

    /// Keeps the first `count` bytes only; the storage stays for what comes next.
    mutating func truncate(to count: Int) {
        used = min(used, count)
    }

    /// Drops the first `count` bytes, keeping the rest.
    mutating func removeFirst(_ count: Int) {
        let left = used - count
        storage.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            base.update(from: base + count, count: left)
        }
        used = left
    }

    /// Begins a length-delimited field whose length is not known yet: its key, and room for
    /// a length of up to 2 MiB (three bytes). Returns where the field starts, for ``endField(_:)``.
    mutating func beginField(_ number: Int) -> Int {
        let start = used
        write(ProtobufSize.varint(UInt64(number) << 3) + Self.lengthRoom) { writer in
            writer.tag(number, 2)
            writer.skip(Self.lengthRoom)
        }
        return start
    }

    /// Ends the field begun at `start`: its length written, the body moved up to it when the
    /// length takes fewer bytes than its room.
    mutating func endField(_ start: Int, number: Int) {
        let bodyStart = start + ProtobufSize.varint(UInt64(number) << 3) + Self.lengthRoom
        let length = used - bodyStart
        precondition(length < 1 << (7 * Self.lengthRoom), "a span of over 2 MiB")
        let lengthBytes = ProtobufSize.varint(UInt64(length))
        let lengthAt = bodyStart - Self.lengthRoom
        storage.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            if lengthBytes < Self.lengthRoom {
                (base + lengthAt + lengthBytes).update(from: base + bodyStart, count: length)
            }
            var writer = ProtobufWriter(base + lengthAt)
            writer.varint(UInt64(length))
        }
        used -= Self.lengthRoom - lengthBytes
    }

    private static let lengthRoom = 3

    // MARK: - Attributes

    /// One attribute as field `field` (below 16): a `KeyValue` of `key` and an `AnyValue` of
    /// `valueBody` bytes that `value` writes.
    mutating func attribute(
        _ field: Int, key: UnsafeBufferPointer<UInt8>, valueBody: Int, _ value: (inout ProtobufWriter) -> Void
    ) {
        let body = ProtobufSize.field(1, key.count) + ProtobufSize.field(2, valueBody)
        write(ProtobufSize.field(field, body)) { writer in
            writer.header(field, body)
            writer.header(1, key.count)
            writer.bytes(key)
            writer.header(2, valueBody)
            value(&writer)
        }
    }

    /// A string attribute: its sizes worked out once and its bytes written straight in, with
    /// no `AnyValue` made on the way (the common case, a dozen times a traced request).
    mutating func attribute(_ field: Int, _ key: StaticString, _ text: String) {
        var text = text
        text.withUTF8 { value in
            key.withUTF8Buffer { key in
                // AnyValue.string_value = 1
                attribute(field, key: key, valueBody: ProtobufSize.field(1, value.count)) { writer in
                    writer.header(1, value.count)
                    writer.bytes(value)
                }
            }
        }
    }

    /// An integer attribute (AnyValue.int_value = 3).
    mutating func attribute(_ field: Int, _ key: StaticString, _ number: Int64) {
        let bits = UInt64(bitPattern: number)
        key.withUTF8Buffer { key in
            attribute(field, key: key, valueBody: 1 + ProtobufSize.varint(bits)) { writer in
                writer.tag(3, 0)
                writer.varint(bits)
            }
        }
    }

    /// An attribute of any value.
    mutating func attribute(_ field: Int, key: UnsafeBufferPointer<UInt8>, _ value: SpanAttribute.Value) {
        switch value {
        case .string(let text):
            var text = text
            text.withUTF8 { bytes in
                attribute(field, key: key, valueBody: ProtobufSize.field(1, bytes.count)) { writer in
                    writer.header(1, bytes.count)
                    writer.bytes(bytes)
                }
            }
        default:
            attribute(field, key: key, valueBody: ProtobufSize.value(value)) { $0.value(value) }
        }
    }
}
