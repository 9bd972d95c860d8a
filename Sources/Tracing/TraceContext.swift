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

    /// The `traceparent` value naming this span: `00-<trace>-<span>-<flags>`.
    package var traceparent: String {
        "00-" + traceID.hex + "-" + spanID.hex + (sampled ? "-01" : "-00")
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
    /// characters in all; nil otherwise (dropped, not passed on half-read).
    static func validTraceState(_ text: String) -> String? {
        let trimmed = text.utf8.count <= 512 ? text : ""
        guard !trimmed.isEmpty else { return nil }
        var members = 0
        for member in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
            let entry = member.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }
            if entry.isEmpty { continue }
            members += 1
            let text = String(entry.reversed())
            guard members <= 32, let equals = text.firstIndex(of: "="), equals != text.startIndex else { return nil }
            let key = text[..<equals].utf8
            let value = text[text.index(after: equals)...].utf8
            guard key.count <= 256, value.count >= 1, value.count <= 256,
                key.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || "_-*/@".utf8.contains($0) }
                ),
                value.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E && $0 != 0x2C && $0 != 0x3D }),
                value.last != 0x20
            else { return nil }
        }
        return members == 0 ? nil : trimmed
    }
}
