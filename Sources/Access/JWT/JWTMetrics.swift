package import Telemetry

/// The metrics of sign-in tokens: verifications by result, key set loads by source and
/// result, and the keys in force.
package final class JWTMetrics: Sendable {
    private let valid: Counter
    private let cached: Counter
    private let refusals: [String: Counter]
    private let loads: CounterFamily

    package init(registry: MetricsRegistry, verifier: JWTVerifier) {
        let family = registry.counter(
            "textgateway_jwt_verifications_total",
            help: "Bearer JWTs checked, by result: valid (signature checked), cached, or why it was refused.",
            labels: ["result"]
        )
        valid = family.labels("valid")
        cached = family.labels("cached")
        var refusals: [String: Counter] = [:]
        for reason in JWTFailure.reasons { refusals[reason] = family.labels(reason) }
        self.refusals = refusals
        loads = registry.counter(
            "textgateway_jwks_loads_total", help: "Key set loads (JWT_JWKS_FILE, JWT_JWKS_URL), by source and result.",
            labels: ["source", "result"]
        )
        registry.gaugeFunction("textgateway_jwks_keys", help: "Signing keys in the key set in force.") {
            Double(verifier.keySet.keys.count)
        }
    }

    package func record(_ result: Result<JWTVerifier.Acceptance, JWTFailure>) {
        switch result {
        case .success(let acceptance): (acceptance.cached ? cached : valid).increment()
        case .failure(let failure): refusals[failure.reason]?.increment()
        }
    }

    func recordLoad(source: String, succeeded: Bool) {
        loads.labels(source, succeeded ? "ok" : "failed").increment()
    }
}
