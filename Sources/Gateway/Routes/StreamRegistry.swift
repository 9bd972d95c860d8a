import Synchronization

/// The streams being answered, so a shutdown can end each with a last event.
final class StreamRegistry: Sendable {
    private let streams = Mutex<[ObjectIdentifier: StreamControl]>([:])

    /// Runs a stream while it is known to ``endAll()``.
    func withRegistered<T>(_ control: StreamControl, _ body: () async throws -> T) async rethrows -> T {
        let key = ObjectIdentifier(control)
        streams.withLock { $0[key] = control }
        defer { _ = streams.withLock { $0.removeValue(forKey: key) } }
        return try await body()
    }

    /// Ends every stream in flight with an `error` event (`shutting_down`).
    func endAll() {
        for control in streams.withLock({ Array($0.values) }) { control.end(.shutdown) }
    }
}
