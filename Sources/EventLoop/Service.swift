/// A long-lived part of the process (the loops, the HTTP client, the server, a store's writer)
/// that a ``ServiceGroup`` starts in order and stops in reverse.
package protocol Service: Sendable {
    /// A name for logs.
    var name: String { get }
    /// Starts the service; returns once it is serving (or throws).
    func start() async throws
    /// Stops it: stop taking work, finish what is in flight up to `deadline`, release everything.
    /// Called once, only after start succeeded.
    func stop(deadline: MonotonicInstant) async
}

/// An ``EventLoopGroup`` as a service: its loops run from the group's creation, so starting
/// does nothing, and stopping joins them on a thread of their own
/// (``EventLoopGroup/shutdownGracefully()``).
///
/// A loop cannot be stopped halfway: each runs the work queued on it, then ends, whatever the
/// deadline. Put it first in the group, so that it stops after everything that uses it.
package struct EventLoopGroupService: Service {
    package let name: String
    /// The loops this service stops.
    package let group: EventLoopGroup

    package init(group: EventLoopGroup, name: String = "event_loops") {
        self.group = group
        self.name = name
    }

    package func start() async throws {}

    package func stop(deadline: MonotonicInstant) async {
        await group.shutdownGracefully()
    }
}
