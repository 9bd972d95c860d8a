import EventLoop
import HTTP1
import Synchronization
import TestSupport
import Testing

@testable import HTTPServer

#if canImport(Glibc)
    import Glibc
#endif

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
            #expect(
                ConnectionDistributor.choose(accepting: accepting, headroom: headroom, open: open, cursor: &cursor)
                    == chosen)
            #expect(cursor == after, "cursor after choosing among \(headroom), \(open) from \(before)")
        }
    }

    @Test("without headroom anywhere, evens out the loops' connections")
    func evensOutWhenAllBusy() {
        var cursor = 0
        var open = [40, 0, 10]
        for connection in 0..<250 {
            open[
                ConnectionDistributor.choose(
                    accepting: connection % 2, headroom: [false, false, false], open: open, cursor: &cursor)] += 1
        }
        #expect(open == [100, 100, 100])
    }

    @Test("idle loops gather connections on one loop, whichever accepted them")
    func packsWhileIdle() async throws {
        let loops = try await PlacementLoops(maxConnections: 1000)
        for _ in 0..<6 { try await loops.place(acceptedOn: 0) }
        await loops.waitFor(open: [6, 0])
        for _ in 0..<3 { try await loops.place(acceptedOn: 1) }
        await loops.waitFor(open: [9, 0])
        await loops.close()
    }

    @Test("a loop holding its share of the connection cap passes new ones on")
    func fullLoopPassesOn() async throws {
        let loops = try await PlacementLoops(maxConnections: 8)
        for _ in 0..<6 { try await loops.place(acceptedOn: 0) }
        await loops.waitFor(open: [4, 2])
        await loops.close()
    }

    @Test("a loop packs at most packLimit connections more than the emptiest loop")
    func packLimit() async throws {
        let loops = try await PlacementLoops(maxConnections: 100_000)
        let limit = ConnectionDistributor.packLimit
        for _ in 0..<(limit + 10) { try await loops.place(acceptedOn: 0) }
        await loops.waitFor(open: [limit + 5, 5])
        await loops.close()
    }

    @Test("a loop busy for most of its last window passes new connections to an idle one")
    func busyLoopPassesOn() async throws {
        let loops = try await PlacementLoops(maxConnections: 1000)
        try await loops.placeAfterWork(on: 0, for: .milliseconds(300), count: 3)
        await loops.waitFor(open: [0, 3])
        await loops.close()
    }

    @Test("when every loop is busy, connections go to the loop with the fewest")
    func allBusySpread() async throws {
        let loops = try await PlacementLoops(maxConnections: 1000)
        // Loop 1 is still working when loop 0, after its own work, places the connections:
        // it works until they are placed, however long a loaded machine takes to get there.
        let placed = WorkStop()
        await loops.startWork(on: 1, until: placed)
        do {
            defer { placed.set() }
            try await loops.placeAfterWork(on: 0, for: .milliseconds(300), count: 2)
            await loops.waitFor(open: [1, 1])
        }
        await loops.close()
    }
}

@Suite("Moving connections off a saturated loop")
struct ConnectionHandOffTests {
    @Test("a loop is saturated when it works nearly all the time and the machine leaves a CPU idle enough")
    func saturation() {
        let distributor = ConnectionDistributor(idleCPUs: { nil })
        #expect(distributor.isSaturated(load: 1000, idle: 2000))
        #expect(distributor.isSaturated(load: distributor.saturatedLoad, idle: distributor.freeCPU))
        #expect(!distributor.isSaturated(load: distributor.saturatedLoad - 1, idle: 2000))
        #expect(!distributor.isSaturated(load: 1000, idle: distributor.freeCPU - 1), "no CPU free for another loop")
        #expect(!distributor.isSaturated(load: 1000, idle: nil), "the machine's idle time not known yet")
    }

    @Test("hands to the loop with headroom holding the fewest, while it holds at least two fewer")
    func targetTable() {
        // (source, open per loop, load per loop, share, target)
        let cases: [(Int, [Int], [Int], Int, Int?)] = [
            (0, [64, 0], [1000, 0], 1000, 1),
            (0, [33, 31], [1000, 0], 1000, 1),
            (0, [32, 31], [1000, 0], 1000, nil),
            (0, [32, 32], [1000, 0], 1000, nil),
            (0, [64, 0], [1000, 500], 1000, nil),
            (0, [64, 0], [1000, 499], 1000, 1),
            (0, [64, 10], [1000, 0], 10, nil),
            (1, [0, 64], [0, 1000], 1000, 0),
            (0, [64, 20, 10], [1000, 0, 0], 1000, 2),
            (0, [64, 20, 10], [1000, 0, 800], 1000, 1),
            (0, [64, 10, 10], [1000, 0, 0], 1000, 1),
            (2, [5, 5, 9], [0, 0, 1000], 1000, 0),
            (0, [9], [1000], 1000, nil),
        ]
        for (source, open, load, share, target) in cases {
            #expect(
                ConnectionDistributor.handOffTarget(from: source, open: open, load: load, share: share) == target,
                "\(open) \(load)")
        }
    }

    @Test("a saturated loop hands kept-alive connections to an idle loop until they hold about as many")
    func handsOffWhenSaturated() async throws {
        let loops = try await PlacementLoops(
            maxConnections: 1000, distributor: ConnectionDistributor(idleCPUs: { 1000 }))
        for _ in 0..<4 { try await loops.place(acceptedOn: 0) }
        await loops.waitFor(open: [4, 0])
        for peer in 0..<4 { #expect(try await loops.exchange(on: peer, path: "/compute") == "ok") }
        await loops.waitFor(open: [2, 2])
        #expect(loops.movedCount == 2)
        // Moved connections go on serving, from their new loop.
        for peer in 0..<4 { #expect(try await loops.exchange(on: peer, path: "/") == "ok") }
        await loops.waitFor(open: [2, 2])
        await loops.close()
    }

    @Test("a busy loop keeps its connections while the machine has no CPU free, and a loop that is not busy keeps them")
    func keepsWhenNotSaturated() async throws {
        try await expectNoneMove(idleCPUs: 300, path: "/compute", rounds: 1)
        try await expectNoneMove(idleCPUs: 2000, path: "/", rounds: 3)
    }

    /// Two connections on loop 0 answer `rounds` requests for `path` each, while the machine
    /// leaves `idleCPUs` idle; none may move.
    private func expectNoneMove(idleCPUs: Int, path: String, rounds: Int) async throws {
        let loops = try await PlacementLoops(
            maxConnections: 1000, distributor: ConnectionDistributor(idleCPUs: { idleCPUs }))
        for _ in 0..<2 { try await loops.place(acceptedOn: 0) }
        await loops.waitFor(open: [2, 0])
        for _ in 0..<rounds {
            for peer in 0..<2 { #expect(try await loops.exchange(on: peer, path: path) == "ok") }
        }
        #expect(loops.movedCount == 0, "idle CPUs \(idleCPUs), \(path)")
        #expect(loops.openCounts == [2, 0])
        await loops.close()
    }

    @Test("a connection with a pipelined request waiting stays until that one is answered too")
    func pipelinedStays() async throws {
        let loops = try await PlacementLoops(
            maxConnections: 1000, distributor: ConnectionDistributor(idleCPUs: { 1000 }))
        for _ in 0..<2 { try await loops.place(acceptedOn: 0) }
        await loops.waitFor(open: [2, 0])
        let answers = try await loops.exchange(on: 0, paths: ["/compute", "/", "/"])
        #expect(answers == ["ok", "ok", "ok"])
        await loops.waitFor(open: [1, 1])
        #expect(try await loops.exchange(on: 0, path: "/") == "ok")
        await loops.close()
    }
}

/// Two running loops with a server context each and a distributor over them. Connections
/// are one end of a socket pair; the test holds the other end. The server answers "ok" to
/// every request; `/compute` first keeps its loop busy for 250 ms.
private final class PlacementLoops: Sendable {
    let group: EventLoopGroup
    let occupancies: [LoopOccupancy]
    let contexts: [LoopBound<ServerLoopContext>]
    let distributor: ConnectionDistributor
    private let counters: [ServerCounters]
    private let peers = Observed<[CInt]>([])

    init(maxConnections: Int, distributor: ConnectionDistributor = ConnectionDistributor(idleCPUs: { nil }))
        async throws
    {
        self.distributor = distributor
        group = try EventLoopGroup(loopCount: 2, namePrefix: "placement")
        var configuration = ServerConfiguration()
        configuration.maxConnections = maxConnections
        var occupancies: [LoopOccupancy] = []
        var contexts: [LoopBound<ServerLoopContext>] = []
        let counters = ServerCounters()
        for loop in group.loops {
            let occupancy = LoopOccupancy()
            let context = await Self.run(on: loop) { [configuration] in
                LoopBound(
                    ServerLoopContext(
                        loop: loop, configuration: configuration, responder: Self.respond,
                        counters: counters, occupancy: occupancy, distributor: distributor
                    ),
                    loop: loop
                )
            }
            occupancies.append(occupancy)
            contexts.append(context)
        }
        self.occupancies = occupancies
        self.contexts = contexts
        self.counters = [counters]
        distributor.setLoops(Array(zip(contexts, occupancies)), maxConnections: maxConnections)
    }

    @Sendable private static func respond(_ request: HTTPRequest) async throws -> HTTPResponse {
        switch request.path {
        case "/compute":
            let end = MonotonicInstant.now().advanced(by: .milliseconds(250))
            while MonotonicInstant.now() < end {}
        default:
            break
        }
        return .text("ok")
    }

    var movedCount: Int { counters.reduce(0) { $0 + $1.moved.load(ordering: .relaxed) } }

    /// Sends a GET for `path` on the test's end of connection `peer` and returns the body.
    func exchange(on peer: Int, path: String) async throws -> String {
        try await exchange(on: peer, paths: [path]).first ?? ""
    }

    /// Sends GETs for `paths` in one write (pipelined) and returns the bodies, in order.
    func exchange(on peer: Int, paths: [String]) async throws -> [String] {
        let fd = peers.value[peer]
        let request = Array(paths.map { "GET \($0) HTTP/1.1\r\nHost: test\r\n\r\n" }.joined().utf8)
        try #require(request.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == request.count)
        var received: [UInt8] = []
        var bodies: [String] = []
        // Answers come in milliseconds; the bound only ends a failing test, and is long
        // because a CI machine running every suite at once can stall this process for seconds.
        // The caller checks the bodies it gets.
        var buffer = [UInt8](repeating: 0, count: 4096)
        await eventually(
            "the answers to \(paths)", within: Self.patience, every: .milliseconds(1), onTimeout: .returnsFalse
        ) {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                received += buffer[0..<count]
                bodies = Self.bodies(in: received)
            }
            return bodies.count >= paths.count
        }
        return bodies
    }

    /// The bodies of the complete `Content-Length` responses in `bytes`.
    private static func bodies(in bytes: [UInt8]) -> [String] {
        var bodies: [String] = []
        var start = 0
        while let headEnd = Self.endOfHead(in: bytes, from: start) {
            let head = String(decoding: bytes[start..<headEnd], as: UTF8.self).lowercased()
            let length = head.split(separator: "\r\n").lazy
                .compactMap {
                    $0.hasPrefix("content-length:")
                        ? Int($0.dropFirst("content-length:".count).filter { $0 != " " }) : nil
                }
                .first
            guard let length, bytes.count >= headEnd + 4 + length else { break }
            bodies.append(String(decoding: bytes[(headEnd + 4)..<(headEnd + 4 + length)], as: UTF8.self))
            start = headEnd + 4 + length
        }
        return bodies
    }

    /// Where the next `\r\n\r\n` at or after `start` begins.
    private static func endOfHead(in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= start + 4 else { return nil }
        for index in start...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    /// Hands the distributor a new connection as if loop `index` had accepted it.
    func place(acceptedOn index: Int) async throws {
        let fd = try makeConnection()
        let context = contexts[index]
        let distributor = distributor
        await Self.run(on: context.loop) { distributor.place(fd: fd, peer: nil, acceptedOn: context.value) }
        await waitUntilStarted()
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
        await waitUntilStarted()
    }

    /// Starts loop `index` working until `stop` is set (30 s at most) and returns once it has begun.
    func startWork(on index: Int, until stop: WorkStop) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            group.loops[index].execute {
                continuation.resume()
                let end = MonotonicInstant.now().advanced(by: .seconds(30))
                while !stop.isSet && MonotonicInstant.now() < end {}
            }
        }
    }

    /// One end of a new socket pair for the server side; the test keeps the other.
    private func makeConnection() throws -> CInt {
        var pair: [CInt] = [-1, -1]
        let created = pair.withUnsafeMutableBufferPointer {
            socketpair(
                AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_NONBLOCK.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0,
                $0.baseAddress)
        }
        try #require(created == 0)
        peers.update { $0.append(pair[1]) }
        return pair[0]
    }

    /// A connection handed to the other loop starts there a moment later: waits until every
    /// connection made so far is counted on some loop.
    private func waitUntilStarted() async {
        let placed = peers.value.count
        await eventually(
            "the \(placed) connections made so far are counted on a loop", within: Self.patience,
            every: .milliseconds(1), onTimeout: .returnsFalse
        ) { self.openCounts.reduce(0, +) >= placed }
    }

    /// How long a wait for the loops may take before the test fails.
    static let patience: Duration = .seconds(30)

    var openCounts: [Int] { occupancies.map { $0.open.load(ordering: .relaxed) } }

    /// Waits (up to ``patience``) until the loops hold `open` connections, and checks they do.
    func waitFor(open expected: [Int], sourceLocation: SourceLocation = #_sourceLocation) async {
        await eventually(
            "the loops hold \(expected) connections, not \(openCounts)", within: Self.patience,
            every: .milliseconds(1), sourceLocation: sourceLocation
        ) { self.openCounts == expected }
    }

    /// Closes the test's ends, waits for the loops to drop their connections, stops the loops.
    func close() async {
        for fd in peers.value { Glibc.close(fd) }
        await waitFor(open: [0, 0])
        group.shutdown()
    }

    private static func run<T: Sendable>(on loop: EventLoop, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            loop.execute { continuation.resume(returning: body()) }
        }
    }
}

/// Tells a loop kept working by ``PlacementLoops/startWork(on:until:)`` to stop.
final class WorkStop: Sendable {
    private let stopped = Atomic<Bool>(false)
    var isSet: Bool { stopped.load(ordering: .relaxed) }
    func set() { stopped.store(true, ordering: .relaxed) }
}
