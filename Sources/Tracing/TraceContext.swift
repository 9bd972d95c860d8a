/// Where a span stands in its trace, as W3C Trace Context carries it between processes: the
/// trace, the span that is the parent of the next one, the flags (`sampled`), and the vendors'
/// `tracestate`.
package struct TraceContext: Sendable, Hashable {
    package var traceID: TraceID
    package var spanID: SpanID
    package var sampled: Bool
    /// `tracestate`, passed on as it came (empty when there was none, or it was invalid).
    package var traceState: String

    package init(traceID: TraceID, spanID: SpanID, sampled: Bool, traceState: String = "") {
        self.traceID = traceID
        self.spanID = spanID
        self.sampled = sampled
        self.traceState = traceState
    }

    /// The `traceparent` value naming this span: `00-<trace>-<span>-<flags>`, written in one
    /// allocation (every traced upstream call sends one).
    package var traceparent: String {
        String(unsafeUninitializedCapacity: 55) { buffer in
            buffer[0] = 0x30
            buffer[1] = 0x30
            buffer[2] = 0x2D
            Hex.write(traceID.high, into: buffer, at: 3)
            Hex.write(traceID.low, into: buffer, at: 19)
            buffer[35] = 0x2D
            Hex.write(spanID.value, into: buffer, at: 36)
            buffer[52] = 0x2D
            buffer[53] = 0x30
            buffer[54] = sampled ? 0x31 : 0x30
            return 55
        }
    }

    /// A `traceparent` field's value (W3C Trace Context §3.2), and a `tracestate` one that is
    /// kept only when it is a valid list (§3.3); nil for a `traceparent` that is not valid,
    /// which the caller then treats as absent (a new trace starts).
    ///
    /// Version `00` is exactly 55 characters; a later version is read by its first four fields
    /// when what follows them starts with `-` (§3.2.4); version `ff` is invalid.
    package init?(traceparent: String, tracestate: String? = nil) {
        let bytes = Array(traceparent.utf8)
        guard bytes.count >= 55, bytes[2] == 0x2D, bytes[35] == 0x2D, bytes[52] == 0x2D,
            let version = Hex.value(bytes[0..<2]), version != 0xFF,
            let traceID = TraceID(hex: bytes[3..<35]), let spanID = SpanID(hex: bytes[36..<52]),
            let flags = Hex.value(bytes[53..<55])
        else { return nil }
        if version == 0 {
            guard bytes.count == 55 else { return nil }
        } else if bytes.count > 55, bytes[55] != 0x2D {
            return nil
        }
        self.init(
            traceID: traceID, spanID: spanID, sampled: flags & 1 == 1,
            traceState: tracestate.flatMap(Self.validTraceState) ?? "")
    }

    /// `tracestate` when it is a list of at most 32 `key=value` members (§3.3.1) of at most 512
    /// characters in all, each key once; nil otherwise (dropped, not passed on half-read).
    static func validTraceState(_ text: String) -> String? {
        guard !text.isEmpty, text.utf8.count <= 512 else { return nil }
        var keys: Set<Substring> = []
        for member in text.split(separator: ",", omittingEmptySubsequences: false) {
            // Optional white space around a member (OWS: spaces and tabs).
            let trimmed = member.trimmingSpacesAndTabs
            if trimmed.isEmpty { continue }
            guard keys.count < 32, let equals = trimmed.firstIndex(of: "="),
                isKey(trimmed[..<equals]), isValue(trimmed[trimmed.index(after: equals)...]),
                keys.insert(trimmed[..<equals]).inserted
            else { return nil }
        }
        return keys.isEmpty ? nil : text
    }

    /// `simple-key` (a lower-case letter, then at most 255 of `a-z0-9_-*/`) or
    /// `tenant-id@system-id` (a letter or digit and at most 240 more; a letter and at most 13 more).
    static func isKey(_ key: Substring) -> Bool {
        let bytes = Array(key.utf8)
        func rest(_ part: ArraySlice<UInt8>) -> Bool {
            part.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || "_-*/".utf8.contains($0) }
        }
        func letter(_ byte: UInt8) -> Bool { byte >= 0x61 && byte <= 0x7A }
        guard let at = bytes.firstIndex(of: 0x40) else {
            return !bytes.isEmpty && bytes.count <= 256 && letter(bytes[0]) && rest(bytes[1...])
        }
        let tenant = bytes[..<at]
        let system = bytes[(at + 1)...]
        guard let first = tenant.first, let systemFirst = system.first else { return false }
        return tenant.count <= 241 && (letter(first) || (first >= 0x30 && first <= 0x39)) && rest(tenant.dropFirst())
            && system.count <= 14 && letter(systemFirst) && rest(system.dropFirst())
    }

    /// 1 to 256 printable ASCII characters but `,` and `=`, not ending in a space.
    static func isValue(_ value: Substring) -> Bool {
        let bytes = value.utf8
        return !bytes.isEmpty && bytes.count <= 256 && bytes.last != 0x20
            && bytes.allSatisfy { $0 >= 0x20 && $0 <= 0x7E && $0 != 0x2C && $0 != 0x3D }
    }
}

extension Substring {
    /// Without the spaces and tabs around it (HTTP's optional white space, OWS).
    var trimmingSpacesAndTabs: Substring {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}
