#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import HTTP1
@testable import HTTPServer
import Testing

@Suite("Connection placement over the server's loops")
struct ConnectionDistributorTests {
    @Test("fills the loop with headroom that holds the most connections, else the one with the fewest")
    func chooseTable() {
        // (accepting loop, headroom per loop, open connections per loop, cursor before, chosen loop, cursor after)
        let cases: [(Int, [Bool], [Int], Int, Int, Int)] = [
            (0, [true, true], [0, 0], 0, 0, 0),
            (1, [true, true], [0, 0], 0, 1, 0),
            (0, [true, true], [9, 0], 0, 0, 0),
            (1, [true, true], [9, 0], 0, 0, 0),
            (0, [true, true], [3, 9], 1, 1, 1),
            (0, [false, true], [20, 9], 0, 1, 0),
            (1, [true, false], [9, 20], 1, 0, 1),
            (2, [true, true, true], [4, 4, 4], 0, 2, 0),
            (2, [true, true, false], [4, 4, 9], 0, 0, 0),
            (0, [false, false, true], [0, 0, 9], 0, 2, 0),
            (0, [false, false], [5, 3], 0, 1, 0),
            (1, [false, false], [3, 5], 0, 0, 1),
            (0, [false, false], [4, 4], 0, 0, 1),
            (0, [false, false], [4, 4], 1, 1, 0),
            (2, [false, false, false], [7, 2, 2], 5, 2, 0),
            (0, [false], [7], 3, 0, 0),
        ]
        for (accepting, headroom, open, before, chosen, after) in cases {
            var cursor = before
            #expect(ConnectionDistributor.choose(accepting: accepting, headroom: headroom, open: open, cursor: &cursor) == chosen)
            #expect(cursor == after, "cursor after choosing among \(headroom), \(open) from \(before)")
        }
    }

    @Test("without headroom anywhere, evens out the loops' connections")
    func evensOutWhenAllBusy() {
        var cursor = 0
        var open = [40, 0, 10]
        for connection in 0..<250 {
            open[ConnectionDistributor.choose(accepting: connection % 2, headroom: [false, false, false], open: open, cursor: &cursor)] += 1
        }
        #expect(open == [100, 100, 100])
    }

    @Test("idle loops gather connections on one loop, whichever accepted them")
    func packsWhileIdle() async throws {
        let loops = try await PlacementLoops(maxConnections: 1000)
        for _ in 0..<6 { try await loops.place(acceptedOn: 0) }
        try await loops.waitFor(open: [6, 0])
        for _ in 0..<3 { try await loops.place(acceptedOn: 1) }
        try await loops.waitFor(open: [9, 0])
        await loops.close()
    }

    @Test("a loop holding its share of the connection cap passes new ones on")
    func fullLoopPassesOn() async throws {
        let loops = try await PlacementLoops(maxConnections: 8)
        for _ in 0..<6 { try await loops.place(acceptedOn: 0) }
        try await loops.waitFor(open: [4, 2])
        await loops.close()
    }

    @Test("a loop packs at most packLimit connections more than the emptiest loop")
    func packLimit() async throws {
        let loops = try await PlacementLoops(maxConnections: 100_000)
        let limit = ConnectionDistributor.packLimit
        for _ in 0..<(limit + 10) { try await loops.place(acceptedOn: 0) }
        try await loops.waitFor(open: [limit + 5, 5])
        await loops.close()
    }

    @Test("a loop busy for most of its last window passes new connections to an idle one")
    func busyLoopPassesOn() async throws {
        let loops = try await PlacementLoops(maxConnections: 1000)
        try await loops.placeAfterWork(on: 0, for: .milliseconds(300), count: 3)
        try await loops.waitFor(open: [0, 3])
        await loops.close()
    }

    @Test("when every loop is busy, connections go to the loop with the fewest")
    func allBusySpread() async throws {
        let loops = try await PlacementLoops(maxConnections: 1000)
        // Loop 1 is still working when loop 0, after its own work, places the connections.
        await loops.startWork(on: 1, for: .milliseconds(1500))
        try await loops.placeAfterWork(on: 0, for: .milliseconds(300), count: 2)
        try await loops.waitFor(open: [1, 1])
        await loops.close()
    }
}

/// Two running loops with a server context each and a distributor over them. Connections
/// are one end of a socket pair; the test holds the other end.
private final class PlacementLoops: Sendable {
    let group: EventLoopGroup
    let occupancies: [LoopOccupancy]
    let contexts: [LoopBound<ServerLoopContext>]
    let distributor = ConnectionDistributor()
    private let peers = Observed<[CInt]>([])

    init(maxConnections: Int) async throws {
        group = try EventLoopGroup(loopCount: 2, namePrefix: "placement")
        var configuration = ServerConfiguration()
        configuration.maxConnections = maxConnections
        var occupancies: [LoopOccupancy] = []
        var contexts: [LoopBound<ServerLoopContext>] = []
        for loop in group.loops {
            let occupancy = LoopOccupancy()
            let context = await Self.run(on: loop) { [configuration] in
                LoopBound(
                    ServerLoopContext(
                        loop: loop, configuration: configuration, responder: { _ in .text("ok") },
                        counters: ServerCounters(), occupancy: occupancy
                    ),
                    loop: loop
                )
            }
            occupancies.append(occupancy)
            contexts.append(context)
        }
        self.occupancies = occupancies
        self.contexts = contexts
        distributor.setLoops(Array(zip(contexts, occupancies)), maxConnections: maxConnections)
    }

    /// Hands the distributor a new connection as if loop `index` had accepted it.
    func place(acceptedOn index: Int) async throws {
        let fd = try makeConnection()
        let context = contexts[index]
        let distributor = distributor
        await Self.run(on: context.loop) { distributor.place(fd: fd, peer: nil, acceptedOn: context.value) }
        try await waitUntilStarted()
    }

    /// Keeps loop `index` working for `duration`, then, on its very next turn (while its
    /// load still shows that work), places `count` connections as if it had accepted them.
    func placeAfterWork(on index: Int, for duration: Duration, count: Int) async throws {
        var fds: [CInt] = []
        for _ in 0..<count { fds.append(try makeConnection()) }
        let context = contexts[index]
        let distributor = distributor
        let connections = fds
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            context.loop.execute {
                let end = MonotonicInstant.now().advanced(by: duration)
                while MonotonicInstant.now() < end {}
                // Timers run in the next iteration, after this one has ended the load window.
                context.loop.scheduleTimer(at: .now()) {
                    for fd in connections { distributor.place(fd: fd, peer: nil, acceptedOn: context.value) }
                    continuation.resume()
                }
            }
        }
        try await waitUntilStarted()
    }

    /// Starts loop `index` working for `duration` and returns once it has begun.
    func startWork(on index: Int, for duration: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            group.loops[index].execute {
                continuation.resume()
                let end = MonotonicInstant.now().advanced(by: duration)
                while MonotonicInstant.now() < end {}
            }
        }
    }

    /// One end of a new socket pair for the server side; the test keeps the other.
    private func makeConnection() throws -> CInt {
        var pair: [CInt] = [-1, -1]
        let created = pair.withUnsafeMutableBufferPointer {
            socketpair(AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_NONBLOCK.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0, $0.baseAddress)
        }
        try #require(created == 0)
        peers.update { $0.append(pair[1]) }
        return pair[0]
    }

    /// A connection handed to the other loop starts there a moment later: waits until every
    /// connection made so far is counted on some loop.
    private func waitUntilStarted() async throws {
        let placed = peers.value.count
        try await poll { self.openCounts.reduce(0, +) >= placed }
    }

    /// Polls `condition` every millisecond until it holds or 5 s have passed.
    private func poll(until condition: () -> Bool) async throws {
        let deadline = MonotonicInstant.now().advanced(by: .seconds(5))
        while !condition() && MonotonicInstant.now() < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    var openCounts: [Int] { occupancies.map { $0.open.load(ordering: .relaxed) } }

    /// Waits (up to 5 s) until the loops hold `open` connections, and checks they do.
    func waitFor(open expected: [Int]) async throws {
        try await poll { self.openCounts == expected }
        #expect(openCounts == expected)
    }

    /// Closes the test's ends, waits for the loops to drop their connections, stops the loops.
    func close() async {
        for fd in peers.value { Glibc.close(fd) }
        try? await waitFor(open: [0, 0])
        group.shutdown()
    }

    private static func run<T: Sendable>(on loop: EventLoop, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            loop.execute { continuation.resume(returning: body()) }
        }
    }
}
