/// The `ANDROID_ATTEST_*` settings (docs/android.md): which apps' Android phones may register
/// devices, on what state of the phone, and where the revocation list comes from.
package struct AndroidAttestSettings: Sendable, Equatable {
    /// `ANDROID_ATTEST_APPS`, `ANDROID_ATTEST_ALLOW_UNLOCKED`, `ANDROID_ATTEST_REQUIRE_STRONGBOX`
    /// and `ANDROID_ATTEST_MIN_PATCH_LEVEL`.
    package var policy: AndroidAttestationPolicy
    /// `ANDROID_ATTEST_REVOCATION_FILE`: Google's revocation list as a file, read at start and
    /// rewritten by each refresh from the URL.
    package var revocationFile: String?
    /// `ANDROID_ATTEST_REVOCATION_URL`: where the gateway refreshes the list from (Google's
    /// `https://android.googleapis.com/attestation/status`); never fetched per request.
    package var revocationURL: String?
    /// `ANDROID_ATTEST_REVOCATION_REFRESH_SECONDS`.
    package var revocationRefresh: Duration = .seconds(3600)
    /// `ANDROID_ATTEST_EXTRA_ROOT_CA_FILE` and its PEM: a root trusted beside Google's, for
    /// chains made in tests. The server refuses to start with it outside `--env testing`.
    package var extraRoot: (path: String, pem: String)?

    /// Google's list, the default of `ANDROID_ATTEST_REVOCATION_URL` in docs/android.md.
    package static let googleRevocationURL = "https://android.googleapis.com/attestation/status"

    package init(policy: AndroidAttestationPolicy) {
        self.policy = policy
    }

    package static func == (lhs: AndroidAttestSettings, rhs: AndroidAttestSettings) -> Bool {
        lhs.policy == rhs.policy && lhs.revocationFile == rhs.revocationFile && lhs.revocationURL == rhs.revocationURL
            && lhs.revocationRefresh == rhs.revocationRefresh && lhs.extraRoot?.path == rhs.extraRoot?.path
            && lhs.extraRoot?.pem == rhs.extraRoot?.pem
    }

    /// Whether `text` is an Android package name: two or more segments of letters, digits and
    /// `_` joined by dots, each starting with a letter, at most 255 characters.
    package static func isValidPackage(_ text: String) -> Bool {
        guard (3...255).contains(text.utf8.count) else { return false }
        let segments = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return segments.count >= 2
            && segments.allSatisfy { segment in
                guard let first = segment.first, Self.isLetter(first) else { return false }
                return segment.allSatisfy {
                    Self.isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_")
                }
            }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// The 32 bytes of a SHA-256 signing-certificate digest written as 64 hexadecimal digits,
    /// with or without the colons Play Console and `keytool` put between bytes; nil otherwise.
    package static func digest(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8.filter { $0 != UInt8(ascii: ":") })
        let colons = text.utf8.count - digits.count
        guard digits.count == 64, colons == 0 || colons == 31 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for index in stride(from: 0, to: 64, by: 2) {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
