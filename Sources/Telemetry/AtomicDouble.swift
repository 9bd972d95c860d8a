import Synchronization

/// Lock-free arithmetic on a `Double` stored as its bit pattern in an `Atomic<UInt64>`.
enum AtomicDouble {
    /// Adds `amount` with a compare-and-exchange loop.
    static func add(_ amount: Double, to bits: borrowing Atomic<UInt64>) {
        var current = bits.load(ordering: .relaxed)
        while true {
            let next = (Double(bitPattern: current) + amount).bitPattern
            let (exchanged, original) = bits.weakCompareExchange(
                expected: current,
                desired: next,
                ordering: .relaxed
            )
            if exchanged { return }
            current = original
        }
    }
}
