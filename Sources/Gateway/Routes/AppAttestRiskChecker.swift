import Access
import Crypto
import EventLoop
import HTTPClient
import JSON
import Store
import Synchronization
import Telemetry

/// Apple's fraud-risk metric for each new iPhone (docs/app-attest.md, "One phone, one
/// device"): after a registration, the device's receipt is sent to Apple's App Attest server
/// with a JWT signed by the operator's App Attest key; the receipt Apple returns says roughly
/// how many keys this app attested on that phone in 30 days. It is kept with the device, and
/// a device over `APP_ATTEST_RISK_MAXIMUM` is revoked: one phone resetting its key over and
/// over to get fresh quotas is one device no more.
///
/// Asynchronous: registrations wait for nothing. The queue is bounded (what does not fit is
/// counted as dropped); a failed exchange is tried again twice, 2 s and 8 s later, then counted.
final class AppAttestRiskChecker: Service {
    let name = "app_attest_risk"
    private let settings: AppAttestSettings.RiskCheck
    private let key: PrivateKey
    private let repository: any DeviceRepository
    private let roots: [X509Certificate]
    private let logger: Logger
    private let clock: @Sendable () -> Instant
    private let client = Mutex<HTTPClient?>(nil)
    private let results: [String: Counter]
    private let queue: AsyncStream<StoredDevice>
    private let input: AsyncStream<StoredDevice>.Continuation
    private let worker = Mutex<Task<Void, Never>?>(nil)

    /// The most registrations waiting for their check.
    static let capacity = 1000
    /// The time one exchange may take.
    static let timeout: Duration = .seconds(10)
    /// The waits before the second and third tries.
    static let retryDelays: [Duration] = [.seconds(2), .seconds(8)]

    /// How one check ended.
    enum Outcome: String, CaseIterable {
        case ok
        case overLimit = "over_limit"
        case notModified = "not_modified"
        case failed
        case dropped
    }

    init(
        settings: AppAttestSettings.RiskCheck, key: PrivateKey, repository: any DeviceRepository,
        extraRoot: X509Certificate?, registry: MetricsRegistry, logger: Logger, clock: @escaping @Sendable () -> Instant
    ) {
        self.settings = settings
        self.key = key
        self.repository = repository
        // The receipt's root is Apple's; a test root beside it only under --env testing.
        let apple = try? X509Certificate(pem: AppAttestReceipt.appleRootG3PEM)
        roots = [apple, extraRoot].compactMap { $0 }
        self.logger = logger
        self.clock = clock
        let family = registry.counter(
            "textgateway_app_attest_risk_checks_total",
            help: "Exchanges of new iPhones' receipts for Apple's risk metric, by result.", labels: ["result"])
        results = Dictionary(uniqueKeysWithValues: Outcome.allCases.map { ($0.rawValue, family.labels($0.rawValue)) })
        (queue, input) = AsyncStream.makeStream(of: StoredDevice.self, bufferingPolicy: .bufferingOldest(Self.capacity))
    }

    /// The client the exchanges go through (the gateway's, made after the gateway).
    func attach(client: HTTPClient) {
        self.client.withLock { $0 = client }
    }

    /// Asks for `device`'s metric soon; never waits.
    func enqueue(_ device: StoredDevice) {
        if case .dropped = input.yield(device) { results[Outcome.dropped.rawValue]?.increment() }
    }

    func start() async throws {
        let task = Task { [self] in
            for await device in queue {
                _ = await checkWithRetries(device)
            }
        }
        worker.withLock { $0 = task }
    }

    func stop(deadline: MonotonicInstant) async {
        input.finish()
        let task = worker.withLock { $0 }
        task?.cancel()
        await task?.value
    }

    private func checkWithRetries(_ device: StoredDevice) async -> Outcome {
        var outcome = await check(device)
        for delay in Self.retryDelays where outcome == .failed && !Task.isCancelled {
            try? await Task.sleep(for: delay)
            if Task.isCancelled { break }
            outcome = await check(device)
        }
        results[outcome.rawValue]?.increment()
        return outcome
    }

    /// One exchange for `device`: its metric kept, and the device revoked when over the maximum.
    func check(_ device: StoredDevice) async -> Outcome {
        guard let client = client.withLock({ $0 }), let environment = AppAttestEnvironment(rawValue: device.environment)
        else { return .failed }
        let url = settings.url ?? AppAttestSettings.RiskCheck.appleURL(environment)
        let token: String
        do {
            token = try authorization(team: String(device.appID.prefix(10)))
        } catch {
            logFailure(device, "the authorization token cannot be signed")
            return .failed
        }
        let response: HTTPClientResponse
        do {
            response = try await client.send(
                HTTPClientRequest(
                    method: "POST", url: url, headers: [("Authorization", token)],
                    body: Array(Base64URL.encodeStandard(device.receipt).utf8), timeout: Self.timeout,
                    connectTimeout: Self.timeout))
        } catch {
            logFailure(device, "the exchange failed (\(error))")
            return .failed
        }
        switch response.status {
        case 200: break
        case 304: return .notModified
        default:
            logFailure(device, "Apple's server answered \(response.status)")
            return .failed
        }
        let body = response.body.filter { $0 != 0x0A && $0 != 0x0D && $0 != 0x20 }
        guard let der = Base64URL.decodeStandard(body) else {
            logFailure(device, "the answer is not base64")
            return .failed
        }
        let receipt: AppAttestReceipt
        do {
            receipt = try AppAttestReceipt.verified(
                der, roots: roots, at: Int64(clock().secondsSinceEpoch), appID: device.appID, point: device.publicKey)
        } catch {
            logFailure(device, error.description)
            return .failed
        }
        let metric = receipt.riskMetric.map(Int64.init)
        do {
            _ = try await repository.recordRisk(deviceID: device.id, receipt: der, riskMetric: metric)
        } catch {
            logFailure(device, "the store did not keep the metric (\(error.code))")
            return .failed
        }
        guard let metric, metric > Int64(settings.maximum) else {
            logger.info(
                "app_attest_risk", [("device_id", .string(device.id)), ("risk_metric", .int(Int(metric ?? 0)))])
            return .ok
        }
        do {
            _ = try await repository.revokeDevice(
                id: device.id, atMilliseconds: Int64(clock().secondsSinceEpoch * 1000))
        } catch {
            logFailure(device, "the store did not revoke the device (\(error.code))")
            return .failed
        }
        logger.warning(
            "app_attest_risk_over_limit",
            [
                ("device_id", .string(device.id)), ("risk_metric", .int(Int(metric))),
                ("maximum", .int(settings.maximum)), ("effect", .string("the device is revoked")),
            ])
        return .overLimit
    }

    /// The JWT Apple's server takes: ES256 with the App Attest key, `kid` its id, `iss` the team.
    func authorization(team: String) throws(CryptoError) -> String {
        var header = JSONWriter(capacity: 48)
        header.object {
            $0.field("alg", "ES256")
            $0.field("kid", settings.keyID)
        }
        var claims = JSONWriter(capacity: 48)
        claims.object {
            $0.field("iss", team)
            $0.field("iat", Int(clock().secondsSinceEpoch))
        }
        let input = Base64URL.encode(header.bytes) + "." + Base64URL.encode(claims.bytes)
        let signature = try key.signature(for: Array(input.utf8), algorithm: .ecdsaP256SHA256)
        return input + "." + Base64URL.encode(signature)
    }

    private func logFailure(_ device: StoredDevice, _ reason: String) {
        logger.warning("app_attest_risk_failed", [("device_id", .string(device.id)), ("reason", .string(reason))])
    }
}
