import ChatAPI
import EventLoop
import HTTPServer
import Synchronization
import Tracing

/// The clock of one streamed answer, shared by the task reading the upstream, the watchdog
/// that sends heartbeats and enforces the stream timeouts, and a shutdown that ends it.
final class StreamControl: Sendable {
    enum EndReason: Sendable, Equatable {
        case firstTokenTimeout, idleTimeout, totalTimeout, shutdown
    }

    struct Limits: Sendable {
        var firstToken: Duration
        var idle: Duration
        var total: Duration
        var heartbeat: Duration
    }

    private struct State {
        var lastWrite: MonotonicInstant
        var lastUpstream: MonotonicInstant
        var sawToken = false
        var endReason: EndReason?
    }

    private let started: MonotonicInstant
    private let limits: Limits
    private let state: Mutex<State>
    /// The trace of the request the stream answers, which notes its first token: the stream
    /// runs after the route returned, outside the task-local's scope, so it is taken here.
    private let trace: TraceRecorder?

    init(limits: Limits, now: MonotonicInstant = .now()) {
        started = now
        self.limits = limits
        state = Mutex(State(lastWrite: now, lastUpstream: now))
        trace = CurrentTrace.recorder
    }

    var endReason: EndReason? { state.withLock { $0.endReason } }

    func noteWrite(_ now: MonotonicInstant = .now()) {
        state.withLock { $0.lastWrite = now }
    }

    /// The upstream sent something; `token` when it carried answer text.
    func noteUpstream(token: Bool, _ now: MonotonicInstant = .now()) {
        let first = state.withLock { state -> Bool in
            state.lastUpstream = now
            guard token, !state.sawToken else { return false }
            state.sawToken = true
            return true
        }
        if first { trace?.noteFirstToken() }
    }

    /// Asks the stream to end (e.g. at the end of a shutdown's grace period).
    func end(_ reason: EndReason) {
        state.withLock { if $0.endReason == nil { $0.endReason = reason } }
    }

    /// Checks the time limits at `now`: records and returns the one that passed, if any.
    func checkTimeouts(_ now: MonotonicInstant = .now()) -> EndReason? {
        state.withLock { state in
            if let reason = state.endReason { return reason }
            let reason: EndReason?
            if started.nanoseconds(until: now) >= limits.total.nanosecondsClamped {
                reason = .totalTimeout
            } else if !state.sawToken && started.nanoseconds(until: now) >= limits.firstToken.nanosecondsClamped {
                reason = .firstTokenTimeout
            } else if state.sawToken && state.lastUpstream.nanoseconds(until: now) >= limits.idle.nanosecondsClamped {
                reason = .idleTimeout
            } else {
                reason = nil
            }
            state.endReason = reason
            return reason
        }
    }

    /// Whether the client has heard nothing for a heartbeat interval.
    func needsHeartbeat(_ now: MonotonicInstant = .now()) -> Bool {
        state.withLock { $0.lastWrite.nanoseconds(until: now) >= limits.heartbeat.nanosecondsClamped }
    }

    /// How often the watchdog looks: often enough for the shortest limit.
    var tick: Duration {
        let shortest = min(limits.heartbeat, limits.firstToken, limits.idle)
        return max(.milliseconds(20), min(.milliseconds(250), shortest / 4))
    }

    /// Runs `work` (reading the upstream and writing to the client) beside a watchdog that
    /// sends heartbeats and, when a time limit passes or ``end(_:)`` is called, cancels
    /// `work`, which then reports how it ended. `clientGone` is the outcome when a heartbeat
    /// finds the client gone.
    func run<Outcome: Sendable>(
        _ writer: ResponseBodyWriter,
        clientGone: Outcome,
        _ work: @escaping @Sendable () async -> Outcome
    ) async -> Outcome {
        await withTaskGroup(of: Outcome?.self) { group -> Outcome in
            group.addTask { await work() }
            group.addTask { await self.watch(writer) ? nil : clientGone }
            var result = clientGone
            for await value in group {
                if let value {
                    result = value
                    group.cancelAll()
                } else if endReason != nil {
                    group.cancelAll() // the watchdog ended the stream: stop reading the upstream
                }
            }
            return result
        }
    }

    /// Heartbeats and time limits until cancelled or a limit passes; false when the client is gone.
    private func watch(_ writer: ResponseBodyWriter) async -> Bool {
        while !Task.isCancelled {
            try? await Task.sleep(for: tick)
            if Task.isCancelled || checkTimeouts() != nil { return true }
            if needsHeartbeat() {
                do {
                    try await writer.write(ServerSentEventWriter.comment("ping"))
                } catch {
                    return false
                }
                noteWrite()
            }
        }
        return true
    }
}

extension StreamControl.EndReason {
    /// What a stream the gateway ended tells its client, and how the request ended.
    var ending: (error: GatewayError, outcome: RequestOutcome) {
        self == .shutdown ? (.shuttingDown, .shutdown) : (.upstreamTimeout, .streamTimeout)
    }
}

extension StreamReport {
    /// A stream that ends with one last `error` event in `shape`, and why.
    static func failed(
        _ error: GatewayError, outcome: RequestOutcome, shape: ErrorShape, context: RequestContext,
        upstream: UpstreamSpan?
    ) -> StreamReport {
        StreamReport(
            outcome: outcome, error: error, upstream: upstream,
            lastEvent: ErrorRenderer.event(error, shape: shape, requestID: context.id, language: context.language))
    }
}

extension StreamControl.Limits {
    /// The time limits of a stream, from the configuration.
    init(_ configuration: GatewayConfiguration) {
        self.init(
            firstToken: configuration.streamFirstTokenTimeout, idle: configuration.streamIdleTimeout,
            total: configuration.streamTotalTimeout, heartbeat: configuration.heartbeatInterval
        )
    }
}
