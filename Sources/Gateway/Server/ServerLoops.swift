import EventLoop
import HTTPClient

/// The event loops the server and the upstream client share (a request and its upstream call
/// stay on one loop), with their polling, and the open-file budget their connections share.
struct ServerLoops: Sendable {
    let group: EventLoopGroup
    let count: Int
    /// How long a loop polls for events before it sleeps (`EVENT_LOOP_POLL_MICROSECONDS`).
    let pollLimit: Duration
    let polling: LoopPolling?
    let descriptors: DescriptorBudget

    /// Starts the loops' threads; raises the open-file limit as far as it goes.
    init(configuration: GatewayConfiguration) throws {
        count = configuration.loopCount > 0 ? configuration.loopCount : EventLoopGroup.processorCount
        pollLimit = configuration.loopPollLimit(cpuQuota: EventLoopGroup.cgroupQuotaCPUs())
        let polling = pollLimit > .zero ? LoopPolling(limit: pollLimit, idleCPU: IdleCPU()) : nil
        self.polling = polling
        descriptors = DescriptorBudget(
            limit: Socket.raiseOpenFileLimit(), loops: count,
            connectionsPerCurlHandle: HTTPClientConfiguration().transfersPerCurlHandle
        )
        group = try EventLoopGroup(loopCount: count, namePrefix: "loop", polling: polling)
    }
}
