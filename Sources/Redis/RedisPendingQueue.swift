import EventLoop

/// The commands waiting for their replies on one connection, oldest first, and the one timer
/// that watches the oldest. Pure (the clock is passed in, the loop timer is the caller's), so
/// its decisions are tested on their own.
///
/// The timer is not moved as replies come: it stays set for an older deadline, and when it
/// fires early it is set again for the oldest command still waiting. It is moved only for a
/// command whose deadline comes sooner than the timer (after the handshake's longer one).
struct RedisPendingQueue<Waiter> {
    /// What the loop timer should do after a call.
    enum Timer: Equatable {
        /// Leave it as it is.
        case keep
        /// (Re)set it for this deadline, cancelling the one set before.
        case set(MonotonicInstant)
    }

    /// What a timer that fired found.
    enum Expiry {
        /// Nothing is waiting.
        case idle
        /// The oldest command is not late yet: set the timer again.
        case again(MonotonicInstant)
        /// The oldest command is late; it is removed (a timeout means a dead link: the caller
        /// closes the connection and fails the rest).
        case timedOut(Waiter)
    }

    private var entries: [(deadline: MonotonicInstant, waiter: Waiter)] = []
    private var head = 0
    /// When the loop timer fires; nil when none is set.
    private(set) var timerAt: MonotonicInstant?

    var count: Int { entries.count - head }
    var isEmpty: Bool { count == 0 }

    /// Adds a command that must have its reply by `deadline`.
    mutating func append(_ waiter: Waiter, deadline: MonotonicInstant) -> Timer {
        entries.append((deadline, waiter))
        if let timerAt, timerAt <= deadline { return .keep }
        timerAt = deadline
        return .set(deadline)
    }

    /// Takes the oldest command, for the reply that just came; nil when none waits.
    mutating func popOldest() -> Waiter? {
        guard head < entries.count else { return nil }
        let waiter = entries[head].waiter
        head += 1
        if head == entries.count {
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
        return waiter
    }

    /// The loop timer fired at `now`.
    mutating func timerFired(now: MonotonicInstant) -> Expiry {
        timerAt = nil
        guard head < entries.count else { return .idle }
        let oldest = entries[head]
        guard oldest.deadline <= now else {
            timerAt = oldest.deadline
            return .again(oldest.deadline)
        }
        return .timedOut(popOldest()!)
    }

    /// Takes every command, oldest first (the connection is gone); the timer is to be cancelled.
    mutating func removeAll() -> [Waiter] {
        let waiters = entries[head...].map(\.waiter)
        entries = []
        head = 0
        timerAt = nil
        return waiters
    }
}
