/// The body of an OTLP/HTTP traces export: an `ExportTraceServiceRequest`
/// (opentelemetry/proto/collector/trace/v1) in protobuf's binary encoding, written by hand
/// (the few messages it needs, nothing generated).
///
/// Two passes: every message's size is worked out first (``ProtobufSize``), then the bytes are
/// written once, front to back, into a buffer of exactly that size (``ProtobufWriter``): no
/// growing, no moving, no check a byte.
package enum OTLPEncoding {
    /// One resource (the gateway's attributes: `service.name`, …), one instrumentation scope,
    /// and `spans`.
    package static func exportRequest(
        resource: SpanAttributes, scope: (name: String, version: String), spans: [SpanRecord]
    ) -> [UInt8] {
        exportRequest(resource: resource, scope: scope, encoded: EncodedSpans(spans))
    }

    /// The same, of spans already encoded: their bytes are copied in whole.
    package static func exportRequest(
        resource: SpanAttributes, scope: (name: String, version: String), encoded spans: EncodedSpans
    ) -> [UInt8] {
        typealias Size = ProtobufSize
        // Resource.attributes = 1
        let resourceBody = resource.byteCount
        // InstrumentationScope.name = 1, .version = 2
        let scopeBody = Size.string(1, scope.name) + Size.string(2, scope.version)
        // ScopeSpans.scope = 1, .spans = 2 (each span's key and length are in its bytes)
        let scopeSpansBody = Size.field(1, scopeBody) + spans.byteCount
        // ResourceSpans.resource = 1, .scope_spans = 2
        let resourceSpansBody = Size.field(1, resourceBody) + Size.field(2, scopeSpansBody)
        // ExportTraceServiceRequest.resource_spans = 1
        let total = Size.field(1, resourceSpansBody)
        return [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
            guard let start = buffer.baseAddress else { return }
            var writer = ProtobufWriter(start)
            writer.header(1, resourceSpansBody)
            writer.header(1, resourceBody)
            writer.attributes(1, resource)
            writer.header(2, scopeSpansBody)
            writer.header(1, scopeBody)
            writer.string(1, scope.name)
            writer.string(2, scope.version)
            spans.withBytes { writer.bytes($0) }
            count = writer.position - start
            // The sizes and the writing describe the same messages; a difference is a bug here.
            precondition(count == total, "OTLP encoding wrote \(count) bytes of \(total)")
        }
    }

    /// The spans a collector said it refused, from an `ExportTraceServiceResponse`'s
    /// `partial_success.rejected_spans`; 0 for an empty body (all accepted) or one that does
    /// not read.
    package static func rejectedSpans(inResponse body: [UInt8]) -> Int64 {
        var reader = ProtobufReader(body)
        while let (field, wire) = reader.nextTag() {
            guard field == 1, wire == 2, let inner = reader.lengthDelimited() else {
                guard reader.skip(wire) else { return 0 }
                continue
            }
            var partial = ProtobufReader(inner)
            while let (field, wire) = partial.nextTag() {
                if field == 1, wire == 0, let value = partial.varint() { return Int64(bitPattern: value) }
                guard partial.skip(wire) else { return 0 }
            }
        }
        return 0
    }
}

/// The bytes each part of an export takes, as ``ProtobufWriter`` writes it.
enum ProtobufSize {
    static func varint(_ value: UInt64) -> Int {
        value < 0x80 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    /// A length-delimited field of `body` bytes: its key, its length, its body.
    static func field(_ number: Int, _ body: Int) -> Int {
        varint(UInt64(number) << 3) + varint(UInt64(body)) + body
    }

    /// A string field, left out when empty (proto3's default).
    static func string(_ number: Int, _ text: String) -> Int {
        text.isEmpty ? 0 : field(number, text.utf8.count)
    }

    /// A `KeyValue`'s body, its key `keyBytes` long.
    static func attribute(keyBytes: Int, _ value: SpanAttribute.Value) -> Int {
        (keyBytes == 0 ? 0 : field(1, keyBytes)) + field(2, self.value(value))
    }

    /// An `AnyValue`'s body; its `oneof` is written even when it holds its type's default.
    static func value(_ value: SpanAttribute.Value) -> Int {
        switch value {
        case .string(let text): field(1, text.utf8.count)
        case .bool: 2
        case .int(let number): 1 + varint(UInt64(bitPattern: number))
        case .double: 9
        case .strings(let texts): field(5, texts.reduce(0) { $0 + field(1, self.value(.string($1))) })
        }
    }

    /// A `Status`'s body; nil when unset (not written).
    static func status(_ status: SpanRecord.Status) -> Int? {
        switch status {
        case .unset: nil
        case .ok: 2
        case .error(let description): string(2, description) + 2
        }
    }
}

/// Protobuf's wire format, as far as OTLP's messages need it, written front to back into
/// memory sized by ``ProtobufSize``.
struct ProtobufWriter {
    private(set) var position: UnsafeMutablePointer<UInt8>

    init(_ start: UnsafeMutablePointer<UInt8>) {
        position = start
    }

    mutating func byte(_ value: UInt8) {
        position.pointee = value
        position += 1
    }

    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            byte(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        byte(UInt8(rest))
    }

    /// A field's key: its number and wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32).
    mutating func tag(_ number: Int, _ wire: UInt64) {
        varint(UInt64(number) << 3 | wire)
    }

    /// A length-delimited field's key and length; its body follows.
    mutating func header(_ number: Int, _ length: Int) {
        tag(number, 2)
        varint(UInt64(length))
    }

    /// Moves past `count` bytes, to be written later.
    mutating func skip(_ count: Int) {
        position += count
    }

    /// `source`'s bytes as they are.
    mutating func bytes(_ source: UnsafeBufferPointer<UInt8>) {
        guard let base = source.baseAddress, !source.isEmpty else { return }
        position.update(from: base, count: source.count)
        position += source.count
    }

    /// `text`'s UTF-8 bytes.
    mutating func raw(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
            position.update(from: base, count: bytes.count)
            position += bytes.count
        }
    }

    /// A string field; the empty string, proto3's default, is not written.
    mutating func string(_ number: Int, _ text: String) {
        guard !text.isEmpty else { return }
        header(number, text.utf8.count)
        raw(text)
    }

    /// A `bytes` field of one 64-bit word, big-endian (a span's id).
    mutating func id(_ number: Int, _ word: UInt64) {
        header(number, 8)
        store(word.bigEndian)
    }

    /// A `bytes` field of two 64-bit words, big-endian (a trace's id).
    mutating func id(_ number: Int, _ high: UInt64, _ low: UInt64) {
        header(number, 16)
        store(high.bigEndian)
        store(low.bigEndian)
    }

    mutating func fixed64(_ number: Int, _ value: UInt64) {
        tag(number, 1)
        store(value.littleEndian)
    }

    mutating func fixed32(_ number: Int, _ value: UInt32) {
        tag(number, 5)
        store(value.littleEndian)
    }

    /// `value`'s bytes as they lie in memory (the caller orders them).
    private mutating func store<Word: FixedWidthInteger>(_ value: Word) {
        UnsafeMutableRawPointer(position).storeBytes(of: value, as: Word.self)
        position += MemoryLayout<Word>.size
    }

    /// A varint field; 0, the default, is not written.
    mutating func uint(_ number: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(number, 0)
        varint(value)
    }

    /// A `KeyValue`'s body: key = 1 (left out when empty), value = 2 (an `AnyValue`).
    mutating func attribute(key: UnsafeBufferPointer<UInt8>, _ value: SpanAttribute.Value) {
        if let base = key.baseAddress, !key.isEmpty {
            header(1, key.count)
            position.update(from: base, count: key.count)
            position += key.count
        }
        header(2, ProtobufSize.value(value))
        self.value(value)
    }

    /// `attributes` as repeated field `number` (below 16): their bytes copied, each one's key
    /// byte written for this field when it is not a span's.
    mutating func attributes(_ number: Int, _ attributes: SpanAttributes) {
        attributes.bytes.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
            position.update(from: base, count: bytes.count)
            if number != SpanAttributes.spanField {
                var entry = position
                let end = position + bytes.count
                while entry < end {
                    entry.pointee = UInt8(number << 3 | 2)
                    var next = 1
                    let length = ProtobufVarint.read(
                        UnsafeBufferPointer(start: UnsafePointer(entry), count: end - entry), at: &next)
                    entry += next + Int(length ?? 0)
                }
            }
            position += bytes.count
        }
    }

    /// An `AnyValue`'s body.
    mutating func value(_ value: SpanAttribute.Value) {
        switch value {
        case .string(let text):
            header(1, text.utf8.count)
            raw(text)
        case .bool(let flag):
            tag(2, 0)
            byte(flag ? 1 : 0)
        case .int(let number):
            tag(3, 0)
            varint(UInt64(bitPattern: number))
        case .double(let number):
            fixed64(4, number.bitPattern)
        case .strings(let texts):
            // array_value = 5: ArrayValue.values = 1
            header(5, texts.reduce(0) { $0 + ProtobufSize.field(1, ProtobufSize.value(.string($1))) })
            for text in texts {
                header(1, ProtobufSize.value(.string(text)))
                self.value(.string(text))
            }
        }
    }
}

/// Protobuf's base-128 varint, read.
enum ProtobufVarint {
    /// The varint at `offset` in `bytes`, `offset` moved past it; nil when it is cut short or
    /// longer than 64 bits.
    static func read(_ bytes: UnsafeBufferPointer<UInt8>, at offset: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count, shift < 64 {
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }
}

/// Reads protobuf's wire format: what a collector's answer needs.
struct ProtobufReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    mutating func varint() -> UInt64? {
        bytes.withUnsafeBufferPointer { ProtobufVarint.read($0, at: &offset) }
    }

    /// A little-endian fixed32 (wire type 5).
    mutating func fixed32() -> UInt32? { littleEndian() }

    /// A little-endian fixed64 (wire type 1).
    mutating func fixed64() -> UInt64? { littleEndian() }

    private mutating func littleEndian<Word: FixedWidthInteger & UnsignedInteger>() -> Word? {
        let size = Word.bitWidth / 8
        guard bytes.count - offset >= size else { return nil }
        defer { offset += size }
        return (0..<size).reduce(Word(0)) { $0 | Word(bytes[offset + $1]) << ($1 * 8) }
    }

    mutating func nextTag() -> (field: Int, wire: UInt64)? {
        guard offset < bytes.count, let key = varint(), key >> 3 > 0, key >> 3 <= UInt64(Int32.max) else {
            return nil
        }
        return (Int(key >> 3), key & 7)
    }

    mutating func lengthDelimited() -> [UInt8]? {
        guard let length = varint(), length <= UInt64(bytes.count - offset) else { return nil }
        defer { offset += Int(length) }
        return Array(bytes[offset..<offset + Int(length)])
    }

    /// Passes over a field of wire type `wire`; false when it cannot (a group, or a cut body).
    mutating func skip(_ wire: UInt64) -> Bool {
        switch wire {
        case 0: return varint() != nil
        case 1, 5:
            let width = wire == 1 ? 8 : 4
            guard bytes.count - offset >= width else { return false }
            offset += width
            return true
        case 2: return lengthDelimited() != nil
        default: return false
        }
    }
}
