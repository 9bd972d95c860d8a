public import HTTP1

/// How the mock answers one request. Defaults come from the command line; each request can
/// override them with `X-Mock-*` headers or with a `[mock:key=value,...]` directive inside
/// its last user message (for callers, like the gateway, that do not pass headers through).
///
/// | key (header `X-Mock-<Key>`) | value |
/// |---|---|
/// | `latency-ms` | wait before answering (before the first event of a stream) |
/// | `status` | answer with this status and an OpenAI error body |
/// | `error-code` | the error body's `code` (e.g. `context_length_exceeded`) |
/// | `retry-after` | a `Retry-After` header on the error |
/// | `body` | `normal`, `garbage` (not JSON), `empty`, `no-content` (empty content), `no-choices` |
/// | `deltas` | pieces a stream is cut into |
/// | `delta-delay-ms` | pause between stream pieces |
/// | `cut-stream` | `clean` (end without `[DONE]`) or `abort` (drop the connection mid-stream) |
/// | `stream-error-after` | send an error event after this many pieces |
/// | `content` | the answer text |
public struct MockBehaviour: Sendable, Hashable {
    public enum BodyKind: String, Sendable, Hashable {
        case normal, garbage, empty
        case noContent = "no-content"
        case noChoices = "no-choices"
    }

    public enum StreamCut: String, Sendable, Hashable {
        case clean, abort
    }

    public var latencyMilliseconds = 0
    public var status = 200
    public var errorCode: String?
    public var retryAfter: String?
    public var body = BodyKind.normal
    public var deltas = 5
    public var deltaDelayMilliseconds = 10
    public var cutStream: StreamCut?
    public var streamErrorAfter: Int?
    public var content = "این یک پاسخ آزمایشی از سرویس شبیه‌سازی‌شده است که برای آزمون دروازه ساخته شده است."

    public init() {}

    /// Applies one `key=value` override; unknown keys and bad values are ignored.
    public mutating func apply(key: String, value: String) {
        switch key.lowercased() {
        case "latency-ms": latencyMilliseconds = max(0, Int(value) ?? latencyMilliseconds)
        case "status": status = Int(value).flatMap { (100...599).contains($0) ? $0 : nil } ?? status
        case "error-code": errorCode = value
        case "retry-after": retryAfter = value
        case "body": body = BodyKind(rawValue: value) ?? body
        case "deltas": deltas = max(1, min(10_000, Int(value) ?? deltas))
        case "delta-delay-ms": deltaDelayMilliseconds = max(0, Int(value) ?? deltaDelayMilliseconds)
        case "cut-stream": cutStream = StreamCut(rawValue: value)
        case "stream-error-after": streamErrorAfter = Int(value)
        case "content": content = value
        default: break
        }
    }

    /// This behaviour with the request's `X-Mock-*` headers applied.
    public func applying(headers: HTTPHeaders) -> MockBehaviour {
        var copy = self
        for field in headers where field.name.lowercased().hasPrefix("x-mock-") {
            copy.apply(key: String(field.name.dropFirst("x-mock-".count)), value: field.value)
        }
        return copy
    }

    /// This behaviour with a `[mock:key=value,...]` directive in `text` applied.
    public func applying(directivesIn text: String) -> MockBehaviour {
        guard let start = text.firstRange(of: "[mock:"), let end = text[start.upperBound...].firstIndex(of: "]") else { return self }
        var copy = self
        for pair in text[start.upperBound..<end].split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 {
                copy.apply(key: parts[0].trimmingSpaces, value: parts[1].trimmingSpaces)
            }
        }
        return copy
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
