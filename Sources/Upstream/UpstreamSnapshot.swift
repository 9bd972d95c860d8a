/// One upstream's state and counts since this instance started (the operator's console).
package struct UpstreamSnapshot: Sendable, Equatable {
    package enum State: String, Sendable {
        /// The circuit is closed: requests go to it.
        case inUse = "in_use"
        /// The circuit is open after consecutive failures: skipped until the cooldown ends.
        case coolingDown = "cooling_down"
        /// The cooldown ended: one request is trying it.
        case probing
    }

    package var name: String
    package var model: String?
    package var state: State
    /// Attempts it answered, and attempts that failed (retries count each).
    package var answers: Int
    package var failures: Int
}
