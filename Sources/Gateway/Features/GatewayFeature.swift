import EventLoop

/// One concern of the gateway (its limits, its jobs, the console, …): the routes it serves,
/// each with its middleware, and the services that run beside them. A feature is made from the
/// configuration and the ``GatewayParts`` it needs; `Gateway.init` lists them in order.
protocol GatewayFeature: Sendable {
    /// The routes, in the order the gateway declares them. Read once.
    var routes: [Route] { get }
    /// Started in this order after the upstream client and Redis, stopped in reverse before them.
    var services: [any Service] { get }
}

extension GatewayFeature {
    var routes: [Route] { [] }
    var services: [any Service] { [] }
}
