#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Synchronization

/// Request ids: an inbound `X-Request-Id` of 1–128 of `[A-Za-z0-9._-]` is kept, anything
/// else is replaced by a new random UUID.
enum RequestID {
    static func accept(_ inbound: String?) -> String {
        if let inbound, isWellFormed(inbound) { return inbound }
        return make()
    }

    static func isWellFormed(_ value: String) -> Bool {
        let utf8 = value.utf8
        guard (1...128).contains(utf8.count) else { return false }
        return utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    /// A version-4 UUID in upper-case canonical form.
    static func make() -> String {
        var bytes = randomBytes.next16()
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = Array("0123456789ABCDEF".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static let randomBytes = RandomPool()
}

/// Random bytes fetched from the system a page at a time: a request id costs no system call
/// (the system generator reads the kernel's random source on every call).
private final class RandomPool: Sendable {
    private struct Buffer: ~Copyable {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var offset = 4096
    }
    private let buffer = Mutex(Buffer())

    func next16() -> [UInt8] {
        buffer.withLock { buffer in
            if buffer.offset + 16 > buffer.bytes.count {
                buffer.bytes.withUnsafeMutableBytes { raw in
                    if !SystemRandom.fill(raw) {  // unavailable: the generator's own path
                        var random = SystemRandomNumberGenerator()
                        for index in stride(from: 0, to: raw.count, by: 8) {
                            raw.storeBytes(of: random.next(), toByteOffset: index, as: UInt64.self)
                        }
                    }
                }
                buffer.offset = 0
            }
            defer { buffer.offset += 16 }
            return Array(buffer.bytes[buffer.offset..<buffer.offset + 16])
        }
    }
}
