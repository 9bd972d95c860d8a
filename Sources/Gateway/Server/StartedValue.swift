import Synchronization

/// What a service makes when it starts (an open store, a client, a listening address), for
/// what is made after it in a later stage of the service group: read only once that start
/// succeeded.
final class StartedValue<Value: Sendable>: Sendable {
    private let state = Mutex<Value?>(nil)

    func set(_ value: Value) {
        state.withLock { $0 = value }
    }

    var value: Value {
        guard let value = state.withLock({ $0 }) else { preconditionFailure("read before its service started") }
        return value
    }
}
