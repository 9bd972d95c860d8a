#if canImport(Glibc)
    import Glibc
#endif

extension Array where Element == UInt8 {
    /// Adds `count` zero bytes, to be written over in place (a buffer sized before it is
    /// written). `Array(repeating:count:)` and `Array(unsafeUninitializedCapacity:)` allocate
    /// through an unspecialised path of the standard library that looks up the storage's type
    /// at run time on every call, hundreds of instructions; `reserveCapacity` is inlined, and
    /// the zeros are copied from a block of them, not written a byte at a time.
    public mutating func appendZeros(_ count: Int) {
        guard count > 0 else { return }
        reserveCapacity(self.count + count)
        var left = count
        while left > 0 {
            let step = Swift.min(left, ZeroBlock.size)
            append(contentsOf: UnsafeBufferPointer(start: ZeroBlock.bytes, count: step))
            left -= step
        }
    }
}

/// A block of zero bytes that is never written, allocated once.
private enum ZeroBlock {
    static let size = 4096
    nonisolated(unsafe) static let bytes: UnsafePointer<UInt8> = {
        guard let block = calloc(size, 1) else { fatalError("calloc of \(size) bytes failed") }
        return UnsafePointer(block.assumingMemoryBound(to: UInt8.self))
    }()
}
