import EventLoop
import HTTPServer

/// The gateway's HTTP server as a service: it starts listening, and stops with the
/// gateway's drain (the grace period, then a last event on every stream).
final class GatewayHTTPService: Service {
    let name = "http_server"
    let server: HTTPServer
    let gateway: Gateway
    private let started = StartedValue<SocketAddress>()

    /// A server on `loops` that answers through `gateway`, its connections within the
    /// open-file budget.
    init(gateway: Gateway, loops: ServerLoops) throws {
        var configuration = gateway.serverConfiguration()
        configuration.maxConnections = loops.descriptors.cap(configuration.maxConnections)
        server = try HTTPServer(configuration: configuration, group: loops.group) { await gateway.respond(to: $0) }
        self.gateway = gateway
    }

    /// The address the server listens on: read only once the start succeeded.
    var address: SocketAddress { started.value }

    func start() async throws {
        started.set(try await server.start())
    }

    func stop(deadline: MonotonicInstant) async {
        let gateway = self.gateway
        await server.shutdown(
            gracePeriod: gateway.configuration.shutdownGrace,
            whenGraceEnds: {
                gateway.endStreams()
            })
    }
}
