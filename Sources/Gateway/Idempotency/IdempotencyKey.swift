import Crypto
import HTTP1

/// The `Idempotency-Key` request field (the IETF draft "The Idempotency-Key HTTP Header
/// Field"): 1–255 printable ASCII characters, as a bare token or a Structured Field string.
enum IdempotencyKey: Equatable, Sendable {
    case absent
    case key(String)
    /// Empty, too long, not printable ASCII, an unterminated or badly escaped string, or the
    /// field sent twice: `400 invalid_idempotency_key`.
    case invalid

    static let fieldName = "Idempotency-Key"
    static let maximumLength = 255

    static func read(_ headers: HTTPHeaders) -> IdempotencyKey {
        let values = headers.values(fieldName)
        guard let raw = values.first else { return .absent }
        guard values.count == 1 else { return .invalid }
        return parse(raw)
    }

    /// One field value: `"…"` (with `\"` and `\\` escapes, RFC 8941 §3.3.3) or a bare run
    /// of visible ASCII; surrounding spaces are not part of it.
    static func parse(_ raw: String) -> IdempotencyKey {
        var bytes = Array(raw.utf8)[...]
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes.removeFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
        var key: [UInt8] = []
        if bytes.first == UInt8(ascii: "\"") {
            guard bytes.count >= 2, bytes.last == UInt8(ascii: "\"") else { return .invalid }
            var inner = bytes.dropFirst().dropLast()
            while let byte = inner.popFirst() {
                switch byte {
                case UInt8(ascii: "\\"):
                    guard let escaped = inner.popFirst(), escaped == UInt8(ascii: "\"") || escaped == UInt8(ascii: "\\")
                    else { return .invalid }
                    key.append(escaped)
                case UInt8(ascii: "\""):
                    return .invalid
                case 0x20...0x7E:
                    key.append(byte)
                default:
                    return .invalid
                }
            }
        } else {
            guard bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else { return .invalid }
            key = Array(bytes)
        }
        guard (1...maximumLength).contains(key.count) else { return .invalid }
        return .key(String(decoding: key, as: UTF8.self))
    }

    /// SHA-256 of the method, the path and the body, each preceded by its length, so no two
    /// different requests share the bytes hashed; then, when the request's `Accept` asks for
    /// an event stream (which makes `/api/process` stream whatever its body says),
    /// `text/event-stream` as a fourth part. Without it a request hashes as it always did, so
    /// answers kept before still match their retries.
    static func fingerprint(method: String, path: String, body: [UInt8], eventStream: Bool = false) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(method.utf8.count + path.utf8.count + body.count + 56)
        var parts = [Array(method.utf8), Array(path.utf8), body]
        if eventStream { parts.append(Array("text/event-stream".utf8)) }
        for part in parts {
            withUnsafeBytes(of: UInt64(part.count).bigEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: part)
        }
        return SHA256.hash(bytes)
    }
}
