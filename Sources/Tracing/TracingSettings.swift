/// What the gateway's tracing does: where spans go (OTLP over HTTP, protobuf), what they say
/// of the process, which traces are kept, and how the batches go out. The standard
/// OpenTelemetry SDK variables set it (docs/observability.md); off when no endpoint is set.
package struct TracingSettings: Sendable, Equatable {
    /// Whose `traceparent` a request's trace joins.
    package enum ContextSource: String, Sendable, Equatable {
        /// Any caller's.
        case any
        /// Only a request that came through `TRUSTED_PROXIES` (the proxy in front, or a
        /// service of the operator's); any other starts a trace of its own.
        case trusted
        /// None: every request starts its own trace.
        case none
    }

    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`.
    package var endpoint: String
    /// `OTEL_EXPORTER_OTLP_HEADERS` and `…_TRACES_HEADERS` (the latter wins for a name both set).
    package var headers: [(name: String, value: String)] = []
    /// `OTEL_EXPORTER_OTLP_CERTIFICATE`: the CA file a `https` endpoint's certificate is checked with.
    package var certificateFile: String?
    /// `OTEL_EXPORTER_OTLP_TIMEOUT` (`…_TRACES_TIMEOUT`): one export request's limit.
    package var requestTimeout: Duration = .seconds(10)
    /// The resource's attributes: `service.name` and the rest (`OTEL_SERVICE_NAME`,
    /// `OTEL_RESOURCE_ATTRIBUTES`).
    package var resource: [SpanAttribute] = []
    package var sampler: Sampler = .parentBased(root: .alwaysOn)
    /// `OTEL_BSP_SCHEDULE_DELAY`: the longest a span waits for its batch.
    package var scheduleDelay: Duration = .seconds(5)
    /// `OTEL_BSP_EXPORT_TIMEOUT`: the longest one batch is tried (its retries included)
    /// before its spans are dropped and counted.
    package var exportTimeout: Duration = .seconds(30)
    /// `OTEL_BSP_MAX_QUEUE_SIZE`: the spans waiting at most; more are dropped and counted.
    package var maxQueueSize = 2048
    /// `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`.
    package var maxBatchSize = 512
    /// `TRACE_CONTEXT_FROM`.
    package var contextSource: ContextSource = .trusted
    /// `TRACE_USER_ID`: the caller's user id as `enduser.id` (off: only its kind and plan).
    package var userID = false
    /// `TRACE_PROBES`: spans for `/api/health` and `/metrics` too.
    package var probes = false

    package init(endpoint: String) {
        self.endpoint = endpoint
    }

    package static func == (left: TracingSettings, right: TracingSettings) -> Bool {
        left.endpoint == right.endpoint
            && left.headers.map { "\($0.name)=\($0.value)" }
                == right.headers.map { "\($0.name)=\($0.value)" }
            && left.certificateFile == right.certificateFile
            && left.requestTimeout == right.requestTimeout && left.resource == right.resource
            && left.sampler == right.sampler && left.scheduleDelay == right.scheduleDelay
            && left.exportTimeout == right.exportTimeout && left.maxQueueSize == right.maxQueueSize
            && left.maxBatchSize == right.maxBatchSize && left.contextSource == right.contextSource
            && left.userID == right.userID && left.probes == right.probes
    }

    /// ``endpoint`` as the log names it: without a user and password before its host, nor a
    /// query (either may hold a collector's key).
    package var endpointForLogs: String {
        var text = Substring(endpoint)
        if let query = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = text[..<query] }
        guard let schemeEnd = text.firstIndex(of: ":"), text[schemeEnd...].hasPrefix("://") else { return String(text) }
        let authorityStart = text.index(schemeEnd, offsetBy: 3)
        let authorityEnd = text[authorityStart...].firstIndex(of: "/") ?? text.endIndex
        guard let at = text[authorityStart..<authorityEnd].lastIndex(of: "@") else { return String(text) }
        return String(text[..<authorityStart]) + String(text[text.index(after: at)...])
    }

    /// The resource's `service.name`.
    package var serviceName: String {
        for attribute in resource where attribute.key == "service.name" {
            if case .string(let name) = attribute.value { return name }
        }
        return "text-gateway"
    }

    /// A `key=value,key=value` list (`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`):
    /// each value percent-decoded, spaces around keys and values trimmed; nil when an entry
    /// has no `=` or an empty key, or a value does not decode to UTF-8.
    package static func parseList(_ text: String) -> [(key: String, value: String)]? {
        var pairs: [(key: String, value: String)] = []
        for entry in text.split(separator: ",", omittingEmptySubsequences: true) {
            guard let equals = entry.firstIndex(of: "=") else { return nil }
            let key = trim(entry[..<equals])
            guard !key.isEmpty, let value = percentDecoded(trim(entry[entry.index(after: equals)...])) else {
                return nil
            }
            pairs.append((String(key), value))
        }
        return pairs
    }

    private static func trim(_ text: Substring) -> Substring { text.trimmingSpacesAndTabs }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == 0x25 else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(Hex.digit), let low = iterator.next().flatMap(Hex.digit) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
