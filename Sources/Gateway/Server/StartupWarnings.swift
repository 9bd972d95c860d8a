import EventLoop
import Pricing
import Telemetry
import TextTasks

/// The start's warnings, after its `started` line, in this order: a pure function of the
/// configuration and of two things the start finds (the address it listens on, with the real
/// port; the open-file budget), so that each can be checked without a server.
enum StartupWarnings {
    /// A line the start logs about a risky or odd configuration: its level, event and fields.
    struct Warning: Sendable, Equatable, CustomStringConvertible {
        let level: Logger.Level
        let event: String
        let fields: [(String, Logger.Value)]

        static func == (first: Warning, second: Warning) -> Bool {
            first.level == second.level && first.event == second.event && first.fields.count == second.fields.count
                && zip(first.fields, second.fields).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        }

        var description: String { "\(level.name) \(event) \(fields)" }

        /// Logs it as the start does.
        func log(to logger: Logger) {
            logger.log(level, event, fields.map { ($0.0, $0.1) })
        }
    }

    static func of(
        _ configuration: GatewayConfiguration, address: SocketAddress, descriptors: DescriptorBudget,
        now: Instant = .now
    ) -> [Warning] {
        var warnings: [Warning] = []
        if let root = configuration.appAttest?.android?.extraRoot {
            warnings.append(
                Warning(
                    level: .warning, event: "android_attest_test_root",
                    fields: [
                        ("file", .string(root.path)),
                        (
                            "effect",
                            .string(
                                "phones attested under this root register as if Google had attested them: "
                                    + "for tests only")
                        ),
                    ]))
        }
        if let root = configuration.appAttest?.extraRoot {
            warnings.append(
                Warning(
                    level: .warning, event: "app_attest_test_root",
                    fields: [
                        ("file", .string(root.path)),
                        (
                            "effect",
                            .string(
                                "devices attested under this root register as if Apple had attested them: "
                                    + "for tests only")
                        ),
                    ]))
        }
        if descriptors.cap(configuration.upstreamMaxConnections) < configuration.upstreamMaxConnections {
            warnings.append(
                Warning(
                    level: .warning, event: "descriptor_limit",
                    fields: [
                        ("open_file_limit", .int(descriptors.limit)),
                        ("client_connections", .int(descriptors.perSide)),
                        ("upstream_connections", .int(descriptors.perSide)),
                        (
                            "effect",
                            .string(
                                "requests beyond these wait; raise the hard open-file limit (ulimit -n) to hold more")
                        ),
                    ]))
        }
        // Loopback too: a local proxy, a container's published port or an SSH tunnel makes a
        // loopback address reachable from elsewhere.
        if !configuration.requiresTokens {
            warnings.append(
                Warning(
                    level: .warning, event: "open_gateway",
                    fields: [
                        ("address", .string(address.description)),
                        (
                            "effect",
                            .string(
                                "no credential is needed (no GATEWAY_TOKENS, GATEWAY_TOKENS_FILE or JWT_* key, or "
                                    + "AUTH_REQUIRED=off): anyone who can reach this address spends the upstream key"
                            )
                        ),
                    ]))
        }
        if let prices = configuration.prices {
            let unpriced = configuration.unpricedModels(prices, at: now)
            if !unpriced.isEmpty {
                warnings.append(
                    Warning(
                        level: .warning, event: "unpriced_models",
                        fields: [
                            ("models", .string(unpriced.joined(separator: ","))),
                            (
                                "effect",
                                .string(
                                    "their calls are served with no cost (textgateway_unpriced_requests_total counts "
                                        + "them); PRICES_REQUIRED=on refuses to start instead")
                            ),
                        ]))
            }
        }
        // Errors, not warnings: the gateway serves, but /api/process cannot answer.
        if configuration.apiKey == nil {
            warnings.append(
                Warning(
                    level: .error, event: "not_configured",
                    fields: [
                        ("missing", .string("DARVAREH_API_KEY")),
                        ("effect", .string("/api/process answers 500 not_configured")),
                    ]))
        }
        for task in TextTask.allCases where configuration.model(for: task) == nil {
            warnings.append(
                Warning(
                    level: .error, event: "not_configured",
                    fields: [
                        ("missing", .string("DARVAREH_MODEL_ID")), ("task", .string(task.rawValue)),
                        ("effect", .string("/api/process answers 500 not_configured")),
                    ]))
        }
        return warnings
    }
}
