/// Every setting the gateway reads, in one place, and the check that refuses a variable that
/// looks like one and is not (docs/configuration.md, "Unknown settings").
///
/// A misspelled setting is otherwise silently ignored: `GATEWAY_TOKEN=…` would leave the
/// gateway open, `METRICS_TOKN=…` would leave `/metrics` public. The check runs once, on the
/// environment the configuration is read from, and costs requests nothing.
/// `SettingNamesTests` keeps this list equal to the names ``GatewayConfiguration`` reads.
enum SettingNames {
    /// The settings with fixed names, as docs/configuration.md lists them.
    static let fixed: Set<String> = [
        // The upstream.
        "DARVAREH_API_KEY", "DARVAREH_MODEL_ID", "DARVAREH_BASE_URL", "DARVAREH_STRUCTURED",
        "SUMMARY_MODEL_ID", "REWRITE_MODEL_ID", "EXTRACTION_MODEL_ID", "CREATIVE_MODEL_ID",
        "GATEWAY_MODELS", "MAX_TOKENS",
        // Prices.
        "CURRENCY", "CURRENCY_MINOR_UNITS", "PRICES", "PRICES_FILE", "PRICES_REQUIRED", "BUDGETS", "BUDGET_TIMEZONE",
        "UPSTREAM_TIMEOUT_SECONDS", "UPSTREAM_CONNECT_TIMEOUT_SECONDS", "UPSTREAM_MAX_CONNECTIONS",
        "UPSTREAM_IDLE_TIMEOUT_SECONDS", "UPSTREAM_CA_FILE", "UPSTREAM_OWN_HTTP1",
        // Upstreams.
        "UPSTREAMS", "UPSTREAM_RETRIES", "UPSTREAM_BACKOFF_MS", "UPSTREAM_RETRY_AFTER_MAX_SECONDS",
        "UPSTREAM_TRY_TIMEOUT_SECONDS", "UPSTREAM_BREAKER_FAILURES", "UPSTREAM_COOLDOWN_SECONDS",
        // The server.
        "HOST", "PORT", "MAX_BODY_BYTES", "MAX_MESSAGES", "MAX_CHOICES", "SHUTDOWN_GRACE_SECONDS", "EVENT_LOOPS",
        "EVENT_LOOP_POLL_MICROSECONDS", "STREAM_FIRST_TOKEN_TIMEOUT_SECONDS", "STREAM_IDLE_TIMEOUT_SECONDS",
        "STREAM_TOTAL_TIMEOUT_SECONDS", "HEARTBEAT_SECONDS", "ERROR_LANGUAGE", "LOG_LEVEL", "LOG_FORMAT",
        // Callers and limits.
        "GATEWAY_TOKENS", "GATEWAY_TOKENS_FILE", "AUTH_REQUIRED", "PLANS", "RATE_LIMITS", "TRUSTED_PROXIES",
        "IPV6_CLIENT_PREFIX",
        "REDIS_URL", "REDIS_TIMEOUT_MS", "REDIS_FAILURE_MODE", "CACHE_TTL_SECONDS", "CACHE_MAX_ENTRIES",
        "CACHE_BACKEND", "METRICS", "METRICS_TOKEN", "ADMIN_TOKEN", "ADMIN_FAILURES_PER_MINUTE",
        "IDEMPOTENCY_TTL_SECONDS", "IDEMPOTENCY_RETRY_WINDOW_SECONDS",
        // Sign-in with JWTs.
        "JWT_HS256_SECRET", "JWT_JWKS_FILE", "JWT_JWKS_URL", "JWT_JWKS_REFRESH_SECONDS", "JWT_ISSUER",
        "JWT_AUDIENCE", "JWT_PLAN_CLAIM", "JWT_LEEWAY_SECONDS", "JWT_ALGORITHMS", "JWT_CACHE_ENTRIES",
        // App Attest devices.
        "APP_ATTEST_APP_IDS", "APP_ATTEST_ENVIRONMENT", "APP_ATTEST_REQUIRED", "APP_ATTEST_PLAN",
        "APP_ATTEST_SESSION_SECONDS", "APP_ATTEST_REQUESTS_PER_MINUTE", "APP_ATTEST_EXTRA_ROOT_CA_FILE",
        "APP_ATTEST_REGISTRATIONS_PER_ADDRESS_PER_DAY", "APP_ATTEST_REGISTRATIONS_PER_DAY", "APP_ATTEST_RISK_KEY_ID",
        "APP_ATTEST_RISK_PRIVATE_KEY_FILE", "APP_ATTEST_RISK_URL", "APP_ATTEST_RISK_MAXIMUM",
        // Android devices.
        "ANDROID_ATTEST_APPS", "ANDROID_ATTEST_ALLOW_UNLOCKED", "ANDROID_ATTEST_REQUIRE_STRONGBOX",
        "ANDROID_ATTEST_MIN_PATCH_LEVEL", "ANDROID_ATTEST_REVOCATION_FILE", "ANDROID_ATTEST_REVOCATION_URL",
        "ANDROID_ATTEST_REVOCATION_REFRESH_SECONDS", "ANDROID_ATTEST_EXTRA_ROOT_CA_FILE",
        // The store.
        "DATABASE_URL", "LEDGER_DURABILITY", "HISTORY_STORE_RESULTS", "HISTORY_RETENTION_DAYS",
        "USAGE_RETENTION_DAYS",
        // Jobs.
        "JOB_MAX_CHARACTERS", "JOB_MAX_ACTIVE_PER_USER", "JOB_CHUNK_TOKENS", "JOB_CHUNK_OVERLAP_TOKENS",
        "JOB_CONCURRENCY", "JOB_WORKERS", "JOB_RETENTION_HOURS", "JOB_LEASE_SECONDS",
        // Traces: the OpenTelemetry SDK's variables, and the gateway's own.
        "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_SERVICE_NAME",
        "OTEL_RESOURCE_ATTRIBUTES",
        "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT",
        "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "TRACE_CONTEXT_FROM", "TRACE_USER_ID",
        "TRACE_PROBES",
    ]

    /// Each upstream `UPSTREAMS` lists has `UPSTREAM_<NAME>_<suffix>` for these.
    static let upstreamSuffixes = [
        "BASE_URL", "API_KEY", "MODEL_ID", "SUMMARY_MODEL_ID", "REWRITE_MODEL_ID", "EXTRACTION_MODEL_ID",
        "CREATIVE_MODEL_ID", "MODELS", "CA_FILE", "STRUCTURED",
    ]

    /// A variable whose name starts with one of these (in any letter case) must be a setting.
    ///
    /// Each is a family the settings use and that no common tool puts in a process's
    /// environment. Left out on purpose, though settings use them: `LOG_` (`LOG_DIR`,
    /// `LOG_FILE` belong to many tools), `MAX_` as a whole (`MAX_JOBS` is a build's: only
    /// `MAX_TOKEN…` and `MAX_CHOICE…`, where a typo would leave what a request may spend at its
    /// default, are checked),
    /// `CACHE_` (GitLab's runner exports `CACHE_*`), `DATABASE_` (hosting platforms add
    /// `DATABASE_*` beside `DATABASE_URL`), `ERROR_` (a plain word) and `HOST`/`PORT`; their
    /// settings are still refused in another letter case. The per-task `SUMMARY_` …
    /// `CREATIVE_` and `PLAN` are this product's words.
    static let prefixes = [
        "DARVAREH_", "GATEWAY_", "UPSTREAM_", "JWT_", "REDIS_", "JOB_", "HISTORY_", "APP_ATTEST_",
        "AUTH_", "STREAM_", "METRICS_", "LEDGER_", "USAGE_", "EVENT_LOOP", "SHUTDOWN_", "HEARTBEAT_",
        "RATE_", "TRUSTED_", "IDEMPOTENCY_", "PLAN", "SUMMARY_", "REWRITE_", "EXTRACTION_", "CREATIVE_",
        "ADMIN_", "IPV6_CLIENT", "MAX_TOKEN", "MAX_CHOICE", "ANDROID_ATTEST", "OTEL_", "TRACE_",
    ]

    /// The OpenTelemetry SDK's variables for what the gateway does not export (metrics, logs),
    /// for other exporters and propagators, and for limits its spans stay within: a platform
    /// that sets them for every service (the OpenTelemetry operator) is not refused.
    static let foreignOpenTelemetry = [
        "OTEL_METRIC", "OTEL_METRICS_", "OTEL_LOGS_", "OTEL_LOG_LEVEL", "OTEL_BLRP_", "OTEL_EXPORTER_OTLP_METRICS_",
        "OTEL_EXPORTER_OTLP_LOGS_", "OTEL_EXPORTER_OTLP_CLIENT_", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_",
        "OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_INSECURE",
        "OTEL_EXPORTER_OTLP_TRACES_INSECURE", "OTEL_EXPORTER_JAEGER_", "OTEL_EXPORTER_ZIPKIN_",
        "OTEL_EXPORTER_PROMETHEUS_", "OTEL_PROPAGATORS", "OTEL_ATTRIBUTE_", "OTEL_SPAN_", "OTEL_EVENT_",
        "OTEL_LINK_", "OTEL_EXPERIMENTAL_", "OTEL_SEMCONV_", "OTEL_CONFIG_FILE", "OTEL_ENTITIES",
    ]

    /// Names other software is known to set with one of the ``prefixes``: Jenkins's job and
    /// Prow's (CI may run the gateway, its `eval`, or the tests that start it), and the admin
    /// account of another service sharing a compose file's environment.
    static let foreign: Set<String> = [
        "JOB_NAME", "JOB_BASE_NAME", "JOB_URL", "JOB_DISPLAY_URL", "JOB_TYPE", "JOB_SPEC",
        "ADMIN_USER", "ADMIN_USERNAME", "ADMIN_PASSWORD", "ADMIN_EMAIL",
    ]

    /// Every setting's name, the per-upstream ones for `upstreams` (upper-cased names).
    static func known(upstreams: [String]) -> Set<String> {
        var names = fixed
        for upstream in upstreams {
            for suffix in upstreamSuffixes { names.insert("UPSTREAM_\(upstream)_\(suffix)") }
        }
        return names
    }

    /// Refuses every variable of `environment` that claims a setting's name and is not one,
    /// naming it and the setting meant where one is close; never a value.
    static func check(_ environment: [String: String], upstreams: [String]) throws(ConfigurationError) {
        let known = known(upstreams: upstreams)
        var problems: [String] = []
        for name in environment.keys.sorted() where !known.contains(name) {
            if let problem = problem(name, known: known, upstreams: upstreams) { problems.append(problem) }
        }
        guard !problems.isEmpty else { return }
        throw ConfigurationError(problems.joined(separator: "; "))
    }

    /// What is wrong with `name`, a variable that is not a setting; nil when it is not the
    /// gateway's business.
    private static func problem(_ name: String, known: Set<String>, upstreams: [String]) -> String? {
        let upper = name.uppercased()
        if known.contains(upper) {
            return "\(name) is not a setting: the setting is \(upper) (names are upper case)"
        }
        guard let prefix = prefixes.first(where: { upper.hasPrefix($0) }),
            !foreign.contains(upper), !foreignOpenTelemetry.contains(where: { upper.hasPrefix($0) }),
            !isKubernetesServiceLink(upper)
        else { return nil }
        if let upstream = unlistedUpstream(upper, upstreams: upstreams) {
            let listed =
                upstreams.isEmpty
                ? "UPSTREAMS is not set" : "UPSTREAMS lists " + upstreams.map { $0.lowercased() }.joined(separator: ",")
            return "unknown setting \(name): it is for an upstream \(upstream.lowercased()), and \(listed)"
        }
        var message = "unknown setting \(name)"
        if let close = closest(to: upper, in: known) { message += ": did you mean \(close)?" }
        return message + " (every name starting with \(prefix) must be one of the settings in docs/configuration.md)"
    }

    /// The `<NAME>` of `UPSTREAM_<NAME>_<suffix>` when it is not one `UPSTREAMS` lists.
    private static func unlistedUpstream(_ name: String, upstreams: [String]) -> String? {
        guard name.hasPrefix("UPSTREAM_") else { return nil }
        let rest = name.dropFirst("UPSTREAM_".count)
        // The longest suffix first: `_SUMMARY_MODEL_ID` before `_MODEL_ID`.
        for suffix in upstreamSuffixes.sorted(by: { $0.count > $1.count }) where rest.hasSuffix("_" + suffix) {
            let upstream = rest.dropLast(suffix.count + 1)
            guard !upstream.isEmpty,
                upstream.utf8.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F })
            else { return nil }
            // A listed upstream's own name misspelled (`UPSTREAM_A_SUMARY_MODEL_ID`) is a typo to guess at.
            guard !upstreams.contains(where: { upstream == $0 || upstream.hasPrefix($0 + "_") }) else { return nil }
            return String(upstream)
        }
        return nil
    }

    /// Kubernetes gives a pod `<SERVICE>_SERVICE_HOST`, `<SERVICE>_PORT_8080_TCP_ADDR` and so
    /// on for every service of its namespace: a service named `redis` or `gateway` must not
    /// stop the start.
    static func isKubernetesServiceLink(_ name: String) -> Bool {
        if name.hasSuffix("_SERVICE_HOST") || name.hasSuffix("_SERVICE_PORT") || name.contains("_SERVICE_PORT_") {
            return true
        }
        if name.hasSuffix("_PORT") { return true }
        // `<SERVICE>_PORT_<number>_<TCP|UDP|SCTP>`, alone or with `_PROTO`, `_PORT` or `_ADDR`.
        let parts = name.split(separator: "_", omittingEmptySubsequences: false)
        for index in parts.indices.dropFirst() where parts[index] == "PORT" && index + 2 < parts.count {
            let number = parts[index + 1]
            let kind = parts[index + 2]
            let tail = parts[(index + 3)...]
            guard !number.isEmpty, number.allSatisfy(\.isNumber), ["TCP", "UDP", "SCTP"].contains(kind) else {
                continue
            }
            if tail.isEmpty || (tail.count == 1 && ["PROTO", "PORT", "ADDR"].contains(tail[tail.startIndex])) {
                return true
            }
        }
        return false
    }

    /// The known name nearest to `name` by edit distance among those near enough to be the
    /// one meant: at most 2 edits or a third of the longer name, or the same name with a word
    /// dropped or added at the end (`JOB_LEASE` for `JOB_LEASE_SECONDS`).
    static func closest(to name: String, in known: Set<String>) -> String? {
        var best: (name: String, distance: Int)?
        for candidate in known.sorted() {
            let distance = editDistance(Array(name.utf8), Array(candidate.utf8))
            let near =
                distance <= max(2, max(name.utf8.count, candidate.utf8.count) / 3)
                || candidate.hasPrefix(name + "_") || name.hasPrefix(candidate + "_")
            if near, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        return best?.name
    }

    /// Levenshtein distance: insertions, deletions and substitutions.
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}

/// Every name a configuration read asked for, for the test that keeps ``SettingNames`` whole.
final class SettingReads {
    var names: Set<String> = []
    init() {}
}
