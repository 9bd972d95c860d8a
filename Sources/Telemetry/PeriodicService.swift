import EventLoop
import Synchronization

/// Work repeated every `interval` while the gateway runs (polling the store for token
/// changes, purging old history), as a service: started after what it uses, stopped
/// before it. A run that fails is its `body`'s to count and log; the next one comes anyway.
package final class PeriodicService: Service {
    let name: String
    private let interval: Duration
    private let immediately: Bool
    private let body: @Sendable () async -> Void
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// `immediately`: the first run comes at start, not one interval after it.
    package init(name: String, interval: Duration, immediately: Bool, body: @escaping @Sendable () async -> Void) {
        self.name = name
        self.interval = interval
        self.immediately = immediately
        self.body = body
    }

    func start() async throws {
        let (interval, immediately, body) = (self.interval, self.immediately, self.body)
        task.withLock {
            $0 = Task {
                if immediately { await body() }
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    if Task.isCancelled { break }
                    await body()
                }
            }
        }
    }

    /// Cancels the wait; a run under way finishes first.
    func stop(deadline: MonotonicInstant) async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
    }
}
