/// The metrics of sign-in tokens: verifications by result, key set loads by source and
/// result, and the keys in force.
final class JWTMetrics: Sendable {
    private let results: [String: Counter]
    private let loads: CounterFamily

    init(registry: MetricsRegistry, verifier: JWTVerifier) {
        let family = registry.counter(
            "textgateway_jwt_verifications_total",
            help: "Bearer JWTs checked, by result: valid (signature checked), cached, or why it was refused.", labels: ["result"]
        )
        var results: [String: Counter] = [:]
        for result in ["valid", "cached"] + JWTFailure.reasons { results[result] = family.labels(result) }
        self.results = results
        loads = registry.counter(
            "textgateway_jwks_loads_total", help: "Key set loads (JWT_JWKS_FILE, JWT_JWKS_URL), by source and result.", labels: ["source", "result"]
        )
        registry.gaugeFunction("textgateway_jwks_keys", help: "Signing keys in the key set in force.") {
            Double(verifier.keySet.keys.count)
        }
    }

    func record(_ result: Result<JWTVerifier.Acceptance, JWTFailure>) {
        switch result {
        case .success(let acceptance): results[acceptance.cached ? "cached" : "valid"]?.increment()
        case .failure(let failure): results[failure.reason]?.increment()
        }
    }

    func recordLoad(source: String, succeeded: Bool) {
        loads.labels(source, succeeded ? "ok" : "failed").increment()
    }
}
