import EventLoop
package import HTTPClient
import Synchronization
package import Telemetry

/// `JWT_JWKS_URL`: the key set fetched with the gateway's HTTP client at start, every
/// `JWT_JWKS_REFRESH_SECONDS`, and at once when a token names a `kid` the set lacks (a key
/// rotated in at the identity service) — at most once per ``unknownKeyInterval``, so tokens
/// with made-up `kid`s cannot turn the gateway into a flood of fetches.
///
/// Fetches never overlap: a caller that asks while one runs waits for that one. A fetch that
/// fails (transport, a status other than 200, a body that is not a usable key set) keeps the
/// last good set in force, is logged and counted, and is tried again sooner (backoff from
/// 5 s up to the refresh interval).
package final class JWKSURLSource: Service {
    let url: String
    private let client: HTTPClient
    private let verifier: JWTVerifier
    private let logger: Logger
    private let metrics: JWTMetrics?
    private let refreshInterval: Duration
    let name = "jwks_url"

    /// The least time between two fetches asked for by unknown `kid`s.
    static let unknownKeyInterval: Duration = .seconds(10)
    /// The time one fetch may take.
    static let fetchTimeout: Duration = .seconds(5)

    private struct State {
        var inFlight: Task<Bool, Never>?
        var lastUnknownKeyFetch: MonotonicInstant?
        var failures = 0
        var loop: Task<Void, Never>?
    }

    private let state = Mutex(State())

    package init(
        url: String, client: HTTPClient, verifier: JWTVerifier, refreshInterval: Duration, logger: Logger,
        metrics: JWTMetrics?
    ) {
        self.url = url
        self.client = client
        self.verifier = verifier
        self.refreshInterval = refreshInterval
        self.logger = logger
        self.metrics = metrics
    }

    /// Fetches the set once (waiting at most ``fetchTimeout``), then refreshes it in the
    /// background; wires the verifier's unknown-`kid` fetches to this source.
    func start() async throws {
        verifier.onUnknownKey { [weak self] in await self?.fetchForUnknownKey() }
        if await !fetch() {
            logger.error(
                "jwks_unavailable", [("effect", .string("JWTs are refused until the key set is fetched; retrying"))])
        }
        let task = Task { [weak self] in
            while !Task.isCancelled {
                guard let delay = self?.nextDelay() else { return }
                try? await Task.sleep(for: delay)
                if Task.isCancelled { return }
                _ = await self?.fetch()
            }
        }
        state.withLock { $0.loop = task }
    }

    func stop(deadline: MonotonicInstant) async {
        let (loop, inFlight) = state.withLock { ($0.loop, $0.inFlight) }
        loop?.cancel()
        inFlight?.cancel()
        await loop?.value
        _ = await inFlight?.value
    }

    /// The wait before the next scheduled fetch: the refresh interval, or less after failures.
    private func nextDelay() -> Duration {
        let failures = state.withLock { $0.failures }
        guard failures > 0 else { return refreshInterval }
        return min(refreshInterval, .seconds(5) * (1 << min(failures - 1, 10)))
    }

    /// A fetch for a token whose `kid` is unknown, unless one ran within ``unknownKeyInterval``.
    func fetchForUnknownKey() async {
        let now = MonotonicInstant.now()
        let allowed = state.withLock { state in
            if let last = state.lastUnknownKeyFetch, now < last.advanced(by: Self.unknownKeyInterval) { return false }
            state.lastUnknownKeyFetch = now
            return true
        }
        guard allowed else { return }
        _ = await fetch()
    }

    /// Fetches and installs the key set, or joins the fetch in flight; whether it succeeded.
    @discardableResult
    func fetch() async -> Bool {
        let task = state.withLock { state -> Task<Bool, Never> in
            if let running = state.inFlight { return running }
            let task = Task { [self] in await fetchOnce() }
            state.inFlight = task
            return task
        }
        let succeeded = await task.value
        state.withLock { state in
            if state.inFlight == task { state.inFlight = nil }
        }
        return succeeded
    }

    /// The key set at `url`: one GET within ``fetchTimeout``, a `200`, a usable set.
    package static func fetchSet(url: String, client: HTTPClient) async -> Result<JWKSet, JWKSetError> {
        do {
            let request = HTTPClientRequest(
                url: url, headers: [("Accept", "application/jwk-set+json, application/json")], timeout: fetchTimeout,
                connectTimeout: fetchTimeout
            )
            let response = try await client.send(request)
            guard response.status == 200 else { return .failure(JWKSetError("the server answered \(response.status)")) }
            return Result { () throws(JWKSetError) in try JWKSet.parse(response.body) }
        } catch {
            return .failure(JWKSetError("the fetch failed (\(error))"))
        }
    }

    private func fetchOnce() async -> Bool {
        let outcome = await Self.fetchSet(url: url, client: client)
        switch outcome {
        case .success(let set):
            let changed = verifier.install(set)
            state.withLock { $0.failures = 0 }
            metrics?.recordLoad(source: "url", succeeded: true)
            if changed {
                logger.info(
                    "jwks_loaded",
                    [("source", .string("url")), ("keys", .int(set.keys.count)), ("skipped", .int(set.skipped))])
            }
            return true
        case .failure(let error):
            let failures = state.withLock { state -> Int in
                state.failures += 1
                return state.failures
            }
            metrics?.recordLoad(source: "url", succeeded: false)
            logger.error(
                "jwks_load_failed",
                [
                    ("source", .string("url")), ("reason", .string(error.description)),
                    ("consecutive_failures", .int(failures)),
                    (
                        "effect",
                        .string(
                            verifier.keySet.keys.isEmpty
                                ? "no key set yet: RS256 and ES256 tokens are refused"
                                : "the last good key set stays in force")
                    ),
                ])
            return false
        }
    }
}
