/// How long a loop polls for events before it sleeps in `epoll_wait`, adapted to how long
/// its waits have lasted: KVM's halt polling, applied to a loop thread.
///
/// Waking a sleeping thread costs more than a short wait on a virtual machine: the idle
/// virtual CPU halts and the host must schedule it again (tens of microseconds, charged to the
/// woken thread, with cold caches). A loop whose events come quickly can poll instead.
/// After each wait the window changes:
/// - the wait ended within the window: it stays;
/// - it lasted longer than the limit: the window halves, and closes (0) below ``start``;
/// - it was shorter than the limit (but longer than the window): the window doubles, from
///   ``start`` when closed, up to the limit.
/// A loop whose waits are long (an idle server, upstream calls of seconds) never polls.
struct PollWindow: Equatable {
    /// The window a closed window opens to.
    static let start: UInt64 = 10_000
    /// The longest window, in nanoseconds.
    let limit: UInt64
    /// The current window, in nanoseconds; 0 when closed.
    private(set) var current: UInt64 = 0

    init(limit: UInt64) {
        self.limit = limit
    }

    /// Adapts to a wait that lasted `waited` nanoseconds until its first event (or timer),
    /// polling and sleeping together.
    mutating func record(waited: UInt64) {
        if waited <= current { return }
        if waited > limit {
            current = current / 2 < Self.start ? 0 : current / 2
        } else if current < limit {
            current = min(limit, max(current * 2, Self.start))
        }
    }
}
