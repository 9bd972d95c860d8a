import HTTPServer
import Synchronization

/// The streams being answered, so a shutdown can end each with a last event.
final class StreamRegistry: Sendable {
    private let streams = Mutex<[ObjectIdentifier: StreamControl]>([:])

    /// Runs a stream while it is known to ``endAll()``.
    func withRegistered<T>(_ control: StreamControl, _ body: () async throws -> T) async rethrows -> T {
        let key = ObjectIdentifier(control)
        streams.withLock { $0[key] = control }
        defer { _ = streams.withLock { $0.removeValue(forKey: key) } }
        return try await body()
    }

    /// Ends every stream in flight with an `error` event (`shutting_down`).
    func endAll() {
        for control in streams.withLock({ Array($0.values) }) { control.end(.shutdown) }
    }
}

extension StreamControl.EndReason {
    /// What a stream the gateway ended tells its client, and how the request ended.
    var ending: (error: GatewayError, outcome: RequestOutcome) {
        self == .shutdown ? (.shuttingDown, .shutdown) : (.upstreamTimeout, .streamTimeout)
    }
}

extension RequestContext {
    /// Ends a stream with one last `error` event in `shape`, and records why.
    func failStream(_ error: GatewayError, outcome: RequestOutcome, shape: ErrorShape, _ writer: ResponseBodyWriter) async throws {
        update {
            $0.error = error
            $0.outcome = outcome
        }
        try await writer.write(ErrorRenderer.event(error, shape: shape, requestID: id, language: language))
    }
}
