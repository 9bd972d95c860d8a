/// Carries a loop-confined value across a `Sendable` boundary; every access checks that it
/// happens on the owning loop's thread.
package struct LoopBound<Value>: @unchecked Sendable {
    // Sendable because `_value` is read and written only on `loop`'s thread, which the
    // accessors check with a precondition.
    package let loop: EventLoop
    private let _value: Value

    /// Wraps `value`; must be called on `loop`.
    package init(_ value: Value, loop: EventLoop) {
        precondition(loop.inEventLoop, "LoopBound created off its loop")
        self.loop = loop
        self._value = value
    }

    /// Wraps a value created off the loop that no other thread references any more, so that
    /// from now on only `loop` touches it (for objects built before their loop runs them).
    package init(handingOver value: Value, to loop: EventLoop) {
        self.loop = loop
        self._value = value
    }

    /// The value; only on the owning loop.
    package var value: Value {
        precondition(loop.inEventLoop, "LoopBound used off its loop")
        return _value
    }

    /// The value when called on the owning loop, nil elsewhere (lets hot paths skip a closure).
    @inline(__always)
    package var valueIfInEventLoop: Value? {
        loop.inEventLoop ? _value : nil
    }

    /// Runs `body` with the value on the owning loop: at once when already there,
    /// otherwise through `execute`.
    package func withValue(_ body: @escaping @Sendable (Value) -> Void) {
        if loop.inEventLoop {
            body(_value)
        } else {
            loop.execute { body(self.value) }
        }
    }
}
