#if canImport(Glibc)
    import Glibc
#endif

/// Whole writes to and bounded reads from a descriptor, for command-line tools (standard
/// input, output and error), so that they need no pointers of their own.
package enum StandardStreams {
    /// Writes all of `text`'s UTF-8 to `fd`, going on after short and interrupted writes;
    /// false when a write failed (a closed pipe, say).
    @discardableResult
    package static func write(_ text: String, to fd: CInt) -> Bool {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                Syscall.retryingInterrupts { Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset) }
            }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Reads `fd` until its end, or until more than `limit` bytes came (then the first
    /// `limit + 1`, so a caller can tell the input was too long).
    package static func read(_ fd: CInt, upTo limit: Int) -> [UInt8] {
        var input: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while input.count <= limit {
            let count = chunk.withUnsafeMutableBytes { buffer in
                Syscall.retryingInterrupts { Glibc.read(fd, buffer.baseAddress, buffer.count) }
            }
            guard count > 0 else { break }
            input += chunk[0..<count]
        }
        return input.count > limit + 1 ? Array(input.prefix(limit + 1)) : input
    }
}
