#if canImport(Glibc)
    import CEventLoop
    import Glibc
#endif

/// The C heap, as far as the process can steer it.
package enum Heap {
    /// Gives the free pages of every malloc arena back to the system (glibc's `malloc_trim`);
    /// true when some were. It walks each arena under that arena's lock, which can take
    /// milliseconds on a large heap: call it from a thread of its own, never from a loop.
    @discardableResult
    package static func trim() -> Bool {
        #if canImport(Glibc)
            return malloc_trim(0) != 0
        #else
            return false
        #endif
    }
}
