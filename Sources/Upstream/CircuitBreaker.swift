import EventLoop
import Synchronization

/// One upstream's circuit: closed while it answers; open (skipped) for a cooldown after
/// consecutive failures; then half-open, letting one probe through whose result closes or
/// reopens it. Shared by every request on every loop, so its state is behind a mutex held
/// for a few comparisons.
final class CircuitBreaker: Sendable {
    enum State: Int, Sendable, Equatable {
        case closed = 0
        case open = 1
        case halfOpen = 2
    }

    /// Whether a request may try the upstream now, and as what.
    enum Admission: Sendable, Equatable {
        /// The circuit is closed: try it.
        case normal
        /// The cooldown passed: this request is the one probe.
        case probe
        /// Open (or half-open with its probe out): skip it.
        case skip
    }

    private struct Inner {
        var state = State.closed
        var consecutiveFailures = 0
        var openedAt = MonotonicInstant(nanoseconds: 0)
        var probeOut = false
    }

    private let threshold: Int
    private let cooldown: Duration
    private let inner = Mutex(Inner())

    init(threshold: Int, cooldown: Duration) {
        self.threshold = max(1, threshold)
        self.cooldown = cooldown
    }

    var state: State { inner.withLock { $0.state } }

    func admit(_ now: MonotonicInstant = .now()) -> Admission {
        inner.withLock { inner in
            switch inner.state {
            case .closed:
                return .normal
            case .open:
                guard inner.openedAt.nanoseconds(until: now) >= cooldown.nanosecondsClamped else { return .skip }
                inner.state = .halfOpen
                inner.probeOut = true
                return .probe
            case .halfOpen:
                guard !inner.probeOut else { return .skip }
                inner.probeOut = true
                return .probe
            }
        }
    }

    /// The upstream answered (any answer that is not its failure): the circuit closes.
    func succeeded() {
        inner.withLock { inner in
            inner.state = .closed
            inner.consecutiveFailures = 0
            inner.probeOut = false
        }
    }

    /// The upstream failed in a way that counts (it could not answer); returns true when
    /// this failure opened the circuit.
    @discardableResult
    func failed(_ now: MonotonicInstant = .now()) -> Bool {
        inner.withLock { inner in
            inner.consecutiveFailures += 1
            switch inner.state {
            case .halfOpen:
                inner.state = .open
                inner.openedAt = now
                inner.probeOut = false
                return true
            case .closed where inner.consecutiveFailures >= threshold:
                inner.state = .open
                inner.openedAt = now
                return true
            case .closed, .open:
                return false
            }
        }
    }

    /// A probe that ended without a verdict (the client left): let the next request probe.
    func probeAbandoned() {
        inner.withLock { inner in
            if inner.state == .halfOpen { inner.probeOut = false }
        }
    }
}
