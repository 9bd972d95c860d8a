import EventLoop
import Foundation
package import Postgres
package import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A PostgreSQL 15 cluster of a test's own: initdb into a temporary directory, the server on
/// a free loopback port, removed at the end. Postgres refuses to run as root, so as root
/// (CI) the server runs as the `postgres` user.
package final class PostgresCluster: Sendable {
    static let binaries = "/usr/lib/postgresql/15/bin"
    /// The user the cluster is made for, with trust authentication on loopback.
    package static let user = "textgateway"

    /// The cluster the suite's trait made, for the tests inside it.
    @TaskLocal package static var shared: PostgresCluster?

    package let directory: String
    package let port: Int
    package var dataDirectory: String { directory + "/data" }

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    private init(directory: String, port: Int) {
        self.directory = directory
        self.port = port
    }

    /// Makes and starts a cluster; blocking steps run on a thread of their own.
    package static func start() async throws -> PostgresCluster {
        try await DetachedThread.run { () throws -> PostgresCluster in
            var template = Array("/tmp/tgpg-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else { throw Failure(description: "mkdtemp failed") }
            let directory = String(cString: made)
            if getuid() == 0 {
                guard let account = getpwnam("postgres") else { throw Failure(description: "no postgres user") }
                chown(directory, account.pointee.pw_uid, account.pointee.pw_gid)
            }
            let cluster = PostgresCluster(directory: directory, port: try LoopbackPort.free())
            do {
                try cluster.run(
                    binaries + "/initdb",
                    ["-D", cluster.dataDirectory, "-A", "trust", "-U", user, "-E", "UTF8", "--no-sync"])
                try cluster.pgctl(["start", "-w", "-t", "180", "-o", cluster.serverOptions])
            } catch {
                cluster.removeNow()
                throw error
            }
            return cluster
        }
    }

    /// All of a suite's tests run at once, each holding a few connections: the store suites
    /// peak near 80, and a connection refused for want of a slot fails its test once its
    /// query timeout passes, which a loaded machine reaches. 200 leaves room to spare.
    private var serverOptions: String {
        "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    }

    /// A configuration for this cluster's database `database`.
    package func configuration(database: String = "postgres", queryTimeout: Duration = .seconds(10))
        -> PostgresConfiguration
    {
        PostgresConfiguration(
            host: "127.0.0.1", port: port, user: Self.user, database: database, sslMode: .disable,
            connectTimeout: .seconds(5), queryTimeout: queryTimeout,
            minReconnectDelay: .milliseconds(20), maxReconnectDelay: .milliseconds(500)
        )
    }

    package func restart() async throws {
        try await DetachedThread.run { () throws in
            try self.pgctl(["restart", "-m", "fast", "-w", "-t", "180", "-o", self.serverOptions])
        }
    }

    package func stopServer() async throws {
        try await DetachedThread.run { () throws in try self.pgctl(["stop", "-m", "fast", "-w", "-t", "180"]) }
    }

    package func startServer() async throws {
        try await DetachedThread.run { () throws in
            try self.pgctl(["start", "-w", "-t", "180", "-o", self.serverOptions])
        }
    }

    /// Stops the server and removes the directory.
    package func remove() async {
        await DetachedThread.run { self.removeNow() }
    }

    private func removeNow() {
        _ = try? pgctl(["stop", "-m", "immediate", "-w", "-t", "30"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func pgctl(_ arguments: [String]) throws {
        try run(Self.binaries + "/pg_ctl", ["-D", dataDirectory, "-l", directory + "/server.log"] + arguments)
    }

    /// Runs `executable` as the postgres user when we are root; throws with its output on
    /// failure. posix_spawn and waitpid directly: the output goes to a file, not a pipe (the
    /// server pg_ctl starts inherits the descriptor, so a pipe would never reach its end).
    private func run(_ executable: String, _ arguments: [String]) throws {
        let argv =
            getuid() == 0
            ? ["/usr/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        let outputPath = directory + "/command.log"
        // Its descriptors would be inherited by the server pg_ctl starts too: none are.
        let pid = try spawnChild(argv, output: .file(outputPath))
        var status: CInt = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw Failure(description: "\(executable) \(arguments.first ?? "") failed (\(status)): " + text)
        }
    }
}

/// Gives a suite one cluster for all its tests (and the suites inside it), removed once they
/// have run: started at once (``PostgresCluster/shared``), or by the first test that asks
/// (``LazyPostgresCluster/current``), so that a run that needs none starts none.
package struct PostgresClusterTrait: SuiteTrait, TestScoping {
    let lazy: Bool

    package var isRecursive: Bool { false }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @concurrent @Sendable () async throws -> Void
    ) async throws {
        let holder = LazyPostgresCluster()
        let cluster = lazy ? nil : try await holder.cluster()
        do {
            try await LazyPostgresCluster.$current.withValue(holder) {
                try await PostgresCluster.$shared.withValue(cluster) { try await function() }
            }
        } catch {
            await holder.remove()
            throw error
        }
        await holder.remove()
    }
}

extension Trait where Self == PostgresClusterTrait {
    /// A cluster for the suite: ``PostgresCluster/shared`` inside its tests.
    package static var postgresCluster: Self { PostgresClusterTrait(lazy: false) }

    /// A cluster started on first use: ``LazyPostgresCluster/current`` inside the suite's tests.
    package static var lazyPostgresCluster: Self { PostgresClusterTrait(lazy: true) }
}

/// Runs `body` with a started client on a group of its own, then stops both.
package func withClient<T>(
    _ configuration: PostgresConfiguration, loops: Int = 1, connectionsPerLoop: Int = 1, waitForConnection: Bool = true,
    _ body: (PostgresClient) async throws -> T
) async throws -> T {
    let group = try EventLoopGroup(loopCount: loops, namePrefix: "pg-test")
    let client = PostgresClient(configuration: configuration, group: group, connectionsPerLoop: connectionsPerLoop)
    try await client.start()
    do {
        if waitForConnection {
            let connected = await eventually(
                "the client has its \(loops * connectionsPerLoop) connections", onTimeout: .returnsFalse
            ) { await client.connectedCount() == loops * connectionsPerLoop }
            try #require(connected, "the client did not connect")
        }
        let result = try await body(client)
        await client.stop(deadline: MonotonicInstant.now().advanced(by: .seconds(5)))
        await group.shutdownGracefully()
        return result
    } catch {
        await client.stop(deadline: MonotonicInstant.now().advanced(by: .seconds(5)))
        await group.shutdownGracefully()
        throw error
    }
}

/// A cluster started by the first test that asks for one (``cluster()``), shared by every
/// test of the suite that carries ``PostgresClusterTrait``, and removed after the suite.
package actor LazyPostgresCluster {
    /// The lazy cluster of the suite around the running test.
    @TaskLocal package static var current: LazyPostgresCluster?

    private var starting: Task<PostgresCluster, any Error>?
    private var databases = 0

    init() {}

    package func cluster() async throws -> PostgresCluster {
        if let starting { return try await starting.value }
        let task = Task { try await PostgresCluster.start() }
        starting = task
        return try await task.value
    }

    /// A new, empty database of the cluster (each test its own); returns its name.
    package func createDatabase() async throws -> (PostgresCluster, String) {
        let cluster = try await cluster()
        databases += 1
        let name = "test_\(databases)_\(UInt32.random(in: 0...UInt32.max))"
        try await withClient(cluster.configuration()) { client in
            _ = try await client.query("CREATE DATABASE \(name)")
        }
        return (cluster, name)
    }

    func remove() async {
        guard let starting, let cluster = try? await starting.value else { return }
        await cluster.remove()
    }
}
