import EventLoop
import Synchronization

/// Places accepted connections on the server's loops: packed onto as few loops as the load
/// needs, spread over all of them once they are busy.
///
/// A loop has headroom while it worked less than half of its last load window
/// (``EventLoop/recentLoad``), holds fewer than ``packLimit`` connections more than the
/// emptiest loop, and fewer than its share of the connection cap. A new connection goes to
/// the loop with headroom that holds the most connections, so light and moderate traffic
/// keeps to as few threads as it needs: one busy thread finds more work per wake-up than
/// two half-idle ones, its data stays in one core's cache, and a virtual machine does not
/// wake an idle virtual CPU for each event (which costs more than the event's own work
/// there). When no loop has headroom, the connection goes to the loop with the fewest, so a
/// burst of thousands ends up spread evenly, as what is split across loops (a client's
/// connection pool) expects.
final class ConnectionDistributor: Sendable {
    /// A loop whose ``EventLoop/recentLoad`` is under this (thousandths) has headroom.
    static let busyLimit = 500
    /// A loop packs connections while it holds fewer than this many more than the emptiest loop.
    static let packLimit = 256

    private struct Loop {
        let context: LoopBound<ServerLoopContext>
        let occupancy: LoopOccupancy
    }

    private struct State {
        var loops: [Loop] = []
        /// Connections one loop takes before it counts as full.
        var share = 0
        var cursor = 0
    }

    private let state = Mutex(State())

    /// Called once every loop has its context, before the listeners start. `maxConnections`
    /// is the server's cap, shared evenly by the loops.
    func setLoops(_ loops: [(context: LoopBound<ServerLoopContext>, occupancy: LoopOccupancy)], maxConnections: Int) {
        state.withLock { state in
            state.loops = loops.map { Loop(context: $0.context, occupancy: $0.occupancy) }
            state.share = max(1, maxConnections / max(1, loops.count))
        }
    }

    /// Starts the connection `fd` on the loop ``choose(accepting:headroom:open:cursor:)`` picks
    /// (here, when that is this loop).
    func place(fd: CInt, peer: SocketAddress?, acceptedOn context: ServerLoopContext) {
        let target = state.withLock { state -> LoopBound<ServerLoopContext>? in
            guard state.loops.count > 1, let accepting = state.loops.firstIndex(where: { $0.context.loop === context.loop }) else {
                return nil
            }
            let open = state.loops.map { $0.occupancy.open.load(ordering: .relaxed) }
            let fewest = open.min() ?? 0
            let headroom = state.loops.indices.map {
                open[$0] < min(state.share, fewest + Self.packLimit) && state.loops[$0].context.loop.recentLoad < Self.busyLimit
            }
            return state.loops[Self.choose(accepting: accepting, headroom: headroom, open: open, cursor: &state.cursor)].context
        }
        guard let target, target.loop !== context.loop else {
            Self.start(fd: fd, peer: peer, on: context)
            return
        }
        target.loop.execute { Self.start(fd: fd, peer: peer, on: target.value) }
    }

    /// The loop for a new connection. Among the loops with headroom, the one holding the most
    /// connections (the accepting loop among equals), so connections fill one loop before the
    /// next whichever loop the kernel woke to accept them. Without headroom anywhere, the
    /// loop holding the fewest (the next in turn from `cursor` among equals; the cursor moves
    /// past the one chosen).
    static func choose(accepting: Int, headroom: [Bool], open: [Int], cursor: inout Int) -> Int {
        var fullest: Int?
        for index in headroom.indices where headroom[index] {
            if let best = fullest, open[index] < open[best] || (open[index] == open[best] && index != accepting) { continue }
            fullest = index
        }
        if let fullest { return fullest }
        let count = open.count
        var emptiest = cursor % count
        for step in 1..<count {
            let index = (cursor + step) % count
            if open[index] < open[emptiest] { emptiest = index }
        }
        cursor = (emptiest + 1) % count
        return emptiest
    }

    private static func start(fd: CInt, peer: SocketAddress?, on context: ServerLoopContext) {
        if context.quiescing {
            // Accepted just before shutdown began: refuse rather than serve.
            Socket.close(fd)
            context.counters.open.subtract(1, ordering: .relaxed)
            return
        }
        let connection = HTTPConnection(fd: fd, remoteAddress: peer, context: context)
        do {
            try connection.start()
        } catch {
            // Never added to its loop, so closing it does not give back the listener's count.
            connection.close()
            context.counters.open.subtract(1, ordering: .relaxed)
        }
    }
}
