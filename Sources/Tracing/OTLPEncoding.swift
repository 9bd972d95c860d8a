/// The body of an OTLP/HTTP traces export: an `ExportTraceServiceRequest`
/// (opentelemetry/proto/collector/trace/v1) in protobuf's binary encoding, written by hand
/// (the few messages it needs, nothing generated).
package enum OTLPEncoding {
    /// One resource (the gateway's attributes: `service.name`, …), one instrumentation scope,
    /// and `spans`.
    package static func exportRequest(
        resource: [SpanAttribute], scope: (name: String, version: String), spans: [SpanRecord]
    ) -> [UInt8] {
        // About 400 bytes a span: room for the batch at once.
        var request = ProtobufWriter(capacity: 256 + spans.count * 512)
        // ExportTraceServiceRequest.resource_spans = 1
        request.message(1) { resourceSpans in
            // ResourceSpans.resource = 1: Resource.attributes = 1
            resourceSpans.message(1) { message in
                for attribute in resource { message.attribute(1, attribute) }
            }
            // ResourceSpans.scope_spans = 2
            resourceSpans.message(2) { scopeSpans in
                // ScopeSpans.scope = 1: InstrumentationScope.name = 1, .version = 2
                scopeSpans.message(1) {
                    $0.string(1, scope.name)
                    $0.string(2, scope.version)
                }
                // ScopeSpans.spans = 2
                for span in spans { scopeSpans.message(2) { $0.span(span) } }
            }
        }
        return request.bytes
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

/// Protobuf's wire format, as far as OTLP's messages need it, written in one buffer: a nested
/// message is written in place and its length put before it afterwards (one byte is kept for
/// it, enough below 128 bytes; a longer message moves up by the few bytes more it needs), so
/// encoding a batch allocates little more than the buffer itself.
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// A field's key: its number and wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32).
    mutating func tag(_ field: Int, _ wire: UInt64) {
        varint(UInt64(field) << 3 | wire)
    }

    /// A string field; the empty string, proto3's default, is not written.
    mutating func string(_ field: Int, _ value: String) {
        guard !value.isEmpty else { return }
        lengthDelimited(field, value.utf8)
    }

    mutating func lengthDelimited(_ field: Int, _ value: some Collection<UInt8>) {
        tag(field, 2)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A `bytes` field of one or two 64-bit words, big-endian (a span's or a trace's id).
    mutating func id(_ field: Int, _ words: UInt64...) {
        tag(field, 2)
        varint(UInt64(words.count * 8))
        for word in words {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
    }

    mutating func fixed64(_ field: Int, _ value: UInt64) {
        tag(field, 1)
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func fixed32(_ field: Int, _ value: UInt32) {
        tag(field, 5)
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    /// A varint field; 0, the default, is not written.
    mutating func uint(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, 0)
        varint(value)
    }

    /// An embedded message, written by `body` in place, its length put before it.
    mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        tag(field, 2)
        let lengthAt = bytes.count
        bytes.append(0)
        body(&self)
        var length = bytes.count - lengthAt - 1
        guard length >= 0x80 else {
            bytes[lengthAt] = UInt8(length)
            return
        }
        // The varint of a longer length: its first byte where the one was kept, the rest inserted after it.
        bytes[lengthAt] = UInt8(truncatingIfNeeded: length) | 0x80
        length >>= 7
        var at = lengthAt + 1
        while length > 0 {
            bytes.insert(UInt8(truncatingIfNeeded: length) | (length >= 0x80 ? 0x80 : 0), at: at)
            length >>= 7
            at += 1
        }
    }

    /// A `KeyValue` (key = 1, value = 2, an `AnyValue`) as field `field`, its sizes worked out
    /// first: an attribute is written straight through, with nothing to move.
    mutating func attribute(_ field: Int, _ attribute: SpanAttribute) {
        let keyCount = attribute.key.utf8.count
        let valueSize = Self.size(attribute.value)
        let keySize = keyCount == 0 ? 0 : 1 + Self.varintSize(UInt64(keyCount)) + keyCount
        tag(field, 2)
        varint(UInt64(keySize + 1 + Self.varintSize(UInt64(valueSize)) + valueSize))
        string(1, attribute.key)
        tag(2, 2)
        varint(UInt64(valueSize))
        anyValue(attribute.value)
    }

    /// The bytes a varint of `value` takes.
    static func varintSize(_ value: UInt64) -> Int {
        value < 0x80 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    /// The bytes ``anyValue(_:)`` writes for `value`.
    static func size(_ value: SpanAttribute.Value) -> Int {
        switch value {
        case .string(let text):
            let count = text.utf8.count
            return 1 + varintSize(UInt64(count)) + count
        case .bool: return 2
        case .int(let number): return 1 + varintSize(UInt64(bitPattern: number))
        case .double: return 9
        case .strings(let texts):
            let inner = texts.reduce(0) { total, text in
                let one = size(.string(text))
                return total + 1 + varintSize(UInt64(one)) + one
            }
            return 1 + varintSize(UInt64(inner)) + inner
        }
    }

    /// An `AnyValue`, whose `oneof` is written even when it holds its type's default.
    mutating func anyValue(_ value: SpanAttribute.Value) {
        switch value {
        case .string(let text):
            lengthDelimited(1, text.utf8)
        case .bool(let flag):
            tag(2, 0)
            varint(flag ? 1 : 0)
        case .int(let number):
            tag(3, 0)
            varint(UInt64(bitPattern: number))
        case .double(let number):
            fixed64(4, number.bitPattern)
        case .strings(let texts):
            // array_value = 5: ArrayValue.values = 1
            message(5) { array in
                for text in texts { array.message(1) { $0.anyValue(.string(text)) } }
            }
        }
    }

    /// A `Span` (opentelemetry/proto/trace/v1).
    mutating func span(_ span: SpanRecord) {
        id(1, span.traceID.high, span.traceID.low)
        id(2, span.spanID.value)
        string(3, span.traceState)
        if let parent = span.parentSpanID { id(4, parent.value) }
        string(5, span.name)
        uint(6, UInt64(span.kind.rawValue))
        fixed64(7, span.startNanoseconds)
        fixed64(8, span.endNanoseconds)
        for attribute in span.attributes { self.attribute(9, attribute) }
        for event in span.events {
            message(11) { message in
                message.fixed64(1, event.timeNanoseconds)
                message.string(2, event.name)
                for attribute in event.attributes { message.attribute(3, attribute) }
            }
        }
        for link in span.links {
            message(13) { message in
                message.id(1, link.traceID.high, link.traceID.low)
                message.id(2, link.spanID.value)
                for attribute in link.attributes { message.attribute(4, attribute) }
                // The linked context's W3C flags, and that it is not known to be remote.
                message.fixed32(6, 0x100 | (link.sampled ? 1 : 0))
            }
        }
        switch span.status {
        case .unset: break
        case .ok: message(15) { $0.uint(3, 1) }
        case .error(let description):
            message(15) {
                $0.string(2, description)
                $0.uint(3, 2)
            }
        }
        // flags = 16: the W3C flags (sampled: every exported span is), and whether the parent
        // is known to be remote (SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK, _IS_REMOTE_MASK).
        fixed32(16, 0x101 | (span.parentIsRemote ? 0x200 : 0))
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

    /// A little-endian fixed32 (wire type 5).
    mutating func fixed32() -> UInt32? {
        guard bytes.count - offset >= 4 else { return nil }
        defer { offset += 4 }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << UInt32($1 * 8) }
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
