#if canImport(Glibc)
    import CEventLoop
    import Glibc
#endif

/// The kernel's random source, many bytes per system call.
package enum SystemRandom {
    /// Fills `buffer` completely; false when the kernel could not (the caller falls back).
    package static func fill(_ buffer: UnsafeMutableRawBufferPointer) -> Bool {
        guard let base = buffer.baseAddress else { return true }
        var filled = 0
        while filled < buffer.count {
            let count = Syscall.retryingInterrupts { CEventLoop_getrandom(base + filled, UInt(buffer.count - filled)) }
            guard count > 0 else { return false }
            filled += count
        }
        return true
    }

    /// `count` random bytes from the kernel, or from the standard library's generator when
    /// the kernel cannot give them.
    package static func bytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let filled = bytes.withUnsafeMutableBytes { fill($0) }
        if !filled {
            var random = SystemRandomNumberGenerator()
            for index in bytes.indices { bytes[index] = random.next() }
        }
        return bytes
    }
}
