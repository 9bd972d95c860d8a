#if canImport(Glibc)
    import CEventLoop
    import Glibc
#endif

/// Turns process signals into values a task can await: the handler only writes the signal
/// number to a pipe, and a thread of its own reads it. No work happens in the handler.
package final class SignalStream: Sendable {
    private let readFD: CInt

    /// Installs handlers for `signals` (e.g. `SIGTERM`, `SIGINT`). Call once, early.
    package init(_ signals: [Int32]) throws(IOError) {
        let fd = signals.withUnsafeBufferPointer { CEventLoop_signalPipe($0.baseAddress, Int32($0.count)) }
        guard fd >= 0 else { throw IOError(errnoCode: errno, reason: "sigaction") }
        readFD = fd
    }

    /// Waits for the next signal and returns its number.
    package func next() async -> Int32 {
        let fd = readFD
        return await DetachedThread.run {
            var byte: UInt8 = 0
            let count = Syscall.retryingInterrupts { Glibc.read(fd, &byte, 1) }
            return count == 1 ? Int32(byte) : 0
        }
    }
}
