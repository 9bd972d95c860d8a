import Synchronization

/// A write-once slot for a metric child, read without a lock once filled.
package final class ChildSlot<Child: AnyObject & Sendable>: Sendable {
    private let reference = AtomicLazyReference<Child>()

    package init() {}

    /// The child, made (under its family's lock) on first use only.
    @inline(__always)
    package func child(_ make: () -> Child) -> Child {
        if let child = reference.load() { return child }
        return reference.storeIfNil(make())
    }
}
