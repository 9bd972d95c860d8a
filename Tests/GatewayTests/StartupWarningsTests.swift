import EventLoop
import Testing

@testable import Access
@testable import Gateway
@testable import Telemetry

@Suite("Start-up warnings")
struct StartupWarningsTests {
    static let address = SocketAddress.v4(host: "127.0.0.1", port: 8080)
    /// An open-file limit that holds every connection the configuration allows.
    static let roomy = DescriptorBudget(limit: 1_048_576, loops: 2, connectionsPerCurlHandle: 256)

    /// A configuration the start has nothing to say about: a key, a model, tokens required.
    static func quiet() -> GatewayConfiguration {
        var configuration = GatewayConfiguration()
        configuration.apiKey = "k"
        configuration.defaultModel = "m"
        configuration.authRequired = true
        return configuration
    }

    static func warnings(
        _ configuration: GatewayConfiguration, descriptors: DescriptorBudget = roomy
    ) -> [StartupWarnings.Warning] {
        StartupWarnings.of(configuration, address: address, descriptors: descriptors)
    }

    /// The line `warning` logs, after its timestamp.
    static func line(_ warning: StartupWarnings.Warning) -> String {
        let sink = LogSink.memory()
        warning.log(to: Logger(level: .info, sink: sink))
        let line = sink.lines.first ?? ""
        return String(line.drop { $0 != " " }.dropFirst())
    }

    @Test("a configuration with a key, a model and tokens required, and room for its connections, has none")
    func none() {
        #expect(Self.warnings(Self.quiet()).isEmpty)
    }

    @Test("an Android test root is a warning naming its file")
    func androidTestRoot() throws {
        var configuration = Self.quiet()
        var settings = AppAttestSettings(appIDs: [])
        var android = AndroidAttestSettings(policy: AndroidAttestationPolicy(apps: [:]))
        android.extraRoot = (path: "/etc/test-root.pem", pem: "")
        settings.android = android
        configuration.appAttest = settings
        let warning = try #require(Self.warnings(configuration).only)
        #expect(
            Self.line(warning)
                == "WARNING android_attest_test_root file=/etc/test-root.pem effect=\"phones attested under this root "
                + "register as if Google had attested them: for tests only\"")
    }

    @Test("an App Attest test root is a warning naming its file")
    func appAttestTestRoot() throws {
        var configuration = Self.quiet()
        var settings = AppAttestSettings(appIDs: ["ABCDE12345.example.app"])
        settings.extraRoot = (path: "/etc/apple-test-root.pem", pem: "")
        configuration.appAttest = settings
        let warning = try #require(Self.warnings(configuration).only)
        #expect(
            Self.line(warning)
                == "WARNING app_attest_test_root file=/etc/apple-test-root.pem effect=\"devices attested under this "
                + "root register as if Apple had attested them: for tests only\"")
    }

    @Test("an open-file limit that cannot hold the upstream connections is a warning with each side's share")
    func descriptorLimit() throws {
        let tight = DescriptorBudget(limit: 20_000, loops: 2, connectionsPerCurlHandle: 256)
        let warning = try #require(Self.warnings(Self.quiet(), descriptors: tight).only)
        #expect(
            Self.line(warning)
                == "WARNING descriptor_limit open_file_limit=20000 client_connections=\(tight.perSide) "
                + "upstream_connections=\(tight.perSide) effect=\"requests beyond these wait; raise the hard "
                + "open-file limit (ulimit -n) to hold more\"")
        // A limit that holds them, exactly, says nothing.
        var configuration = Self.quiet()
        configuration.upstreamMaxConnections = tight.perSide
        #expect(Self.warnings(configuration, descriptors: tight).isEmpty)
    }

    @Test("a gateway that needs no credential is a warning with its address, loopback included")
    func openGateway() throws {
        var configuration = Self.quiet()
        configuration.authRequired = nil
        let warning = try #require(Self.warnings(configuration).only)
        #expect(
            Self.line(warning)
                == "WARNING open_gateway address=127.0.0.1:8080 effect=\"no credential is needed (no GATEWAY_TOKENS, "
                + "GATEWAY_TOKENS_FILE or JWT_* key, or AUTH_REQUIRED=off): anyone who can reach this address "
                + "spends the upstream key\"")
    }

    @Test("no API key is an error: /api/process cannot answer")
    func missingKey() throws {
        var configuration = Self.quiet()
        configuration.apiKey = nil
        let warning = try #require(Self.warnings(configuration).only)
        #expect(warning.level == .error)
        #expect(
            Self.line(warning)
                == "ERROR not_configured missing=DARVAREH_API_KEY effect=\"/api/process answers 500 not_configured\"")
    }

    @Test("a task without a model is an error naming the task, one per task")
    func missingModel() {
        var configuration = Self.quiet()
        configuration.defaultModel = nil
        configuration.taskModels = ["summarize": "s", "rewrite": "r"]
        #expect(
            Self.warnings(configuration).map(Self.line) == [
                "ERROR not_configured missing=DARVAREH_MODEL_ID task=key-points "
                    + "effect=\"/api/process answers 500 not_configured\"",
                "ERROR not_configured missing=DARVAREH_MODEL_ID task=titles "
                    + "effect=\"/api/process answers 500 not_configured\"",
            ])
    }

    @Test("all at once come in the order the start logs them")
    func order() {
        var configuration = GatewayConfiguration()
        var settings = AppAttestSettings(appIDs: [])
        var android = AndroidAttestSettings(policy: AndroidAttestationPolicy(apps: [:]))
        android.extraRoot = (path: "/a.pem", pem: "")
        settings.android = android
        settings.extraRoot = (path: "/b.pem", pem: "")
        configuration.appAttest = settings
        let tight = DescriptorBudget(limit: 20_000, loops: 2, connectionsPerCurlHandle: 256)
        #expect(
            Self.warnings(configuration, descriptors: tight).map(\.event) == [
                "android_attest_test_root", "app_attest_test_root", "descriptor_limit", "open_gateway",
                "not_configured", "not_configured", "not_configured", "not_configured", "not_configured",
            ])
    }
}

extension Array {
    /// The one element, nil when there are none or several.
    fileprivate var only: Element? { count == 1 ? first : nil }
}
