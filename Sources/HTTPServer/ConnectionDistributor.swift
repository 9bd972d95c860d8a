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
///
/// Connections stay where they are placed, so a burst that arrives while the loops are idle
/// (a reverse proxy filling its pool, a benchmark's connections) would all stay on one loop
/// and leave the other cores idle however busy that loop became. A **saturated** loop (one
/// working nearly all the time while the machine leaves at least half a CPU idle, so another
/// loop would find a CPU to run on) therefore hands kept-alive connections, between two
/// requests, to a loop with headroom that holds fewer, until the two hold about as many.
/// While the machine's CPUs are taken (by the upstream, a proxy, other programs), a busy loop
/// keeps its connections: spreading them would only take CPU from those and add wake-ups.
final class ConnectionDistributor: Sendable {
    /// A loop whose ``EventLoop/recentLoad`` is under this (thousandths) has headroom.
    static let busyLimit = 500
    /// A loop packs connections while it holds fewer than this many more than the emptiest loop.
    static let packLimit = 256

    /// A loop is saturated from this ``EventLoop/recentLoad`` (thousandths) …
    let saturatedLoad: Int
    /// … while the machine leaves at least this much CPU time idle (thousandths of one CPU).
    let freeCPU: Int
    private let idleCPUs: @Sendable () -> Int?

    /// `idleCPUs` tells how much CPU time the machine left idle lately, in thousandths of one
    /// CPU, or nil when that is not known: the server's group's ``EventLoopGroup/idleCPU``.
    init(saturatedLoad: Int = 900, freeCPU: Int = 500, idleCPUs: @escaping @Sendable () -> Int?) {
        self.saturatedLoad = saturatedLoad
        self.freeCPU = freeCPU
        self.idleCPUs = idleCPUs
    }

    private struct Loop {
        let context: LoopBound<ServerLoopContext>
        let occupancy: LoopOccupancy
    }

    private struct State {
        var loops: [Loop] = []
        /// Connections one loop takes before it counts as full.
        var share = 0
        var cursor = 0

        /// Where `loop` is among the loops, when there is another to choose; else nil.
        func index(of loop: EventLoop) -> Int? {
            guard loops.count > 1 else { return nil }
            return loops.firstIndex { $0.context.loop === loop }
        }

        /// The connections each loop holds or has been given.
        var open: [Int] { loops.map { $0.occupancy.open.load(ordering: .relaxed) } }

        /// Counts one more connection on loop `index`, and gives its context.
        func reserve(_ index: Int) -> LoopBound<ServerLoopContext> {
            loops[index].occupancy.open.add(1, ordering: .relaxed)
            return loops[index].context
        }
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
    /// (here, when that is this loop). The chosen loop counts the connection from now on, so
    /// the next choice sees it even before that loop has started it.
    func place(fd: CInt, peer: SocketAddress?, acceptedOn context: ServerLoopContext) {
        let target = state.withLock { state -> LoopBound<ServerLoopContext>? in
            guard let accepting = state.index(of: context.loop) else { return nil }
            let open = state.open
            let fewest = open.min() ?? 0
            let headroom = state.loops.indices.map {
                open[$0] < min(state.share, fewest + Self.packLimit)
                    && state.loops[$0].context.loop.recentLoad < Self.busyLimit
            }
            return state.reserve(
                Self.choose(accepting: accepting, headroom: headroom, open: open, cursor: &state.cursor))
        }
        guard let target, target.loop !== context.loop else {
            if target == nil { context.occupancy.open.add(1, ordering: .relaxed) }
            Self.start(fd: fd, peer: peer, on: context)
            return
        }
        target.loop.execute { Self.start(fd: fd, peer: peer, on: target.value) }
    }

    /// The loop a kept-alive connection of `context`'s loop should move to before its next
    /// request, counted there from now on; nil to stay. Called on `context`'s loop after each
    /// response, so the common case (the loop is not saturated) reads a clock and no lock.
    func handOffTarget(from context: ServerLoopContext) -> LoopBound<ServerLoopContext>? {
        guard isSaturated(load: context.loop.recentLoad, idle: idleCPUs()) else { return nil }
        return state.withLock { state -> LoopBound<ServerLoopContext>? in
            guard let source = state.index(of: context.loop) else { return nil }
            let load = state.loops.indices.map { $0 == source ? 1000 : state.loops[$0].context.loop.recentLoad }
            guard let target = Self.handOffTarget(from: source, open: state.open, load: load, share: state.share) else {
                return nil
            }
            return state.reserve(target)
        }
    }

    /// Whether a loop with this ``EventLoop/recentLoad`` is saturated while the machine leaves
    /// `idle` CPU time idle (thousandths of one CPU; nil: not known). `idle` is asked only
    /// for a busy loop: finding it out can cost a file read.
    func isSaturated(load: Int, idle: @autoclosure () -> Int?) -> Bool {
        guard load >= saturatedLoad, let idle = idle() else { return false }
        return idle >= freeCPU
    }

    /// The loop a saturated loop `source` hands a connection to: among the loops with
    /// headroom (under ``busyLimit`` and their `share` of the cap) that hold at least two
    /// fewer connections than `source`, the one holding the fewest (the first among equals);
    /// nil when there is none, or when moving one would only swap which loop holds more.
    static func handOffTarget(from source: Int, open: [Int], load: [Int], share: Int) -> Int? {
        var emptiest: Int?
        for index in open.indices where index != source && load[index] < busyLimit && open[index] < share {
            guard open[index] + 1 < open[source] else { continue }
            if let best = emptiest, open[best] <= open[index] { continue }
            emptiest = index
        }
        return emptiest
    }

    /// The loop for a new connection. Among the loops with headroom, the one holding the most
    /// connections (the accepting loop among equals), so connections fill one loop before the
    /// next whichever loop the kernel woke to accept them. Without headroom anywhere, the
    /// loop holding the fewest (the next in turn from `cursor` among equals; the cursor moves
    /// past the one chosen).
    static func choose(accepting: Int, headroom: [Bool], open: [Int], cursor: inout Int) -> Int {
        var fullest: Int?
        for index in headroom.indices where headroom[index] {
            if let best = fullest, open[index] < open[best] || (open[index] == open[best] && index != accepting) {
                continue
            }
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

    /// Starts serving `fd` on `context`'s loop, which already counts it (``place(fd:peer:acceptedOn:)``,
    /// ``handOffTarget(from:)`` or the listener's drain at shutdown), as the server does. On a loop
    /// that is shutting down, a connection whose request has come is served, that answer its
    /// last; one that has sent nothing is closed (a FIN: nothing unread for a reset).
    static func start(fd: CInt, peer: SocketAddress?, on context: ServerLoopContext) {
        let lastRequest = context.quiescing
        if lastRequest, !Socket.hasInput(fd) {
            Socket.close(fd)
            context.giveBack()
            return
        }
        let connection = HTTPConnection(fd: fd, remoteAddress: peer, context: context)
        do {
            try connection.start()
        } catch {
            // Never added to its loop, so closing it does not give back the counts.
            connection.close()
            context.giveBack()
            return
        }
        if lastRequest { connection.serveLastRequest() }
    }
}
