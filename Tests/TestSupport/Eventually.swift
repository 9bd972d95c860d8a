import EventLoop
package import Testing

/// What ``eventually(_:within:every:onTimeout:sourceLocation:_:)`` does when its condition
/// never holds.
package enum PollTimeout: Sendable {
    /// An issue of the test at the caller's line, naming the condition and the time waited;
    /// the test goes on, as after a failed `#expect`.
    case fails
    /// Only `false`: the caller decides (a wait that may give up, a child it then kills, a
    /// server that throws its own error).
    case returnsFalse
}

/// Polls `condition` every `interval` until it holds or `limit` passes, and answers whether it
/// held. Tests wait for other threads, servers and processes this way, never by sleeping for a
/// guessed time. The limit is generous: it is only reached when a test fails, and CI runs every
/// suite at once on two cores; a stall of the task pool does not use it up. The condition is
/// looked at once more after the deadline, since a busy machine may wake this task only after
/// it, and a condition that held meanwhile must not fail. `description` says what is waited
/// for ("the upstream has the call"); it is read only for the issue, so it may show the state
/// the wait ended on. A cancelled task stops waiting and looks once more.
@discardableResult
package func eventually(
    _ description: @autoclosure () -> String,
    within limit: Duration = .seconds(60),
    every interval: Duration = .milliseconds(5),
    onTimeout: PollTimeout = .fails,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    // The limit counts the time the condition had to come true, not the time this task sat
    // ready to run while the test process's two pool threads ran other suites' blocking work:
    // each sleep counts at most a second past its interval. (A CI run's waits came back after
    // a minute's stall and failed before the task they waited for had run once.)
    let limitNanoseconds = UInt64(limit.nanosecondsClamped)
    let intervalNanoseconds = UInt64(interval.nanosecondsClamped)
    var waited: UInt64 = 0
    while waited < limitNanoseconds, !Task.isCancelled {
        let polled = MonotonicInstant.now()
        if try await condition() { return true }
        let slept = MonotonicInstant.now()
        try? await Task.sleep(for: interval)
        let woke = MonotonicInstant.now()
        waited &+=
            polled.nanoseconds(until: slept)
            &+ min(slept.nanoseconds(until: woke), intervalNanoseconds &+ 1_000_000_000)
    }
    if try await condition() { return true }
    if case .fails = onTimeout {
        let ended = Task.isCancelled ? "Cancelled while waiting" : "Not within \(limit)"
        Issue.record("\(ended): \(description())", sourceLocation: sourceLocation)
    }
    return false
}
