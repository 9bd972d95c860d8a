import Synchronization

/// A trace's id: 16 bytes, never all zero (W3C Trace Context, §3.2.2.3).
package struct TraceID: Sendable, Hashable {
    package let high: UInt64
    package let low: UInt64

    package init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A new random id (the whole of it random, so the last 7 bytes are too, as the W3C
    /// `random` flag and ratio sampling expect).
    package static func random() -> TraceID {
        while true {
            let id = TraceID(high: IDGenerator.next(), low: IDGenerator.next())
            if id.isValid { return id }
        }
    }

    package var isValid: Bool { high != 0 || low != 0 }

    /// 32 lower-case hex digits.
    package var hex: String { Hex.string(high) + Hex.string(low) }

    /// The id's 16 bytes, as OTLP carries them.
    package var bytes: [UInt8] { Hex.bytes(high) + Hex.bytes(low) }

    /// 32 lower-case hex digits, not all zero.
    package init?(hex text: some Collection<UInt8>) {
        guard text.count == 32, let high = Hex.value(text.prefix(16)), let low = Hex.value(text.dropFirst(16)) else {
            return nil
        }
        self.init(high: high, low: low)
        guard isValid else { return nil }
    }
}

/// A span's id: 8 bytes, never all zero.
package struct SpanID: Sendable, Hashable {
    package let value: UInt64

    package init(_ value: UInt64) {
        self.value = value
    }

    package static func random() -> SpanID {
        while true {
            let value = IDGenerator.next()
            if value != 0 { return SpanID(value) }
        }
    }

    /// 16 lower-case hex digits.
    package var hex: String { Hex.string(value) }

    package var bytes: [UInt8] { Hex.bytes(value) }

    /// 16 lower-case hex digits, not all zero.
    package init?(hex text: some Collection<UInt8>) {
        guard text.count == 16, let value = Hex.value(text), value != 0 else { return nil }
        self.init(value)
    }
}

/// Where ids come from: splitmix64 over one atomic counter, seeded once from the system's
/// randomness. An id is a lock-free add and a few multiplications, not a `getrandom` call
/// (which every request would pay, sampled or not); ids need to be unique and evenly spread
/// (the ratio sampler reads their bits), not secret.
enum IDGenerator {
    private static let state = Atomic<UInt64>(UInt64.random(in: .min ... .max))

    static func next() -> UInt64 {
        var mixed = state.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

enum Hex {
    static func string(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            write(value, into: buffer, at: 0)
            return 16
        }
    }

    /// `value`'s 16 lower-case hex digits into `buffer` from `offset` on.
    static func write(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        guard let base = buffer.baseAddress, offset >= 0, offset + 16 <= buffer.count else { return }
        var rest = value
        var index = offset + 15
        // Last digit first, each from a table: no branch a digit.
        digits.withUTF8Buffer { digits in
            for _ in 0..<16 {
                base[index] = digits[Int(rest & 0xF)]
                rest >>= 4
                index -= 1
            }
        }
    }

    private static let digits: StaticString = "0123456789abcdef"

    static func bytes(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> UInt64(56 - $0 * 8)) }
    }

    /// A hex digit of either case (a percent escape's); nil for any other byte.
    static func digit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// Lower-case hex digits only (W3C: upper case is invalid), at most 16.
    static func value(_ text: some Collection<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        for byte in text {
            let digit: UInt8
            switch byte {
            case 0x30...0x39: digit = byte - 0x30
            case 0x61...0x66: digit = byte - 0x61 + 10
            default: return nil
            }
            value = value << 4 | UInt64(digit)
        }
        return value
    }
}
