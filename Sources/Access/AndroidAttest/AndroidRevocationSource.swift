import EventLoop
package import HTTPClient
import Synchronization
package import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

/// Google's attestation revocation list as the gateway holds it: read from
/// `ANDROID_ATTEST_REVOCATION_FILE` at start, refreshed from `ANDROID_ATTEST_REVOCATION_URL`
/// every `ANDROID_ATTEST_REVOCATION_REFRESH_SECONDS` (and then written back to the file, so
/// the next start has it), never fetched per request.
///
/// A refresh that fails keeps the last good list, is logged and counted, and is tried again
/// sooner (backoff from 5 s up to the interval); the list's age is in `/metrics`, so a list
/// that stopped refreshing is seen before it matters.
package final class AndroidRevocationSource: Service {
    let name = "android_revocation_list"
    private let file: String?
    private let url: String?
    private let client = Mutex<HTTPClient?>(nil)
    private let refreshInterval: Duration
    private let logger: Logger
    private let wallClock: @Sendable () -> Double

    private struct State {
        var list = AndroidRevocationList.empty
        /// When the list in force was fetched or its file written, in Unix seconds; nil: none yet.
        var loadedAt: Double?
        var failures = 0
        var loop: Task<Void, Never>?
    }

    private let state = Mutex(State())
    private let refreshes: [Bool: Counter]

    /// The most a fetch may take.
    static let fetchTimeout: Duration = .seconds(10)

    package init(
        file: String?, url: String?, refreshInterval: Duration, registry: MetricsRegistry, logger: Logger,
        wallClock: @escaping @Sendable () -> Double
    ) {
        self.file = file
        self.url = url
        self.refreshInterval = refreshInterval
        self.logger = logger
        self.wallClock = wallClock
        let family = registry.counter(
            "textgateway_android_revocation_refreshes_total",
            help: "Loads of Google's attestation revocation list (file or URL), by result.", labels: ["result"])
        refreshes = [true: family.labels("ok"), false: family.labels("failed")]
        registry.gaugeFunction(
            "textgateway_android_revocation_list_age_seconds",
            help: "Seconds since the revocation list in force was loaded; -1 before any."
        ) { [self] in
            state.withLock { $0.loadedAt }.map { max(0, wallClock() - $0) } ?? -1
        }
        registry.gaugeFunction(
            "textgateway_android_revocation_list_entries", help: "Serials on the revocation list in force."
        ) { [self] in
            Double(state.withLock { $0.list.serials.count })
        }
    }

    /// The client the refreshes fetch with (the gateway's, made after the gateway).
    package func attach(client: HTTPClient) {
        self.client.withLock { $0 = client }
    }

    /// The list in force.
    package var list: AndroidRevocationList { state.withLock { $0.list } }

    /// Reads the file; throws when it exists but is not a list (a start with a damaged list
    /// would refuse nothing).
    package func loadFile() throws(RevocationListError) {
        guard let file else { return }
        var status = stat()
        guard stat(file, &status) == 0 else {
            // Not written yet: the first refresh writes it.
            if url == nil { throw RevocationListError("\(file) cannot be read") }
            return
        }
        guard let bytes = Self.read(path: file, limit: AndroidRevocationList.maximumBytes) else {
            throw RevocationListError("\(file) cannot be read")
        }
        let list = try AndroidRevocationList(json: bytes)
        state.withLock {
            $0.list = list
            $0.loadedAt = Double(status.st_mtim.tv_sec)
        }
        refreshes[true]?.increment()
    }

    func start() async throws {
        try loadFile()
        guard url != nil, client.withLock({ $0 }) != nil else { return }
        if await !refresh(), state.withLock({ $0.loadedAt == nil }) {
            logger.error(
                "android_revocation_unavailable",
                [("effect", .string("no revocation list yet: no certificate is refused as revoked; retrying"))])
        }
        let task = Task { [weak self] in
            while !Task.isCancelled {
                guard let delay = self?.nextDelay() else { return }
                try? await Task.sleep(for: delay)
                if Task.isCancelled { return }
                _ = await self?.refresh()
            }
        }
        state.withLock { $0.loop = task }
    }

    func stop(deadline: MonotonicInstant) async {
        let loop = state.withLock { $0.loop }
        loop?.cancel()
        await loop?.value
    }

    private func nextDelay() -> Duration {
        let failures = state.withLock { $0.failures }
        guard failures > 0 else { return refreshInterval }
        return min(refreshInterval, .seconds(5) * (1 << min(failures - 1, 10)))
    }

    /// One fetch from the URL; installs and writes the list when it is one. Whether it was.
    @discardableResult
    package func refresh() async -> Bool {
        guard let url, let client = client.withLock({ $0 }) else { return false }
        let outcome: Result<([UInt8], AndroidRevocationList), RevocationListError>
        do {
            let response = try await client.send(
                HTTPClientRequest(
                    url: url, headers: [("Accept", "application/json")], timeout: Self.fetchTimeout,
                    connectTimeout: Self.fetchTimeout))
            if response.status != 200 {
                outcome = .failure(RevocationListError("the server answered \(response.status)"))
            } else {
                outcome = Result { () throws(RevocationListError) in
                    (response.body, try AndroidRevocationList(json: response.body))
                }
            }
        } catch {
            outcome = .failure(RevocationListError("the fetch failed (\(error))"))
        }
        switch outcome {
        case .success(let (body, list)):
            let now = wallClock()
            let changed = state.withLock { state -> Bool in
                let changed = state.list != list
                state.list = list
                state.loadedAt = now
                state.failures = 0
                return changed
            }
            refreshes[true]?.increment()
            if changed { logger.info("android_revocation_loaded", [("entries", .int(list.serials.count))]) }
            if let file, !Self.write(body, to: file) {
                logger.warning("android_revocation_not_written", [("path", .string(file))])
            }
            return true
        case .failure(let error):
            let failures = state.withLock { state -> Int in
                state.failures += 1
                return state.failures
            }
            refreshes[false]?.increment()
            logger.error(
                "android_revocation_refresh_failed",
                [
                    ("reason", .string(error.description)), ("consecutive_failures", .int(failures)),
                    ("effect", .string("the last good list stays in force")),
                ])
            return false
        }
    }

    /// At most `limit` bytes of the file at `path`; nil when it cannot be read or is longer.
    static func read(path: String, limit: Int) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { return bytes }
            bytes += chunk[..<count]
            if bytes.count > limit { return nil }
        }
    }

    /// Writes `bytes` beside `path` and renames it over, so a reader never sees half a list.
    static func write(_ bytes: [UInt8], to path: String) -> Bool {
        let temporary = path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return false }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                close(descriptor)
                unlink(temporary)
                return false
            }
            written += count
        }
        let synced = fsync(descriptor) == 0
        let closed = close(descriptor) == 0
        guard synced, closed, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }
}
