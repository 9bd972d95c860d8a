import TextTasks
import Upstream

extension GatewayConfiguration {
    /// Reads `UPSTREAMS` and each `UPSTREAM_<NAME>_*`, or the `DARVAREH_*` variables as the
    /// one upstream `darvareh`; and the pool's policy.
    static func upstreams(
        value: (String) -> String?, integer: (String, ClosedRange<Int>) throws(ConfigurationError) -> Int?,
        seconds: (String) throws(ConfigurationError) -> Duration?, aliases: [(alias: String, model: String)]
    ) throws(ConfigurationError) -> (upstreams: [UpstreamSettings], policy: UpstreamPolicy) {
        let sharedCA = try caFile(value("UPSTREAM_CA_FILE"), variable: "UPSTREAM_CA_FILE")
        var upstreams: [UpstreamSettings] = []
        if let list = value("UPSTREAMS") {
            for name in try upstreamNames(list) {
                let prefix = "UPSTREAM_\(name.uppercased())_"
                guard let base = value(prefix + "BASE_URL") else {
                    throw ConfigurationError("\(prefix)BASE_URL is not set")
                }
                var upstream = UpstreamSettings(
                    name: name, baseURL: try baseURL(base, variable: prefix + "BASE_URL"),
                    apiKey: value(prefix + "API_KEY"), defaultModel: value(prefix + "MODEL_ID")
                )
                try readModelsAndMode(into: &upstream, prefix: prefix, value: value)
                if let list = value(prefix + "MODELS") {
                    upstream.aliasModels = try aliasMap(list, variable: prefix + "MODELS")
                }
                upstream.caFile = try caFile(value(prefix + "CA_FILE"), variable: prefix + "CA_FILE") ?? sharedCA
                upstreams.append(upstream)
            }
            guard !upstreams.isEmpty else { throw ConfigurationError("UPSTREAMS must name at least one upstream") }
        } else {
            var upstream = UpstreamSettings(
                name: UpstreamSettings.defaultName,
                baseURL: try value("DARVAREH_BASE_URL").map { base throws(ConfigurationError) in
                    try baseURL(base, variable: "DARVAREH_BASE_URL")
                }
                    ?? "https://api.darvareh.ir/v1",
                apiKey: value("DARVAREH_API_KEY"), defaultModel: value("DARVAREH_MODEL_ID")
            )
            // The per-task names have no prefix here (`SUMMARY_MODEL_ID`); the mode's is `DARVAREH_`.
            try readModelsAndMode(into: &upstream, prefix: "", modePrefix: "DARVAREH_", value: value)
            upstream.caFile = sharedCA
            upstreams.append(upstream)
        }
        // `GATEWAY_MODELS` names the first upstream's model ids, as it always has.
        for (alias, model) in aliases where upstreams[0].aliasModels[alias] == nil {
            upstreams[0].aliasModels[alias] = model
        }

        var policy = UpstreamPolicy()
        policy.retries = try integer("UPSTREAM_RETRIES", 0...10) ?? policy.retries
        if let milliseconds = try integer("UPSTREAM_BACKOFF_MS", 1...60_000) {
            policy.backoff = .milliseconds(milliseconds)
        }
        policy.maxBackoff = max(policy.backoff, policy.maxBackoff)
        if let limit = try integer("UPSTREAM_RETRY_AFTER_MAX_SECONDS", 0...3600) {
            policy.retryAfterLimit = .seconds(limit)
        }
        policy.tryTimeout = try seconds("UPSTREAM_TRY_TIMEOUT_SECONDS")
        policy.breakerFailures = try integer("UPSTREAM_BREAKER_FAILURES", 1...1000) ?? policy.breakerFailures
        policy.cooldown = try seconds("UPSTREAM_COOLDOWN_SECONDS") ?? policy.cooldown
        return (upstreams, policy)
    }

    /// `UPSTREAMS`: its names, lower-cased, in order.
    static func upstreamNames(_ list: String) throws(ConfigurationError) -> [String] {
        var names: [String] = []
        for item in list.split(separator: ",", omittingEmptySubsequences: false) {
            let name = TextTrim.trimmed(String(item)).lowercased()
            guard !name.isEmpty, name.utf8.count <= 32,
                name.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F })
            else {
                throw ConfigurationError(
                    "UPSTREAMS must list names of letters, digits and _ (at most 32 each), separated by commas")
            }
            guard !names.contains(name) else { throw ConfigurationError("UPSTREAMS names \(name) twice") }
            names.append(name)
        }
        return names
    }

    /// An upstream's per-task models (`<prefix>SUMMARY_MODEL_ID`, …) and its structured mode
    /// (`<modePrefix>STRUCTURED`).
    private static func readModelsAndMode(
        into upstream: inout UpstreamSettings, prefix: String, modePrefix: String? = nil, value: (String) -> String?
    ) throws(ConfigurationError) {
        for task in TextTask.allCases {
            if let model = value(prefix + task.modelVariable) { upstream.taskModels[task.rawValue] = model }
        }
        let variable = (modePrefix ?? prefix) + "STRUCTURED"
        guard let mode = value(variable) else { return }
        guard let parsed = StructuredMode(rawValue: mode.lowercased()) else {
            throw ConfigurationError("\(variable) must be json_schema, json_object or prompt")
        }
        upstream.structuredMode = parsed
    }

    private static func baseURL(_ base: String, variable: String) throws(ConfigurationError) -> String {
        let lower = base.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
            throw ConfigurationError("\(variable) must start with http:// or https://")
        }
        return base
    }

    /// A CA bundle must be readable at start: a typo would otherwise surface as every
    /// request failing its TLS handshake.
    private static func caFile(_ path: String?, variable: String) throws(ConfigurationError) -> String? {
        guard let path else { return nil }
        guard let text = DotEnv.readText(path: path), text.contains("-----BEGIN CERTIFICATE-----") else {
            throw ConfigurationError("\(variable) must name a readable PEM file of certificates")
        }
        return path
    }

    /// `alias=model,alias=model`.
    static func aliasMap(_ list: String, variable: String) throws(ConfigurationError) -> [String: String] {
        var map: [String: String] = [:]
        for (alias, model) in try aliasPairs(list, variable: variable) { map[alias] = model }
        return map
    }

    static func aliasPairs(_ list: String, variable: String) throws(ConfigurationError) -> [(
        alias: String, model: String
    )] {
        var pairs: [(alias: String, model: String)] = []
        for item in list.split(separator: ",") {
            let pair = item.split(separator: "=", maxSplits: 1).map { TextTrim.trimmed(String($0)) }
            guard pair.count == 2, !pair[0].isEmpty, !pair[1].isEmpty else {
                throw ConfigurationError("\(variable) must be a list of alias=upstream-model-id, separated by commas")
            }
            pairs.removeAll { $0.alias == pair[0] }
            pairs.append((pair[0], pair[1]))
        }
        return pairs
    }
}
