import EventLoop
import Synchronization
import TestSupport
import Testing

@testable import Redis

#if canImport(Glibc)
    import Glibc
#endif

/// A client on loops of its own against `url`, stopped (and its loops with it) after `body`.
private func withClient<T>(
    _ url: String, loops: Int = 1, scripts: [RedisScript] = [], timeout: Duration = .seconds(2),
    configure: (inout RedisConfiguration) -> Void = { _ in },
    _ body: (RedisClient, EventLoopGroup) async throws -> T
) async throws -> T {
    var configuration = try RedisConfiguration(url: url)
    // Generous unless a test is about timeouts: a loaded machine's slow reply is not a failure.
    configuration.timeout = timeout
    configuration.reconnectBackoff = .milliseconds(10)...(.milliseconds(200))
    configure(&configuration)
    let group = try EventLoopGroup(loopCount: loops, namePrefix: "redis-test")
    let client = RedisClient(configuration: configuration, group: group, scripts: scripts)
    try await client.start()
    do {
        let result = try await body(client, group)
        await client.stop(deadline: .now().advanced(by: .seconds(1)))
        await group.shutdownGracefully()
        return result
    } catch {
        await client.stop(deadline: .now().advanced(by: .seconds(1)))
        await group.shutdownGracefully()
        throw error
    }
}

/// The error `body` threw, or nil when it did not throw.
private func redisError(_ body: () async throws(RedisError) -> RedisValue) async -> RedisError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error
    }
}

@Suite("Redis client against a redis-server of its own", .serialized, .timeLimit(.minutes(2)))
struct RedisClientTests {
    @Test("round-trips PING, SET, GET, INCR and converts each kind of value")
    func roundTrips() async throws {
        let server = try await RedisServer()
        try await withClient(server.url) { client, _ in
            #expect(client.isUp)
            #expect(try await client.send("PING") == .simpleString("PONG"))
            #expect(try await client.send("SET", "greeting", "hello") == .simpleString("OK"))
            #expect(try await client.send("GET", "greeting") == .bulkString(Array("hello".utf8)))
            #expect(try await client.send("GET", "greeting").string == "hello")
            let missing = try await client.send("GET", "missing")
            #expect(missing == .bulkString(nil) && missing.isNull)
            #expect(try await client.send("INCR", "counter") == .integer(1))
            #expect(try await client.send(["INCRBY", "counter", RedisArgument(41)]).integer == 42)
            let binary: [UInt8] = [0, 1, 255, 13, 10, 0]
            _ = try await client.send(["SET", "binary", RedisArgument(binary)])
            #expect(try await client.send("GET", "binary") == .bulkString(binary))
            _ = try await client.send("RPUSH", "list", "a", "b")
            #expect(
                try await client.send("LRANGE", "list", "0", "-1") == .array([.bulkString([97]), .bulkString([98])]))
            #expect(try await client.send("LRANGE", "nothing", "0", "-1") == .array([]))
            let mixed = try await client.send("EVAL", "return {1, 'x', redis.error_reply('boom'), {2}}", "0")
            #expect(
                mixed == .array([.integer(1), .bulkString(Array("x".utf8)), .error("ERR boom"), .array([.integer(2)])]))
        }
    }

    @Test("a host name in the URL is resolved (IPv4 first, as hiredis does)")
    func hostName() async throws {
        let server = try await RedisServer()
        try await withClient("redis://localhost:\(server.port)") { client, _ in
            let reply = try await client.send("PING")
            #expect(reply == .simpleString("PONG"))
        }
    }

    @Test("a server error is a RedisError with the server's message, and the connection stays usable")
    func serverError() async throws {
        let server = try await RedisServer()
        try await withClient(server.url) { client, _ in
            _ = try await client.send("SET", "text", "abc")
            let error = await redisError { () async throws(RedisError) in try await client.send("INCR", "text") }
            #expect(error?.code == .server)
            #expect(error?.message.contains("not an integer") == true)
            #expect(error?.serverErrorPrefix == "ERR")
            let unknown = await redisError { () async throws(RedisError) in try await client.send("NOSUCHCOMMAND") }
            #expect(unknown?.code == .server)
            #expect(try await client.send("PING") == .simpleString("PONG"))
            #expect(client.isUp)
        }
    }

    @Test("1,000 commands in flight from many tasks each get their own reply")
    func manyInFlight() async throws {
        let server = try await RedisServer()
        try await withClient(server.url, loops: 2) { client, group in
            let mismatches = try await withThrowingTaskGroup(of: Int.self) { tasks in
                for index in 0..<1000 {
                    // Half the callers run on a loop (the connection's own), half elsewhere.
                    let executor: (any TaskExecutor)? = index % 2 == 0 ? group.loops[index % group.loops.count] : nil
                    tasks.addTask(executorPreference: executor) {
                        let reply = try await client.send("ECHO", RedisArgument("value-\(index)"))
                        return reply.string == "value-\(index)" ? 0 : 1
                    }
                }
                return try await tasks.reduce(0, +)
            }
            #expect(mismatches == 0)
            // In order on one connection: the pipelined INCRs come back 1...n.
            let replies = try await withThrowingTaskGroup(of: [Int64].self) { tasks in
                tasks.addTask(executorPreference: group.loops[0]) {
                    try await withThrowingTaskGroup(of: Int64.self) { inner in
                        for _ in 0..<200 {
                            inner.addTask(executorPreference: group.loops[0]) {
                                try await client.send("INCR", "ordered").integer ?? -1
                            }
                        }
                        return try await inner.reduce(into: []) { $0.append($1) }
                    }
                }
                return try await tasks.reduce(into: []) { $0 += $1 }
            }
            #expect(Set(replies) == Set(1...200))
        }
    }

    @Test("a command sent from a loop goes on that loop's own connection")
    func staysOnItsLoop() async throws {
        let server = try await RedisServer()
        try await withClient(server.url, loops: 2) { client, group in
            var idsPerLoop: [Set<Int64>] = []
            for loop in group.loops {
                let ids = try await withThrowingTaskGroup(of: Int64.self) { tasks in
                    for _ in 0..<20 {
                        tasks.addTask(executorPreference: loop) { try await client.send("CLIENT", "ID").integer ?? -1 }
                    }
                    return try await tasks.reduce(into: Set<Int64>()) { $0.insert($1) }
                }
                idsPerLoop.append(ids)
            }
            #expect(idsPerLoop.allSatisfy { $0.count == 1 })
            #expect(idsPerLoop[0] != idsPerLoop[1])
        }
    }

    @Test("reconnecting again and again leaves no descriptor behind")
    func noDescriptorLeak() async throws {
        let server = try await RedisServer()
        try await withClient(server.url, configure: { $0.timeout = .seconds(5) }) { killer, _ in
            try await withClient(server.url) { client, group in
                for _ in 0..<20 {
                    _ = try await killer.send("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
                    await eventually("the client answers PING again after CLIENT KILL") {
                        (try? await client.send("PING")) != nil
                    }
                }
                // Only this test connects to its server: the killer's socket and the client's
                // one. A descriptor kept per reconnect would stay in CLOSE_WAIT, 20 of them.
                await eventually("2 sockets are connected to the server") { socketsConnected(toPort: server.port) == 2 }
                let loop = group.loops[0]
                let registered = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
                    loop.execute { continuation.resume(returning: loop.registrationCount) }
                }
                #expect(registered == 1)
            }
        }
    }

    @Test("a timeout fails the command in bounded time and the client recovers")
    func timeout() async throws {
        let server = try await RedisServer()
        try await withClient(server.url, timeout: .milliseconds(50)) { client, _ in
            _ = try await client.send("SET", "k", "v")
            // The server stopped until the commands have failed, not paused for a time: on a
            // loaded machine they were sent after a 500 ms pause had ended, and answered.
            server.signal(SIGSTOP)
            let started = MonotonicInstant.now()
            // The oldest times out; the others pending behind it fail as the link closes.
            let codes = await withTaskGroup(of: RedisError.Code?.self) { tasks in
                for _ in 0..<3 {
                    tasks.addTask {
                        await redisError { () async throws(RedisError) in try await client.send("GET", "k") }?.code
                    }
                }
                return await tasks.reduce(into: [RedisError.Code?]()) { $0.append($1) }
            }
            let took = started.nanoseconds(until: .now())
            server.signal(SIGCONT)
            #expect(codes.contains(.timeout))
            #expect(codes.allSatisfy { $0 == .timeout || $0 == .connectionClosed || $0 == .connectionFailed })
            // Bounded, not hung: generous, since a loaded machine may take seconds.
            #expect(took < 20_000_000_000)
            await eventually("GET k answers v again") { (try? await client.send("GET", "k"))?.string == "v" }
            #expect(client.isUp)
        }
    }

    @Test("a cancelled caller gets .cancelled; the other commands finish and the reply is dropped")
    func cancellation() async throws {
        let server = try await RedisServer()
        try await withClient(server.url, configure: { $0.timeout = .seconds(5) }) { pauser, _ in
            try await withClient(server.url, configure: { $0.timeout = .seconds(5) }) { client, group in
                // Writes held until the test lets them go (a timed pause ran out before both
                // commands were sent, with every core busy): reads, and UNPAUSE, still run.
                _ = try await pauser.send("CLIENT", "PAUSE", "60000", "WRITE")
                let loop = group.loops[0]
                let first = Task(executorPreference: loop) { () async throws(RedisError) -> RedisValue in
                    try await client.send("INCR", "n")
                }
                let second = Task(executorPreference: loop) { () async throws(RedisError) -> RedisValue in
                    try await client.send("INCR", "n")
                }
                await eventually("both commands are sent") { await client.pendingCount() == 2 }
                first.cancel()
                let firstError: RedisError?
                do {
                    _ = try await first.value
                    firstError = nil
                } catch let error as RedisError {
                    firstError = error
                } catch {
                    firstError = nil
                }
                #expect(firstError?.code == .cancelled)
                _ = try await pauser.send("CLIENT", "UNPAUSE")
                #expect(try await second.value.integer == 2)
                #expect(try await client.send("GET", "n").string == "2")
                // The cancelled command's reply was read: nothing is left pending, the link is up.
                #expect(await client.pendingCount() == 0)
                #expect(client.isUp)
            }
        }
    }

    @Test("killed redis-server: commands fail fast; restarted on the same port: the client reconnects")
    func reconnects() async throws {
        let server = try await RedisServer()
        try await withClient(server.url, loops: 2, timeout: .milliseconds(200)) { client, _ in
            _ = try await client.send("SET", "k", "v")
            server.kill()
            await eventually("the client sees the server down") { !client.isUp }
            for _ in 0..<5 {
                let started = MonotonicInstant.now()
                let error = await redisError { () async throws(RedisError) in try await client.send("PING") }
                #expect(error != nil)
                #expect([.connectionFailed, .connectionClosed, .timeout].contains(error?.code))
                // Failed, not hung until the server is back: generous for a loaded machine.
                #expect(started.nanoseconds(until: .now()) < 20_000_000_000)
            }
            try await server.start()
            await eventually("the client is up again") { client.isUp }
            #expect(try await client.send("PING") == .simpleString("PONG"))
        }
    }

    @Test("EVALSHA reloads the script after SCRIPT FLUSH; a script can call TIME")
    func scripts() async throws {
        let server = try await RedisServer()
        let incr = RedisScript(source: "return redis.call('INCR', KEYS[1]) + tonumber(ARGV[1])")
        let time = RedisScript(source: "local t = redis.call('TIME') return tonumber(t[1])")
        try await withClient(server.url, scripts: [incr]) { client, _ in
            #expect(try await client.evalSHA(incr, keys: ["s"], arguments: ["10"]) == .integer(11))
            _ = try await client.send("SCRIPT", "FLUSH")
            #expect(try await client.evalSHA(incr, keys: ["s"], arguments: ["10"]) == .integer(12))
            // Not given at start: loaded at first use.
            let seconds = try await client.evalSHA(time).integer ?? 0
            #expect(seconds > 1_600_000_000)
            let bad = RedisScript(source: "return redis.call('INCR')")
            let error = await redisError { () async throws(RedisError) in try await client.evalSHA(bad) }
            #expect(error?.code == .server)
            #expect(try await client.evalSHA(incr, keys: ["s"], arguments: ["0"]) == .integer(3))
        }
    }

    @Test("AUTH with requirepass and SELECT from the URL; a wrong password never connects")
    func authAndSelect() async throws {
        let server = try await RedisServer(arguments: ["--requirepass", "s3cret"])
        try await withClient("redis://:s3cret@127.0.0.1:\(server.port)/3") { client, _ in
            #expect(client.isUp)
            _ = try await client.send("SET", "where", "db3")
            let info = try await client.send("CLIENT", "INFO").string ?? ""
            #expect(info.contains(" db=3 "))
        }
        try await withClient("redis://:s3cret@127.0.0.1:\(server.port)") { client, _ in
            #expect(try await client.send("GET", "where").isNull)
            _ = try await client.send("SELECT", "3")
            #expect(try await client.send("GET", "where").string == "db3")
        }
        try await withClient("redis://:wrong@127.0.0.1:\(server.port)") { client, _ in
            #expect(!client.isUp)
            let error = await redisError { () async throws(RedisError) in try await client.send("PING") }
            #expect(error?.code == .connectionFailed)
            #expect(error?.description.contains("wrong") == false)
        }
    }

    @Test("Redis down at start: start returns, commands fail at once, the client connects once it is up")
    func downAtStart() async throws {
        let port = try LoopbackPort.free()
        try await withClient("redis://127.0.0.1:\(port)") { client, _ in
            #expect(!client.isUp)
            let error = await redisError { () async throws(RedisError) in try await client.send("PING") }
            #expect(error?.code == .connectionFailed)
            let server = try await RedisServer(port: port)
            await eventually("the client connects to the server started late") { client.isUp }
            #expect(try await client.send("PING") == .simpleString("PONG"))
            server.kill()
        }
    }

    @Test("stop lets a pending command finish before it closes")
    func stopDrains() async throws {
        let server = try await RedisServer()
        try await withClient(server.url, configure: { $0.timeout = .seconds(5) }) { pauser, _ in
            var configuration = try RedisConfiguration(url: server.url)
            configuration.timeout = .seconds(5)
            let group = try EventLoopGroup(loopCount: 1, namePrefix: "redis-test")
            let client = RedisClient(configuration: configuration, group: group)
            try await client.start()
            // Long enough for the command to be seen pending on a loaded machine (200 ms was not).
            _ = try await pauser.send("CLIENT", "PAUSE", "3000", "WRITE")
            let pending = Task { () async throws(RedisError) -> RedisValue in try await client.send("INCR", "drained") }
            await eventually("the command is sent") { await client.pendingCount() == 1 }
            await client.stop(deadline: .now().advanced(by: .seconds(30)))
            #expect(try await pending.value == .integer(1))
            await group.shutdownGracefully()
        }
    }

    @Test("a server that accepts but never answers: start returns after the connect timeout")
    func silentServer() async throws {
        let (fd, port) = try silentListener()
        defer { close(fd) }
        let started = MonotonicInstant.now()
        try await withClient("redis://127.0.0.1:\(port)", configure: { $0.connectTimeout = .milliseconds(200) }) {
            client, _ in
            // Returned, not hung: generous for a loaded machine.
            #expect(started.nanoseconds(until: .now()) < 20_000_000_000)
            #expect(!client.isUp)
            let error = await redisError { () async throws(RedisError) in try await client.send("PING") }
            #expect(error?.code == .connectionFailed)
        }
    }

    @Test("after stop, commands fail with .shutdown")
    func stopped() async throws {
        let server = try await RedisServer()
        var configuration = try RedisConfiguration(url: server.url)
        configuration.timeout = .seconds(1)
        let group = try EventLoopGroup(loopCount: 1, namePrefix: "redis-test")
        let client = RedisClient(configuration: configuration, group: group)
        try await client.start()
        #expect(try await client.send("PING") == .simpleString("PONG"))
        await client.stop(deadline: .now().advanced(by: .seconds(1)))
        #expect(!client.isUp)
        let error = await redisError { () async throws(RedisError) in try await client.send("PING") }
        #expect(error?.code == .shutdown)
        await group.shutdownGracefully()
    }
}

/// The descriptors this process has open now.
/// This machine's TCP sockets whose peer is 127.0.0.1:`port`, in any state but TIME_WAIT and
/// LAST_ACK (closed by this side, on their way out): /proc/net/tcp, rather than a count of the
/// process's descriptors, which the suites running beside this one change all the time.
private func socketsConnected(toPort port: Int) -> Int {
    let fd = open("/proc/net/tcp", O_RDONLY)
    guard fd >= 0 else { return -1 }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { break }
        bytes += buffer[0..<count]
    }
    let table = String(decoding: bytes, as: UTF8.self)
    let hex = String(port, radix: 16, uppercase: true)
    let peer = "0100007F:" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    return table.split(separator: "\n").dropFirst().filter { line in
        let fields = line.split(separator: " ")
        return fields.count > 3 && fields[2] == peer && fields[3] != "06" && fields[3] != "09"
    }.count
}

/// A socket listening on 127.0.0.1 that never accepts: the kernel completes the handshakes,
/// and nothing ever answers.
private func silentListener() throws -> (CInt, Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard fd >= 0, bound == 0, named == 0, listen(fd, 16) == 0 else {
        close(fd)
        throw RedisServer.Failure(description: "listener failed")
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}
