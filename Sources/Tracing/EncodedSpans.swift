import EventLoop

/// Finished spans as an export sends them: each one a `ScopeSpans.spans` field (its key, its
/// length, its `Span`), back to back. A request's spans are encoded once when it ends, and
/// from there on only their bytes move: into the exporter's queue, and into a batch's body.
package struct EncodedSpans: Sendable {
    /// Written in place: the storage grows ahead of need, and only its first ``byteCount``
    /// bytes are spans.
    private var storage: [UInt8] = []
    package private(set) var byteCount = 0
    /// How many spans there are.
    package private(set) var count = 0

    /// `ScopeSpans.spans = 2`, length-delimited: every span's first byte.
    static let spanKey: UInt8 = 2 << 3 | 2

    package init() {}

    /// `spans` encoded into one buffer of exactly their size.
    package init(_ spans: [SpanRecord]) {
        reserve(spans.reduce(0) { $0 + ProtobufSize.field(2, ProtobufSize.span($1)) })
        for span in spans { append(span) }
    }

    package var isEmpty: Bool { count == 0 }

    /// Encodes `span` after the others.
    package mutating func append(_ span: SpanRecord) {
        let body = ProtobufSize.span(span)
        let size = ProtobufSize.field(2, body)
        reserve(size)
        let start = byteCount
        storage.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var writer = ProtobufWriter(base + start)
            writer.header(2, body)
            writer.span(span)
            // The sizes and the writing describe the same message; a difference is a bug here.
            precondition(writer.position - (base + start) == size, "span encoding wrote the wrong size")
        }
        byteCount += size
        count += 1
    }

    /// Adds the first `spans` spans of `other` after these.
    package mutating func append(contentsOf other: EncodedSpans, spans: Int) {
        let spans = min(spans, other.count)
        guard spans > 0 else { return }
        let bytes = spans == other.count ? other.byteCount : other.offset(ofSpan: spans)
        reserve(bytes)
        let start = byteCount
        storage.withUnsafeMutableBufferPointer { buffer in
            other.storage.withUnsafeBufferPointer { source in
                guard let base = buffer.baseAddress, let from = source.baseAddress else { return }
                (base + start).update(from: from, count: bytes)
            }
        }
        byteCount += bytes
        count += spans
    }

    /// Takes the first `spans` spans out, keeping the rest.
    package mutating func removeFirst(_ spans: Int) {
        guard spans < count else {
            byteCount = 0
            count = 0
            return
        }
        let cut = offset(ofSpan: spans)
        let left = byteCount - cut
        storage.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            base.update(from: base + cut, count: left)
        }
        byteCount = left
        count -= spans
    }

    /// Where span number `index` begins (the byte count for `index == count`), read from the
    /// spans' own lengths.
    func offset(ofSpan index: Int) -> Int {
        storage.withUnsafeBufferPointer { bytes in
            var offset = 0
            for _ in 0..<min(index, count) {
                var next = offset + 1
                guard let length = ProtobufVarint.read(bytes, at: &next) else { return byteCount }
                offset = next + Int(length)
            }
            return offset
        }
    }

    /// The spans' bytes, as sent.
    func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        storage.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[0..<byteCount])) }
    }

    /// Room for `bytes` more bytes, growing by at least half (a queue takes many small appends).
    private mutating func reserve(_ bytes: Int) {
        let needed = byteCount + bytes
        guard storage.count < needed else { return }
        let capacity = storage.isEmpty ? needed : max(needed, storage.count + storage.count / 2)
        storage.appendZeros(capacity - storage.count)
    }
}
