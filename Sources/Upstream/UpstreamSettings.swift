package import TextTasks

/// One upstream provider as the configuration names it: `UPSTREAM_<NAME>_*`, or the
/// `DARVAREH_*` variables as the one upstream `darvareh` when `UPSTREAMS` is unset.
package struct UpstreamSettings: Sendable, Equatable {
    /// The name in `UPSTREAMS` (lower-cased), and in `X-Upstream` and the metrics' labels.
    package var name: String
    /// The base URL without a trailing slash, e.g. `https://api.darvareh.ir/v1`.
    package var baseURL: String
    package var apiKey: String?
    /// `_MODEL_ID`: the model of every task without an override, and of every `/v1` alias
    /// this upstream has no mapping for.
    package var defaultModel: String?
    /// Per-task overrides (`_SUMMARY_MODEL_ID`, …), by task raw value.
    package var taskModels: [String: String] = [:]
    /// `_MODELS`: `/v1` aliases mapped to this upstream's model ids (for the first upstream,
    /// `GATEWAY_MODELS` as well).
    package var aliasModels: [String: String] = [:]
    /// `UPSTREAM_CA_FILE`, or this upstream's own `_CA_FILE`: a PEM bundle trusted besides
    /// the system store.
    package var caFile: String?
    /// `_STRUCTURED`: how `format: json` is asked of this upstream.
    package var structuredMode = StructuredMode.jsonSchema

    package init(name: String, baseURL: String, apiKey: String? = nil, defaultModel: String? = nil) {
        self.name = name
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.apiKey = apiKey
        self.defaultModel = defaultModel
    }

    /// The model this upstream is asked for `task`.
    package func model(for task: TextTask) -> String? {
        taskModels[task.rawValue] ?? defaultModel
    }

    /// The model this upstream is asked for a `/v1` alias the gateway allows.
    package func model(forAlias alias: String) -> String? {
        aliasModels[alias] ?? defaultModel
    }

    /// The name of the default upstream the `DARVAREH_*` variables describe.
    package static let defaultName = "darvareh"
}

/// How a pool of upstreams retries, falls back and rests an upstream that keeps failing.
package struct UpstreamPolicy: Sendable, Equatable {
    /// `UPSTREAM_RETRIES`: further attempts on the same upstream after a retryable failure,
    /// before the next upstream.
    package var retries = 2
    /// `UPSTREAM_BACKOFF_MS`: the first backoff's ceiling; each retry doubles it, up to
    /// ``maxBackoff``, and the wait is drawn uniformly below it (full jitter).
    package var backoff: Duration = .milliseconds(100)
    package var maxBackoff: Duration = .seconds(2)
    /// `UPSTREAM_RETRY_AFTER_MAX_SECONDS`: the longest `Retry-After` waited for; a longer
    /// one moves to the next upstream at once.
    package var retryAfterLimit: Duration = .seconds(5)
    /// `UPSTREAM_TRY_TIMEOUT_SECONDS`: the most one attempt may wait for the answer's head;
    /// nil lets an attempt use what is left of `UPSTREAM_TIMEOUT_SECONDS`.
    package var tryTimeout: Duration?
    /// `UPSTREAM_BREAKER_FAILURES`: consecutive failures that open an upstream's circuit.
    package var breakerFailures = 5
    /// `UPSTREAM_COOLDOWN_SECONDS`: how long an open circuit skips its upstream before one
    /// probe is let through.
    package var cooldown: Duration = .seconds(10)

    package init() {}
}
