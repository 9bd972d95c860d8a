/// Finished spans as an export sends them: each one a `ScopeSpans.spans` field (its key, its
/// length, its `Span`), back to back. A request's spans are written here as they are made,
/// with no span value on the way, and from there on only their bytes move: into the
/// exporter's queue, and into a batch's body.
package struct EncodedSpans: Sendable {
    private var storage: GrowingBytes
    /// How many spans there are.
    package private(set) var count = 0

    /// `ScopeSpans.spans`.
    static let spanField = 2

    package init(capacity: Int = 0) {
        storage = GrowingBytes(capacity: capacity)
    }

    /// `spans` encoded.
    package init(_ spans: [SpanRecord]) {
        self.init()
        for span in spans { append(span) }
    }

    package var isEmpty: Bool { count == 0 }

    package var byteCount: Int { storage.used }

    /// Writes a span: its identity and start here, the rest (attributes, events, links, its
    /// end and status) by `body`, straight into these bytes.
    package mutating func appendSpan(
        trace: TraceID, id: SpanID, parent: SpanID?, parentIsRemote: Bool = false, traceState: String,
        name: String, kind: SpanRecord.Kind, start: UInt64, _ body: (inout SpanBody) -> Void
    ) {
        let field = storage.beginField(Self.spanField)
        // The bytes are lent to the body, swapped rather than copied: kept unique, they are
        // written in place.
        var span = SpanBody(bytes: GrowingBytes(), start: start)
        swap(&span.bytes, &storage)
        let headSize =
            ProtobufSize.field(1, 16) + ProtobufSize.field(2, 8) + ProtobufSize.string(3, traceState)
            + (parent == nil ? 0 : ProtobufSize.field(4, 8)) + ProtobufSize.string(5, name) + 1
            + ProtobufSize.varint(UInt64(kind.rawValue)) + 2 * 9
        // Fields in their numbers' order, as protobuf writes them: the end (8) before the
        // attributes (9), its value stored once the body has set it.
        let endAt = span.bytes.used + headSize - 8
        span.bytes.write(headSize) { writer in
            writer.id(1, trace.high, trace.low)
            writer.id(2, id.value)
            writer.string(3, traceState)
            if let parent { writer.id(4, parent.value) }
            writer.string(5, name)
            writer.tag(6, 0)
            writer.varint(UInt64(kind.rawValue))
            writer.fixed64(7, start)
            writer.fixed64(8, start)
        }
        body(&span)
        span.bytes.store(max(start, span.end), at: endAt)
        let status = span.status
        let statusSize = ProtobufSize.status(status)
        // flags = 16 (a two-byte key): the W3C flags (sampled: every exported span is), and
        // whether the parent is known to be remote (SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK, _IS_REMOTE_MASK).
        span.bytes.write((statusSize.map { ProtobufSize.field(15, $0) } ?? 0) + 2 + 4) { writer in
            if let statusSize {
                writer.header(15, statusSize)
                switch status {
                case .unset: break
                case .ok: writer.uint(3, 1)
                case .error(let description):
                    writer.string(2, description)
                    writer.uint(3, 2)
                }
            }
            writer.fixed32(16, 0x101 | (parentIsRemote ? 0x200 : 0))
        }
        span.bytes.endField(field, number: Self.spanField)
        swap(&span.bytes, &storage)
        count += 1
    }

    /// Encodes `span` after the others.
    package mutating func append(_ span: SpanRecord) {
        appendSpan(
            trace: span.traceID, id: span.spanID, parent: span.parentSpanID, parentIsRemote: span.parentIsRemote,
            traceState: span.traceState, name: span.name, kind: span.kind, start: span.startNanoseconds
        ) { body in
            body.append(contentsOf: span.attributes)
            for event in span.events {
                body.event(event.name, at: event.timeNanoseconds, attributes: event.attributes)
            }
            for link in span.links {
                body.link(trace: link.traceID, span: link.spanID, sampled: link.sampled, attributes: link.attributes)
            }
            body.status = span.status
            body.end = span.endNanoseconds
        }
    }

    /// Adds the first `spans` spans of `other` after these.
    package mutating func append(contentsOf other: EncodedSpans, spans: Int) {
        let spans = min(spans, other.count)
        guard spans > 0 else { return }
        let bytes = spans == other.count ? other.byteCount : other.offset(ofSpan: spans)
        other.storage.withBytes { storage.append(UnsafeBufferPointer(rebasing: $0[0..<bytes])) }
        count += spans
    }

    /// Empties these, keeping the storage for what comes next.
    package mutating func removeAll() {
        storage.truncate(to: 0)
        count = 0
    }

    /// Keeps the first `spans` spans only; the storage stays for what comes next.
    package mutating func truncate(toSpans spans: Int) {
        guard spans < count else { return }
        storage.truncate(to: offset(ofSpan: spans))
        count = max(0, spans)
    }

    /// Takes the first `spans` spans out, keeping the rest.
    package mutating func removeFirst(_ spans: Int) {
        storage.removeFirst(spans < count ? offset(ofSpan: spans) : storage.used)
        count = max(0, count - spans)
    }

    /// Where span number `index` begins (the byte count for `index == count`), read from the
    /// spans' own lengths.
    func offset(ofSpan index: Int) -> Int {
        storage.withBytes { bytes in
            var offset = 0
            for _ in 0..<min(index, count) {
                var next = offset + 1
                guard let length = ProtobufVarint.read(bytes, at: &next) else { return bytes.count }
                offset = next + Int(length)
            }
            return offset
        }
    }

    /// The spans' bytes, as sent.
    func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        storage.withBytes(body)
    }
}

/// The part of a span written after its identity: attributes, then events, then links (the
/// order of their field numbers), straight into the span's bytes; its end and status.
package struct SpanBody: SpanAttributeSink {
    fileprivate var bytes: GrowingBytes
    /// Nanoseconds since the Unix epoch.
    package let start: UInt64
    /// The start until set (an end before the start is taken as it).
    package var end: UInt64
    package var status: SpanRecord.Status = .unset

    fileprivate init(bytes: GrowingBytes, start: UInt64) {
        self.bytes = bytes
        self.start = start
        end = start
    }

    package mutating func set(_ key: StaticString, _ value: String?) {
        if let value { bytes.attribute(SpanAttributes.spanField, key, value) }
    }

    package mutating func set(_ key: StaticString, _ value: Int?) {
        if let value { bytes.attribute(SpanAttributes.spanField, key, Int64(value)) }
    }

    package mutating func set(_ key: StaticString, _ value: SpanAttribute.Value) {
        key.withUTF8Buffer { bytes.attribute(SpanAttributes.spanField, key: $0, value) }
    }

    /// Attributes encoded before (an upstream's or a route's, made once).
    package mutating func append(contentsOf attributes: SpanAttributes) {
        attributes.withBytes { bytes.append($0) }
    }

    /// An event (field 11): its time, its name, its attributes (field 3).
    package mutating func event(_ name: String, at time: UInt64, attributes: SpanAttributes = []) {
        let body = 9 + ProtobufSize.string(2, name) + attributes.byteCount
        bytes.write(ProtobufSize.field(11, body)) { writer in
            writer.header(11, body)
            writer.fixed64(1, time)
            writer.string(2, name)
            writer.attributes(3, attributes)
        }
    }

    /// A link (field 13) to another span: its trace and span ids, its attributes (field 4), and
    /// the linked context's W3C flags with that it is not known to be remote (field 6).
    package mutating func link(trace: TraceID, span: SpanID, sampled: Bool, attributes: SpanAttributes = []) {
        let body = ProtobufSize.field(1, 16) + ProtobufSize.field(2, 8) + attributes.byteCount + 5
        bytes.write(ProtobufSize.field(13, body)) { writer in
            writer.header(13, body)
            writer.id(1, trace.high, trace.low)
            writer.id(2, span.value)
            writer.attributes(4, attributes)
            writer.fixed32(6, 0x100 | (sampled ? 1 : 0))
        }
    }
}
