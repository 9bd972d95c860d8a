import CCrypto

/// Why a key could not be built, generated or used.
package struct CryptoError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What failed, followed by libcrypto's own messages when it left any.
    package let reason: String

    package var description: String { reason }

    /// `reason`, then the messages on this thread's libcrypto error queue, which this empties
    /// (so they are not reported again with a later error).
    init(_ reason: String) {
        let messages = Self.takeLibCryptoMessages()
        self.reason = messages.isEmpty ? reason : "\(reason) (libcrypto: \(messages.joined(separator: "; ")))"
    }

    private static func takeLibCryptoMessages() -> [String] {
        var messages: [String] = []
        var code = ERR_get_error()
        while code != 0 {
            // ERR_error_string_n needs 120 bytes at most for any code.
            let message = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
                ERR_error_string_n(code, buffer.baseAddress, buffer.count)
                return String(cString: buffer.baseAddress!)
            }
            messages.append(message)
            code = ERR_get_error()
        }
        return messages
    }
}
