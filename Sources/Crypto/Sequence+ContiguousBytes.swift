extension Sequence<UInt8> {
    /// Calls `body` with the bytes in contiguous memory: in place when the sequence keeps
    /// them so (arrays, native strings' UTF-8), otherwise copied once. The buffer's base
    /// address is never nil, even when it is empty, so C callees always get a valid pointer.
    ///
    /// Inlinable, as are the public entry points that call it: specialised in the caller for
    /// its concrete sequence, the generic path costs nothing; left generic, finding the
    /// metadata it needs costs more than hashing a short token.
    @inlinable
    func withContiguousBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = withContiguousStorageIfAvailable({ withBaseAddress($0, body) }) { return result }
        return Array(self).withUnsafeBufferPointer { withBaseAddress($0, body) }
    }
}

/// `body(buffer)`, with a buffer that has a base address even when it is empty.
@inlinable
func withBaseAddress<Result>(
    _ buffer: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> Result
) -> Result {
    guard buffer.baseAddress == nil else { return body(buffer) }
    var byte: UInt8 = 0
    return withUnsafePointer(to: &byte) { body(UnsafeBufferPointer(start: $0, count: 0)) }
}
