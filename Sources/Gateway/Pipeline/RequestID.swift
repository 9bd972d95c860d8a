import EventLoop
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Request ids: an inbound `X-Request-Id` of 1–128 of `[A-Za-z0-9._-]` is kept, anything
/// else is replaced by a new UUID of version 7 (RFC 9562: the Unix time in milliseconds, then
/// 74 random bits). Ids that grow with time keep the store's index of them append-mostly.
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

    /// A version-7 UUID in upper-case canonical form, for the time `milliseconds` since the epoch.
    static func make(milliseconds: UInt64 = currentMilliseconds()) -> String {
        var (high, low) = randomBytes.next128()
        // 48 bits of time, the version (7) in byte 6, 12 random bits.
        high = (milliseconds & 0xFFFF_FFFF_FFFF) << 16 | 0x7000 | (high & 0x0FFF)
        low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000 // RFC 4122 variant (byte 8)
        var text = [UInt8](repeating: UInt8(ascii: "-"), count: 36)
        var at = 0
        func put(_ word: UInt64, bytes: Range<Int>) {
            for index in bytes {
                if index == 4 || index == 6 || index == 8 || index == 10 { at += 1 } // a dash
                let byte = UInt8(truncatingIfNeeded: word >> (8 * (7 - (index & 7))))
                text[at] = hexDigit(byte >> 4)
                text[at + 1] = hexDigit(byte & 0x0F)
                at += 2
            }
        }
        put(high, bytes: 0..<8)
        put(low, bytes: 8..<16)
        return String(decoding: text, as: UTF8.self)
    }

    static func currentMilliseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return UInt64(max(0, time.tv_sec)) * 1000 + UInt64(max(0, time.tv_nsec)) / 1_000_000
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
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

    /// 16 random bytes, as two big-endian words (byte 0 is the high byte of the first).
    func next128() -> (UInt64, UInt64) {
        buffer.withLock { buffer in
            if buffer.offset + 16 > buffer.bytes.count {
                buffer.bytes = SystemRandom.bytes(4096)
                buffer.offset = 0
            }
            defer { buffer.offset += 16 }
            return (Self.word(buffer.bytes, at: buffer.offset), Self.word(buffer.bytes, at: buffer.offset + 8))
        }
    }

    private static func word(_ bytes: [UInt8], at offset: Int) -> UInt64 {
        var word: UInt64 = 0
        for index in offset..<(offset + 8) { word = word << 8 | UInt64(bytes[index]) }
        return word
    }
}
