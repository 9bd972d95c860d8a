import EventLoop
import Redis
import TestSupport
import Testing

/// A redis-server of the test's own and a client on one loop loaded with `scripts`, for
/// `body`; all stopped after it, whether or not it threw.
func withRedis(
    scripts: [RedisScript], namePrefix: String, _ body: (RedisClient, RedisServer) async throws -> Void
) async throws {
    let server = try await RedisServer()
    let group = try EventLoopGroup(loopCount: 1, namePrefix: namePrefix)
    var configuration = try RedisConfiguration(url: server.url)
    configuration.timeout = .seconds(2)
    let client = RedisClient(configuration: configuration, group: group, scripts: scripts)
    try await client.start()
    // The connection is made in the background: a loaded machine can take longer than the
    // first command's wait, so the test waits until the server answers.
    await eventually("redis-server answers PING") { (try? await client.send("PING")) != nil }
    let outcome: Result<Void, any Error>
    do {
        try await body(client, server)
        outcome = .success(())
    } catch {
        outcome = .failure(error)
    }
    await client.stop(deadline: .now())
    await group.shutdownGracefully()
    server.kill()
    try outcome.get()
}
