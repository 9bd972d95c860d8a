/// Base64url without padding (RFC 4648 §5): store tokens are written in it.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
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
}
