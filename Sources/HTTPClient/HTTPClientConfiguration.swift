/// Limits and timeouts of an ``HTTPClient``.
package struct HTTPClientConfiguration: Sendable {
    /// Time allowed to establish a connection (TCP and TLS).
    package var connectTimeout: Duration = .seconds(10)
    /// Time allowed for a whole request, unless the request says otherwise.
    package var timeout: Duration = .seconds(60)
    /// Most open upstream connections in total, split evenly across the loops; requests
    /// beyond it wait for a free connection. Connections to https hosts that multiplex are
    /// bounded apart, by ``http2ConnectionsPerHost``.
    package var maxConnections: Int = 8192
    /// Most transfers one curl multi handle carries; beyond it a loop opens another handle.
    /// Curl walks a handle's connection list on every start, so thousands of transfers on
    /// one handle cost thousands of steps each.
    package var transfersPerCurlHandle: Int = 256
    /// Idle upstream connections are kept for reuse this long after the last transfer that
    /// could have used them, then closed.
    package var idleConnectionTimeout: Duration = .seconds(60)
    /// Largest response body `send` accepts.
    package var maxResponseBytes: Int = 16 * 1024 * 1024
    /// A streamed response pauses the transfer while more than this many bytes wait for
    /// the consumer.
    package var streamHighWatermark: Int = 256 * 1024
    /// Most connections one loop opens to one https host while that host is not known to
    /// answer in HTTP/1.1: HTTP/2 carries many requests on each, so a burst waits for streams
    /// on these rather than opening a connection per request. Plain http is bounded only by
    /// ``maxConnections``; an https host seen answering in HTTP/1.1 is too, from then on.
    package var http2ConnectionsPerHost: Int = 8
    /// Most requests in flight on one HTTP/2 connection (the server's own limit applies too).
    package var http2StreamsPerConnection: Int = 1000
    /// Send TCP keep-alive probes on idle upstream connections.
    package var tcpKeepAlive: Bool = true
    /// Plain `http://` upstreams go over the client's own HTTP/1.1 connections
    /// (``PlainConnections``); false: curl carries every request. The client turns it off
    /// itself when the environment names a proxy for http (`http_proxy`, `ALL_PROXY`), which
    /// only curl honours.
    package var ownHTTP1Connections: Bool = true

    package init() {}
}
