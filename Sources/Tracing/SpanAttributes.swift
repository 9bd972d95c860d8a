import EventLoop

/// A span's attributes (or an event's, a link's, the resource's), kept as the protobuf bytes
/// they are sent as: each one is written as a `KeyValue` when it is set. A span then holds one
/// buffer, not a string and a value for each attribute, and its export copies the buffer.
package struct SpanAttributes: Sendable, Equatable, ExpressibleByArrayLiteral {
    /// Each attribute as field 9 of a `Span`: its key byte, its length, its `KeyValue`. Every
    /// field that holds attributes has a number below 16, so a one-byte key: written elsewhere,
    /// only that byte changes (``ProtobufWriter/attributes(_:_:)``). Written in place: the
    /// storage grows ahead of need, and only its first ``used`` bytes are attributes.
    private var storage: [UInt8] = []
    private var used = 0
    /// How many attributes there are.
    package private(set) var count = 0

    static let spanField = 9

    package init() {}

    package init(_ list: [SpanAttribute]) {
        for attribute in list {
            var key = attribute.key
            key.withUTF8 { append(key: $0, attribute.value) }
        }
    }

    package init(arrayLiteral elements: SpanAttribute...) {
        self.init(elements)
    }

    package static func == (left: SpanAttributes, right: SpanAttributes) -> Bool {
        left.count == right.count && left.bytes == right.bytes
    }

    package var isEmpty: Bool { count == 0 }

    /// The attributes' bytes, as sent.
    var bytes: ArraySlice<UInt8> { storage[0..<used] }

    /// The attributes' byte count, as sent.
    var byteCount: Int { used }

    /// Room for `bytes` bytes of attributes (a span's attributes take about 40 bytes each).
    package mutating func reserveCapacity(_ bytes: Int) {
        if storage.count < bytes { storage.appendZeros(bytes - storage.count) }
    }

    /// Adds an attribute whose key is a literal: its bytes are read where the literal lies.
    package mutating func append(_ key: StaticString, _ value: SpanAttribute.Value) {
        switch value {
        case .string(let text): append(key, text)
        case .int(let number): append(key, number)
        default: key.withUTF8Buffer { append(key: $0, value) }
        }
    }

    /// Adds a string attribute: its sizes worked out once and its bytes written straight in,
    /// with no `AnyValue` made on the way (the common case, a dozen times a traced request).
    package mutating func append(_ key: StaticString, _ text: String) {
        var text = text
        text.withUTF8 { value in
            // AnyValue.string_value = 1
            let any = 1 + ProtobufSize.varint(UInt64(value.count)) + value.count
            write(key, valueBody: any) { writer in
                writer.header(1, value.count)
                writer.bytes(value)
            }
        }
    }

    /// Adds an integer attribute (AnyValue.int_value = 3).
    package mutating func append(_ key: StaticString, _ number: Int64) {
        let bits = UInt64(bitPattern: number)
        write(key, valueBody: 1 + ProtobufSize.varint(bits)) { writer in
            writer.tag(3, 0)
            writer.varint(bits)
        }
    }

    /// Adds the attributes of `other` after these (a block encoded once, e.g. an upstream's).
    package mutating func append(contentsOf other: SpanAttributes) {
        guard other.used > 0 else { return }
        if storage.count - used < other.used { reserveCapacity(max(used + other.used, storage.count * 2)) }
        let start = used
        storage.withUnsafeMutableBufferPointer { buffer in
            other.storage.withUnsafeBufferPointer { source in
                guard let base = buffer.baseAddress, let from = source.baseAddress else { return }
                (base + start).update(from: from, count: other.used)
            }
        }
        used += other.used
        count += other.count
    }

    /// One `KeyValue` of `key` and an `AnyValue` of `valueBody` bytes that `value` writes.
    private mutating func write(
        _ key: StaticString, valueBody: Int, _ value: (inout ProtobufWriter) -> Void
    ) {
        key.withUTF8Buffer { keyBytes in write(key: keyBytes, valueBody: valueBody, value) }
    }

    private mutating func write(
        key: UnsafeBufferPointer<UInt8>, valueBody: Int, _ value: (inout ProtobufWriter) -> Void
    ) {
        let keyBytes = key.count
        let body = ProtobufSize.field(1, keyBytes) + ProtobufSize.field(2, valueBody)
        let size = ProtobufSize.field(Self.spanField, body)
        if storage.count - used < size { reserveCapacity(max(used + size, storage.count * 2, 64)) }
        let start = used
        storage.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var writer = ProtobufWriter(base + start)
            writer.header(Self.spanField, body)
            writer.header(1, keyBytes)
            writer.bytes(key)
            writer.header(2, valueBody)
            value(&writer)
        }
        used += size
        count += 1
    }

    private mutating func append(key: UnsafeBufferPointer<UInt8>, _ value: SpanAttribute.Value) {
        write(key: key, valueBody: ProtobufSize.value(value)) { $0.value(value) }
    }

    /// The attributes, read back from their bytes (in the order they were set).
    package var list: [SpanAttribute] {
        var reader = ProtobufReader(Array(bytes))
        var list: [SpanAttribute] = []
        while reader.nextTag() != nil, let body = reader.lengthDelimited() {
            if let attribute = Self.keyValue(body) { list.append(attribute) }
        }
        return list
    }

    private static func keyValue(_ body: [UInt8]) -> SpanAttribute? {
        var reader = ProtobufReader(body)
        var key = ""
        var value: SpanAttribute.Value?
        while let (field, wire) = reader.nextTag() {
            switch (field, wire) {
            case (1, 2): key = String(decoding: reader.lengthDelimited() ?? [], as: UTF8.self)
            case (2, 2): value = anyValue(reader.lengthDelimited() ?? [])
            default: guard reader.skip(wire) else { return nil }
            }
        }
        return value.map { SpanAttribute(key, $0) }
    }

    private static func anyValue(_ body: [UInt8]) -> SpanAttribute.Value? {
        var reader = ProtobufReader(body)
        guard let (field, wire) = reader.nextTag() else { return nil }
        switch (field, wire) {
        case (1, 2): return .string(String(decoding: reader.lengthDelimited() ?? [], as: UTF8.self))
        case (2, 0): return reader.varint().map { .bool($0 != 0) }
        case (3, 0): return reader.varint().map { .int(Int64(bitPattern: $0)) }
        case (4, 1): return reader.fixed64().map { .double(Double(bitPattern: $0)) }
        case (5, 2):
            var array = ProtobufReader(reader.lengthDelimited() ?? [])
            var texts: [String] = []
            while array.nextTag() != nil, let item = array.lengthDelimited() {
                guard case .string(let text) = anyValue(item) else { return nil }
                texts.append(text)
            }
            return .strings(texts)
        default: return nil
        }
    }
}
