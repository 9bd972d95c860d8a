import Crypto

/// One configured caller: the SHA-256 digest of its bearer token, the user id and the plan
/// name.
///
/// The token itself is a secret the gateway never stores or logs; configuration only ever
/// holds its digest (`text-gateway token hash` prints it). Even the digest stays out of
/// ``description``, so a configured entry can be printed or logged as it is.
package struct CallerToken: Sendable, Hashable, CustomStringConvertible {
    /// The 32-byte SHA-256 digest of the token.
    let digest: [UInt8]
    /// The user the token was issued to: 1–128 of `[A-Za-z0-9._@+-]`.
    package let userID: String
    /// The plan name: 1–64 of `[A-Za-z0-9._-]`.
    package let plan: String

    /// An entry from the hex digest of a token (64 hexadecimal digits, either case), or `nil`
    /// when the digest, the user id or the plan name is malformed.
    package init?(hexDigest: String, userID: String, plan: String) {
        guard let digest = Self.decodeHexDigest(hexDigest),
            Self.isValidUserID(userID),
            Plan.isValidName(plan)
        else { return nil }
        self.init(digest: digest, userID: userID, plan: plan)
    }

    init(digest: [UInt8], userID: String, plan: String) {
        self.digest = digest
        self.userID = userID
        self.plan = plan
    }

    /// `CallerToken(userID: alice, plan: pro)`, never the digest.
    package var description: String {
        "CallerToken(userID: \(userID), plan: \(plan))"
    }

    /// The longest user id accepted.
    package static let maximumUserIDLength = 128

    /// Whether `text` is 1–128 of `[A-Za-z0-9._@+-]`: safe in a log line, and free of the
    /// separators the configuration formats use (`,`, `:`, blanks, `#`).
    package static func isValidUserID(_ text: String) -> Bool {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= maximumUserIDLength else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "+"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }

    /// The 32 bytes spelled by exactly 64 hexadecimal digits, or `nil`.
    static func decodeHexDigest(_ text: String) -> [UInt8]? {
        let bytes = Array(text.utf8)
        guard bytes.count == SHA256.digestByteCount * 2 else { return nil }
        var digest: [UInt8] = []
        digest.reserveCapacity(SHA256.digestByteCount)
        var index = 0
        while index < bytes.count {
            guard let high = hexValue(bytes[index]), let low = hexValue(bytes[index + 1]) else { return nil }
            digest.append(high << 4 | low)
            index += 2
        }
        return digest
    }

    /// A hex digit's value, either case; nil for any other byte.
    package static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
