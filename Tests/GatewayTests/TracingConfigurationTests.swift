import Gateway
import Testing
import Tracing

/// The OpenTelemetry SDK's variables as the gateway reads them (docs/configuration.md, "Traces").
@Suite("Tracing configuration")
struct TracingConfigurationTests {
    static func tracing(_ environment: [String: String]) throws -> TracingSettings? {
        try GatewayConfiguration(environment: environment).tracing
    }

    static func refusal(_ environment: [String: String]) -> String? {
        do {
            _ = try GatewayConfiguration(environment: environment)
            return nil
        } catch {
            return error.message
        }
    }

    @Test("off without an endpoint, or when the SDK or the exporter is turned off")
    func off() throws {
        #expect(try Self.tracing([:]) == nil)
        #expect(try Self.tracing(["OTEL_TRACES_SAMPLER": "always_on"]) == nil)
        let endpoint = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]
        #expect(try Self.tracing(endpoint) != nil)
        #expect(try Self.tracing(endpoint.merging(["OTEL_SDK_DISABLED": "true"]) { $1 }) == nil)
        #expect(try Self.tracing(endpoint.merging(["OTEL_TRACES_EXPORTER": "none"]) { $1 }) == nil)
    }

    @Test("the base endpoint gets /v1/traces; the traces endpoint is taken as it is, and wins")
    func endpoints() throws {
        let base = "OTEL_EXPORTER_OTLP_ENDPOINT"
        #expect(try Self.tracing([base: "http://c:4318"])?.endpoint == "http://c:4318/v1/traces")
        #expect(try Self.tracing([base: "https://c/otel/"])?.endpoint == "https://c/otel/v1/traces")
        let both = try Self.tracing([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:9/x",
        ])
        #expect(both?.endpoint == "http://t:9/x")
        #expect(Self.refusal(["OTEL_EXPORTER_OTLP_ENDPOINT": "grpc://c:4317"]) != nil)
        #expect(Self.refusal(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c 4318"]) != nil)
    }

    @Test("headers: pairs percent-decoded, the traces list winning a name; a bad list refused without its value")
    func headers() throws {
        let settings = try #require(
            try Self.tracing([
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20secret-1,x-team=gw",
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "authorization=Bearer%20secret-2",
            ]))
        #expect(settings.headers.map { "\($0.name): \($0.value)" } == ["x-team: gw", "authorization: Bearer secret-2"])
        let message = try #require(
            Self.refusal([
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                "OTEL_EXPORTER_OTLP_HEADERS": "secret-value-without-name",
            ]))
        #expect(message.contains("OTEL_EXPORTER_OTLP_HEADERS") && !message.contains("secret-value"))
        #expect(
            Self.refusal(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS": "a=b%0Dc"])
                != nil)
    }

    @Test("the resource: service.name from OTEL_SERVICE_NAME over the attributes, the version and SDK added")
    func resource() throws {
        let settings = try #require(
            try Self.tracing([
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SERVICE_NAME": "gw-east",
                "OTEL_RESOURCE_ATTRIBUTES": "service.name=ignored,deployment.environment=prod%2Ceu",
            ]))
        #expect(settings.serviceName == "gw-east")
        let keys = settings.resource.map(\.key)
        #expect(keys.filter { $0 == "service.name" }.count == 1)
        #expect(settings.resource.contains(SpanAttribute("deployment.environment", .string("prod,eu"))))
        #expect(keys.contains("service.version") && keys.contains("telemetry.sdk.language"))
        let plain = try #require(try Self.tracing(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"]))
        #expect(plain.serviceName == "text-gateway")
    }

    @Test("samplers, batches and the gateway's own settings; wrong values stop the start")
    func values() throws {
        let settings = try #require(
            try Self.tracing([
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
                "OTEL_TRACES_SAMPLER_ARG": "0.25", "OTEL_BSP_SCHEDULE_DELAY": "250", "OTEL_BSP_MAX_QUEUE_SIZE": "4096",
                "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "256", "OTEL_BSP_EXPORT_TIMEOUT": "10000",
                "OTEL_EXPORTER_OTLP_TIMEOUT": "3000", "TRACE_CONTEXT_FROM": "any", "TRACE_USER_ID": "on",
                "TRACE_PROBES": "on",
            ]))
        #expect(settings.sampler == .parentBased(root: .ratio(0.25)))
        #expect(settings.scheduleDelay == .milliseconds(250) && settings.exportTimeout == .seconds(10))
        #expect(settings.maxQueueSize == 4096 && settings.maxBatchSize == 256)
        #expect(settings.requestTimeout == .seconds(3))
        #expect(settings.contextSource == .any && settings.userID && settings.probes)
        let defaults = try #require(try Self.tracing(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"]))
        #expect(defaults.sampler == .parentBased(root: .alwaysOn) && defaults.contextSource == .trusted)
        #expect(!defaults.userID && !defaults.probes)
        for (name, value) in [
            ("OTEL_TRACES_SAMPLER", "sometimes"), ("OTEL_TRACES_SAMPLER_ARG", "1.5"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
            ("OTEL_TRACES_EXPORTER", "zipkin"), ("OTEL_BSP_MAX_QUEUE_SIZE", "0"), ("TRACE_CONTEXT_FROM", "all"),
            ("OTEL_SDK_DISABLED", "maybe"),
        ] {
            var environment = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_SAMPLER": "traceidratio"]
            environment[name] = value
            #expect(Self.refusal(environment) != nil, "\(name)=\(value)")
        }
        // A batch larger than the queue could never fill.
        #expect(
            Self.refusal([
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_BSP_MAX_QUEUE_SIZE": "100",
                "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "200",
            ]) != nil)
    }

    @Test("a misspelled OTEL_ or TRACE_ setting is refused; the SDK's other signals' settings are let through")
    func unknownSettings() throws {
        let typo = try #require(Self.refusal(["OTEL_EXPORTER_OTLP_ENDPIONT": "http://c:4318"]))
        #expect(typo.contains("OTEL_EXPORTER_OTLP_ENDPOINT"))
        #expect(Self.refusal(["TRACE_USERID": "on"]) != nil)
        for name in [
            "OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER", "OTEL_PROPAGATORS", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "OTEL_EXPORTER_OTLP_COMPRESSION",
        ] {
            #expect(Self.refusal([name: "x"]) == nil, "\(name)")
        }
    }
}
