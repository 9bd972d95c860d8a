package import HTTP1

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
/// | `fail-first` | `status` applies only to the first this many requests the mock sees; later ones answer normally |
/// | `cut-body` | `on`: a non-streamed answer's head and half its body, then the connection drops |
/// | `body` | `normal`, `garbage` (not JSON), `empty`, `no-content` (empty content), `no-choices` |
/// | `deltas` | pieces a stream is cut into |
/// | `delta-delay-ms` | pause between stream pieces |
/// | `cut-stream` | `clean` (end without `[DONE]`) or `abort` (drop the connection mid-stream) |
/// | `stream-error-after` | send an error event after this many pieces |
/// | `content` | the answer text |
/// | `json` | with a `json_schema` `response_format`: `invalid`, `invalid-once` or `fenced` (below) |
/// | `provider-headers` | `on`: the fields a hosted API behind a CDN sends (``MockBehaviour/providerHeaderFields``) |
/// | `echo-request` | `on`: the answer's text is the request body as received, even when it offers tools |
///
/// `json`, read from every user message (``MockStructuredAnswer``): `invalid` is JSON that
/// breaks the schema, `invalid-once` breaks it only in a request without an assistant message
/// (the first call), `fenced` puts it in a ```` ```json ```` fence. `echo-request` lets a test
/// see what arrived upstream.
///
/// Beside these, the request itself shapes the answer as a provider's would: `n` choices,
/// and a call of the first tool (or the one `tool_choice` names) when it offers `tools`
/// and `tool_choice` is not `"none"`.
package struct MockBehaviour: Sendable, Hashable {
    package enum BodyKind: String, Sendable, Hashable {
        case normal, garbage, empty
        case noContent = "no-content"
        case noChoices = "no-choices"
    }

    package enum StreamCut: String, Sendable, Hashable {
        case clean, abort
    }

    package var latencyMilliseconds = 0
    package var status = 200
    package var errorCode: String?
    package var retryAfter: String?
    package var body = BodyKind.normal
    package var deltas = 5
    package var deltaDelayMilliseconds = 10
    package var cutStream: StreamCut?
    package var streamErrorAfter: Int?
    package var content = "این یک پاسخ آزمایشی از سرویس شبیه‌سازی‌شده است که برای آزمون دروازه ساخته شده است."
    package var providerHeaders = false
    package var json = MockStructuredAnswer.Mode.valid
    package var echoRequest = false
    package var failFirst: Int?
    package var cutBody = false

    /// What a hosted OpenAI-compatible API sends beside `Content-Type` (values made up, sizes
    /// typical): its request id and processing time, rate-limit counters, and its CDN's fields.
    package static let providerHeaderFields: [(name: String, value: String)] = [
        ("x-request-id", "req_5f0c9a7e2b3d4c1a8e6f7b9d0a1c2e3f"),
        ("openai-processing-ms", "412"),
        ("openai-version", "2020-10-01"),
        ("x-ratelimit-limit-requests", "10000"),
        ("x-ratelimit-limit-tokens", "2000000"),
        ("x-ratelimit-remaining-requests", "9999"),
        ("x-ratelimit-remaining-tokens", "1999580"),
        ("x-ratelimit-reset-requests", "6ms"),
        ("x-ratelimit-reset-tokens", "12ms"),
        ("strict-transport-security", "max-age=31536000; includeSubDomains; preload"),
        ("cf-cache-status", "DYNAMIC"),
        (
            "set-cookie",
            "__cf_bm=Zk1qX2c3Vn9Rb0tQdUx4Y2pNd0ZhS3RyT2xQbUZ6c1Q-1700000000-1.0.1.1-"
                + "aGVsbG8gd29ybGQgdGhpcyBpcyBhIG1vY2sgY29va2ll; path=/; expires=Tue, 14-Nov-23 22:43:20 GMT; "
                + "domain=.api.example.com; HttpOnly; Secure; SameSite=None"
        ),
        ("server", "cloudflare"),
        ("cf-ray", "8f3c2b1a9d7e4f21-FRA"),
        ("alt-svc", "h3=\":443\"; ma=86400"),
    ]

    package init() {}

    /// Applies one `key=value` override; unknown keys and bad values are ignored.
    package mutating func apply(key: String, value: String) {
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
        case "json": json = MockStructuredAnswer.Mode(rawValue: value) ?? json
        case "provider-headers": providerHeaders = ["on", "true", "1"].contains(value.lowercased())
        case "echo-request": echoRequest = ["on", "true", "1"].contains(value.lowercased())
        case "fail-first": failFirst = Int(value).map { max(0, $0) } ?? failFirst
        case "cut-body": cutBody = ["on", "true", "1"].contains(value.lowercased())
        default: break
        }
    }

    /// This behaviour with the request's `X-Mock-*` headers applied.
    package func applying(headers: HTTPHeaders) -> MockBehaviour {
        var copy = self
        for field in headers where field.name.lowercased().hasPrefix("x-mock-") {
            copy.apply(key: String(field.name.dropFirst("x-mock-".count)), value: field.value)
        }
        return copy
    }

    /// This behaviour with a `[mock:key=value,...]` directive in `text` applied.
    package func applying(directivesIn text: String) -> MockBehaviour {
        guard let start = text.firstRange(of: "[mock:"), let end = text[start.upperBound...].firstIndex(of: "]") else {
            return self
        }
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
