import EventLoop
import HTTPClient

/// The upstream client as a service: its start makes it on the server's loops (so a request
/// and its upstream call stay on one loop), within the open-file budget; its stop comes after
/// the server's and after everything that calls upstreams, so no call loses its client.
final class UpstreamClientService: Service {
    let name = "upstream_client"
    private let configuration: HTTPClientConfiguration
    private let group: EventLoopGroup
    private let started = StartedValue<HTTPClient>()

    init(configuration: GatewayConfiguration, loops: ServerLoops) {
        var client = HTTPClientConfiguration()
        client.timeout = configuration.upstreamTimeout
        client.connectTimeout = configuration.upstreamConnectTimeout
        client.maxConnections = loops.descriptors.cap(configuration.upstreamMaxConnections)
        client.idleConnectionTimeout = configuration.upstreamIdleTimeout
        client.ownHTTP1Connections = configuration.upstreamOwnHTTP1
        self.configuration = client
        group = loops.group
    }

    /// The client: read only once the start succeeded.
    var client: HTTPClient { started.value }

    func start() async throws {
        started.set(try HTTPClient(configuration: configuration, group: group))
    }

    func stop(deadline: MonotonicInstant) async {
        await client.shutdown()
    }
}
