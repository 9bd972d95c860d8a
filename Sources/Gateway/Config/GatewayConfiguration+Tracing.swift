import Tracing

extension GatewayConfiguration {
    /// The OpenTelemetry SDK's variables for traces (docs/observability.md), and the gateway's
    /// `TRACE_CONTEXT_FROM`, `TRACE_USER_ID` and `TRACE_PROBES`. Tracing is off when no
    /// endpoint is set, `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`.
    mutating func readTracing(
        value: (String) -> String?, integer: (String, ClosedRange<Int>) throws(ConfigurationError) -> Int?,
        flag: (String) throws(ConfigurationError) -> Bool?
    ) throws(ConfigurationError) {
        // Read whatever tracing's state, so that a wrong value is refused even while it is off.
        let disabled = try flag("OTEL_SDK_DISABLED") ?? false
        let exporter = value("OTEL_TRACES_EXPORTER")?.lowercased() ?? "otlp"
        guard exporter == "otlp" || exporter == "none" else {
            throw ConfigurationError("OTEL_TRACES_EXPORTER must be otlp or none (the gateway exports OTLP over HTTP)")
        }
        for name in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let text = value(name), text != "http/protobuf" {
                throw ConfigurationError("\(name) must be http/protobuf (the only protocol the gateway sends)")
            }
        }
        let endpoint: String?
        if let traces = value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            endpoint = traces
        } else if let base = value("OTEL_EXPORTER_OTLP_ENDPOINT") {
            endpoint = base.hasSuffix("/") ? base + "v1/traces" : base + "/v1/traces"
        } else {
            endpoint = nil
        }
        if let endpoint {
            let lower = endpoint.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), endpoint.utf8.count <= 2048,
                !endpoint.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F })
            else {
                throw ConfigurationError("the OTLP traces endpoint must be an http:// or https:// URL")
            }
        }
        var settings = TracingSettings(endpoint: endpoint ?? "")
        var headers: [(name: String, value: String)] = []
        for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
            guard let text = value(name) else { continue }
            guard let pairs = TracingSettings.parseList(text),
                pairs.allSatisfy({ Self.isHeaderName($0.key) && Self.isHeaderValue($0.value) })
            else {
                // Never the value: it usually holds a collector's key.
                throw ConfigurationError(
                    "\(name) must be name=value pairs separated by commas (values percent-encoded)")
            }
            for pair in pairs {
                headers.removeAll { $0.name.lowercased() == pair.key.lowercased() }
                headers.append((pair.key, pair.value))
            }
        }
        settings.headers = headers
        settings.certificateFile =
            value("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE") ?? value("OTEL_EXPORTER_OTLP_CERTIFICATE")
        let generalTimeout = try integer("OTEL_EXPORTER_OTLP_TIMEOUT", 1...600_000)
        if let milliseconds = try integer("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", 1...600_000) ?? generalTimeout {
            settings.requestTimeout = .milliseconds(milliseconds)
        }
        var resource: [SpanAttribute] = []
        if let text = value("OTEL_RESOURCE_ATTRIBUTES") {
            guard let pairs = TracingSettings.parseList(text) else {
                throw ConfigurationError(
                    "OTEL_RESOURCE_ATTRIBUTES must be key=value pairs separated by commas (values percent-encoded)")
            }
            for pair in pairs {
                resource.removeAll { $0.key == pair.key }
                resource.append(SpanAttribute(pair.key, .string(pair.value)))
            }
        }
        if let name = value("OTEL_SERVICE_NAME") {
            resource.removeAll { $0.key == "service.name" }
            resource.append(SpanAttribute("service.name", .string(name)))
        }
        if !resource.contains(where: { $0.key == "service.name" }) {
            resource.append(SpanAttribute("service.name", .string("text-gateway")))
        }
        resource.append(SpanAttribute("service.version", .string(TextGatewayVersion.current)))
        resource.append(SpanAttribute("telemetry.sdk.name", .string("text-gateway")))
        resource.append(SpanAttribute("telemetry.sdk.language", .string("swift")))
        resource.append(SpanAttribute("telemetry.sdk.version", .string(TextGatewayVersion.current)))
        settings.resource = resource
        let samplerName = value("OTEL_TRACES_SAMPLER")?.lowercased() ?? "parentbased_always_on"
        guard let sampler = Sampler(name: samplerName, argument: value("OTEL_TRACES_SAMPLER_ARG")) else {
            throw ConfigurationError(
                "OTEL_TRACES_SAMPLER must be always_on, always_off, traceidratio, parentbased_always_on, "
                    + "parentbased_always_off or parentbased_traceidratio, and OTEL_TRACES_SAMPLER_ARG a number "
                    + "from 0 to 1")
        }
        settings.sampler = sampler
        if let delay = try integer("OTEL_BSP_SCHEDULE_DELAY", 1...600_000) {
            settings.scheduleDelay = .milliseconds(delay)
        }
        if let timeout = try integer("OTEL_BSP_EXPORT_TIMEOUT", 1...600_000) {
            settings.exportTimeout = .milliseconds(timeout)
        }
        settings.maxQueueSize = try integer("OTEL_BSP_MAX_QUEUE_SIZE", 1...1_000_000) ?? settings.maxQueueSize
        settings.maxBatchSize = try integer("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1...100_000) ?? settings.maxBatchSize
        guard settings.maxBatchSize <= settings.maxQueueSize else {
            throw ConfigurationError("OTEL_BSP_MAX_EXPORT_BATCH_SIZE must not be more than OTEL_BSP_MAX_QUEUE_SIZE")
        }
        if let source = value("TRACE_CONTEXT_FROM") {
            guard let parsed = TracingSettings.ContextSource(rawValue: source.lowercased()) else {
                throw ConfigurationError("TRACE_CONTEXT_FROM must be any, trusted or none")
            }
            settings.contextSource = parsed
        }
        settings.userID = try flag("TRACE_USER_ID") ?? false
        settings.probes = try flag("TRACE_PROBES") ?? false
        tracing = endpoint == nil || disabled || exporter == "none" ? nil : settings
    }

    /// An HTTP field name: a token (RFC 9110 §5.1).
    private static func isHeaderName(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
                    || "!#$%&'*+-.^_`|~".utf8.contains($0)
            }
    }

    /// A field value without control characters.
    private static func isHeaderValue(_ value: String) -> Bool {
        value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }
}
