/// A span's attributes (or an event's, a link's, the resource's), kept as the protobuf bytes
/// they are sent as: each one is written as a `KeyValue` when it is set. A span then holds one
/// buffer, not a string and a value for each attribute, and its export copies the buffer.
package struct SpanAttributes: Sendable, Equatable, ExpressibleByArrayLiteral, SpanAttributeSink {
    /// Each attribute as field 9 of a `Span`: its key byte, its length, its `KeyValue`. Every
    /// field that holds attributes has a number below 16, so a one-byte key: written elsewhere,
    /// only that byte changes (``ProtobufWriter/attributes(_:_:)``).
    private var storage = GrowingBytes()
    /// How many attributes there are.
    package private(set) var count = 0

    static let spanField = 9

    package init() {}

    package init(_ list: [SpanAttribute]) {
        for attribute in list {
            var key = attribute.key
            key.withUTF8 { storage.attribute(Self.spanField, key: $0, attribute.value) }
            count += 1
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
    var bytes: ArraySlice<UInt8> { storage.bytes }

    /// The attributes' byte count, as sent.
    var byteCount: Int { storage.used }

    func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        storage.withBytes(body)
    }

    /// Adds an attribute whose key is a literal: its bytes are read where the literal lies.
    package mutating func append(_ key: StaticString, _ value: SpanAttribute.Value) {
        key.withUTF8Buffer { storage.attribute(Self.spanField, key: $0, value) }
        count += 1
    }

    /// Adds a string attribute.
    package mutating func append(_ key: StaticString, _ text: String) {
        storage.attribute(Self.spanField, key, text)
        count += 1
    }

    /// Adds an integer attribute.
    package mutating func append(_ key: StaticString, _ number: Int64) {
        storage.attribute(Self.spanField, key, number)
        count += 1
    }

    /// Adds a string attribute, when there is one.
    package mutating func set(_ key: StaticString, _ text: String?) {
        if let text { append(key, text) }
    }

    /// Adds an integer attribute, when there is one.
    package mutating func set(_ key: StaticString, _ number: Int?) {
        if let number { append(key, Int64(number)) }
    }

    /// Adds the attributes of `other` after these (a block encoded once, e.g. an upstream's).
    package mutating func append(contentsOf other: SpanAttributes) {
        storage.append(other.storage)
        count += other.count
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

/// Where attributes can be written one by one: a block encoded ahead (``SpanAttributes``) or a
/// span being written (``SpanBody``), so a block made once holds what a span writes otherwise.
package protocol SpanAttributeSink {
    mutating func set(_ key: StaticString, _ text: String?)
    mutating func set(_ key: StaticString, _ number: Int?)
}
