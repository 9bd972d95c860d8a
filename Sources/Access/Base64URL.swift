/// Base64url without padding (RFC 4648 §5): store tokens are written in it, and every part
/// of a JWT (RFC 7515 §2) is read with it.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each byte's 6-bit value, or 0xFF for a byte outside the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    package static func encode(_ bytes: some Collection<UInt8>) -> String {
        let bytes = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            for shift in [18, 12, 6, 0] { out.append(alphabet[Int(value >> UInt32(shift) & 0x3F)]) }
            index += 3
        }
        let left = bytes.count - index
        if left > 0 {
            var value = UInt32(bytes[index]) << 16
            if left == 2 { value |= UInt32(bytes[index + 1]) << 8 }
            let shifts = left == 1 ? [18, 12] : [18, 12, 6]
            for shift in shifts { out.append(alphabet[Int(value >> UInt32(shift) & 0x3F)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Standard base64 with padding (RFC 4648 §4): what App Attest's and Android's key ids are
    /// sent in.
    package static func encodeStandard(_ bytes: some Collection<UInt8>) -> String {
        var text = Array(encode(bytes).utf8).map { byte -> UInt8 in
            switch byte {
            case UInt8(ascii: "-"): return UInt8(ascii: "+")
            case UInt8(ascii: "_"): return UInt8(ascii: "/")
            default: return byte
            }
        }
        while text.count % 4 != 0 { text.append(UInt8(ascii: "=")) }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes `text` spells, or nil unless it is canonical unpadded base64url: only the
    /// alphabet (no `=`, `+`, `/` or blanks), a length that is not 1 more than a multiple
    /// of 4, and the unused low bits of the last character zero — so every byte string has
    /// exactly one spelling, and a JWT cannot be altered without changing its signature input.
    package static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        let count = text.count
        guard count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in text {
            let value = values[Int(byte)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // What is left are the padding bits of the last character: they must be zero.
        guard accumulator == 0 else { return nil }
        return out
    }

    /// The bytes `text` spells in standard, padded base64 (RFC 4648 §4), as Foundation's
    /// `base64EncodedString()` writes it; nil for anything else (base64url, blanks, missing
    /// or extra padding, non-zero unused bits).
    package static func decodeStandard(_ text: some Collection<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        var body = Array(text)
        var padding = 0
        while body.last == UInt8(ascii: "="), padding < 2 {
            body.removeLast()
            padding += 1
        }
        guard padding == 0 || body.count % 4 != 0 else { return nil }
        for index in body.indices {
            switch body[index] {
            case UInt8(ascii: "+"): body[index] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): body[index] = UInt8(ascii: "_")
            case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "="): return nil
            default: break
            }
        }
        return decode(body)
    }
}
