/// Limits and timeouts of an ``HTTPClient``.
public struct HTTPClientConfiguration: Sendable {
    /// Time allowed to establish a connection (TCP and TLS).
    public var connectTimeout: Duration = .seconds(10)
    /// Time allowed for a whole request, unless the request says otherwise.
    public var timeout: Duration = .seconds(60)
    /// Most open upstream connections in total, split evenly across the loops; requests
    /// beyond it wait for a free connection.
    public var maxConnections: Int = 8192
    /// Most transfers one curl multi handle carries; beyond it a loop opens another handle.
    /// Curl walks a handle's connection list on every start, so thousands of transfers on
    /// one handle cost thousands of steps each.
    public var transfersPerCurlHandle: Int = 256
    /// Idle upstream connections are kept for reuse this long after the last transfer that
    /// could have used them, then closed.
    public var idleConnectionTimeout: Duration = .seconds(60)
    /// Largest response body `send` accepts.
    public var maxResponseBytes: Int = 16 * 1024 * 1024
    /// A streamed response pauses the transfer while more than this many bytes wait for
    /// the consumer.
    public var streamHighWatermark: Int = 256 * 1024
    /// Send TCP keep-alive probes on idle upstream connections.
    public var tcpKeepAlive: Bool = true

    public init() {}
}
