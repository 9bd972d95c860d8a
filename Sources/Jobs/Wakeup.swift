import Synchronization

/// A signal one task waits on, with a timeout, and any task raises: the job runner's loop
/// (woken by a submission or a freed slot) and a job's event stream (woken by its progress).
/// A raise while nobody waits is kept for the next wait.
package final class Wakeup: Sendable {
    private struct State {
        var raised = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    init() {}

    func raise() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.raised = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns once raised (since the last wait returned), after `timeout`, or when the task
    /// is cancelled.
    package func wait(timeout: Duration) async {
        if state.withLock({ state in
            defer { state.raised = false }
            return state.raised
        }) {
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.waitRaised() }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitRaised() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Checked under the lock that the cancellation handler takes too: a
                // cancellation either finds the waiter stored or is seen here.
                let resumeNow = state.withLock { state -> Bool in
                    if state.raised || Task.isCancelled {
                        state.raised = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}

/// Who waits on which job's progress in this process: the runner raises a job's subscribers
/// when it stores an answer or ends the job, so an event stream on the same instance sends
/// progress at once (streams of jobs run elsewhere see it at their next poll).
package final class JobEvents: Sendable {
    private struct State {
        var next: UInt64 = 0
        var subscribers: [String: [UInt64: Wakeup]] = [:]
    }

    private let state = Mutex(State())

    package init() {}

    /// Runs `body` with a wakeup raised on every change to job `id`.
    package func subscribe<T>(_ id: String, _ body: (Wakeup) async throws -> T) async rethrows -> T {
        let wakeup = Wakeup()
        let token = state.withLock { state -> UInt64 in
            state.next += 1
            state.subscribers[id, default: [:]][state.next] = wakeup
            return state.next
        }
        defer {
            state.withLock { state in
                state.subscribers[id]?[token] = nil
                if state.subscribers[id]?.isEmpty == true { state.subscribers[id] = nil }
            }
        }
        return try await body(wakeup)
    }

    /// Job `id` changed.
    package func changed(_ id: String) {
        let wakeups = state.withLock { $0.subscribers[id].map { Array($0.values) } ?? [] }
        for wakeup in wakeups { wakeup.raise() }
    }
}
