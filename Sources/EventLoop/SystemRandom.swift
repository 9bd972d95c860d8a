#if canImport(Glibc)
import CEventLoop
import Glibc
#endif

/// The kernel's random source, many bytes per system call.
public enum SystemRandom {
    /// Fills `buffer` completely; false when the kernel could not (the caller falls back).
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) -> Bool {
        guard let base = buffer.baseAddress else { return true }
        var filled = 0
        while filled < buffer.count {
            let count = Syscall.retryingInterrupts { CEventLoop_getrandom(base + filled, UInt(buffer.count - filled)) }
            guard count > 0 else { return false }
            filled += count
        }
        return true
    }
}
