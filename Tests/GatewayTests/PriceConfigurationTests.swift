import EventLoop
import Pricing
import Testing

@testable import Gateway
@testable import Telemetry

@Suite("CURRENCY, PRICES, PRICES_FILE and PRICES_REQUIRED")
struct PriceConfigurationTests {
    static let base = ["DARVAREH_API_KEY": "k", "DARVAREH_MODEL_ID": "main", "SUMMARY_MODEL_ID": "small"]

    static func configuration(_ settings: [String: String]) throws -> GatewayConfiguration {
        try GatewayConfiguration(environment: base.merging(settings) { $1 })
    }

    static func refusal(_ settings: [String: String]) -> String {
        do {
            _ = try configuration(settings)
            return ""
        } catch {
            return "\(error)"
        }
    }

    @Test("unset: USD, no prices, nothing required")
    func defaults() throws {
        let configuration = try Self.configuration([:])
        #expect(configuration.currency == .standard)
        #expect(configuration.prices == nil)
        #expect(configuration.pricesRequired == false)
    }

    @Test("PRICES in CURRENCY, with its minor units or the ones given")
    func prices() throws {
        let configuration = try Self.configuration([
            "CURRENCY": "IRT", "PRICES": "main=250000/1000000; small=10000/40000@2026-12-01",
        ])
        #expect(configuration.currency.code == "IRT")
        #expect(configuration.currency.minorUnits == 0)
        let prices = try #require(configuration.prices)
        #expect(prices.price(of: "main", at: 0)?.output == 1_000_000_000_000)
        #expect(try Self.configuration(["CURRENCY": "XYZ", "CURRENCY_MINOR_UNITS": "4"]).currency.minorUnits == 4)
    }

    @Test("PRICES_FILE: an entry a line; a refusal names the line")
    func file() throws {
        let path = storeDirectory() + "/prices.txt"
        try writeFile(path, "# list\nmain=1/2\n\nsmall=0.1/0.05/0.4\n")
        let prices = try #require(try Self.configuration(["PRICES_FILE": path]).prices)
        #expect(prices.models == ["main", "small"])
        try writeFile(path, "main=1/2\nsmall=oops\n")
        #expect(Self.refusal(["PRICES_FILE": path]).contains("PRICES_FILE: line 2:"))
        #expect(Self.refusal(["PRICES_FILE": path + ".missing"]).contains("PRICES_FILE cannot be read"))
    }

    @Test(
        "refused: PRICES and PRICES_FILE both, a bad entry or currency, required without prices or with one unpriced",
        arguments: [
            (["PRICES": "main=1/2", "PRICES_FILE": "/dev/null"], "not both"),
            (["PRICES": "main=1"], "PRICES: "),
            (["CURRENCY": "dollars"], "CURRENCY must be three capital letters"),
            (["CURRENCY": "XYZ"], "CURRENCY_MINOR_UNITS"),
            (["CURRENCY_MINOR_UNITS": "9"], "CURRENCY_MINOR_UNITS must be"),
            (["PRICES_REQUIRED": "on"], "no price is set"),
            (["PRICES_REQUIRED": "on", "PRICES": "main=1/2"], "no price in force: small"),
            (["PRICES_REQUIRED": "on", "PRICES": "main=1/2; small=1/2@2999-01-01"], "no price in force: small"),
            (["PRICES_REQUIRED": "maybe", "PRICES": "main=1/2"], "PRICES_REQUIRED must be on or off"),
        ])
    func refusals(settings: [String: String], reason: String) {
        let refusal = Self.refusal(settings)
        #expect(refusal.contains(reason), "\(refusal)")
    }

    @Test("required, with every model priced (a /v1 alias's model too): starts")
    func required() throws {
        let configuration = try Self.configuration([
            "PRICES_REQUIRED": "on", "PRICES": "main=1/2; small=1/2; big=5/10", "GATEWAY_MODELS": "large=big",
        ])
        #expect(configuration.pricesRequired)
        #expect(configuration.upstreamModels == ["main", "small", "big"])
        #expect(
            Self.refusal(["PRICES_REQUIRED": "on", "PRICES": "main=1/2; small=1/2", "GATEWAY_MODELS": "large=big"])
                .contains("no price in force: big"))
    }

    @Test("the start warns of each model the configuration names that has no price in force")
    func warning() throws {
        let configuration = try Self.configuration(["PRICES": "main=1/2; small=1/2@2999-01-01"])
        let warnings = StartupWarnings.of(
            configuration, address: .v4(host: "127.0.0.1", port: 8080), descriptors: StartupWarningsTests.roomy)
        let warning = try #require(warnings.first { $0.event == "unpriced_models" })
        #expect(StartupWarningsTests.line(warning).hasPrefix("WARNING unpriced_models models=small effect="))
        let priced = try Self.configuration(["PRICES": "main=1/2; small=1/2"])
        #expect(
            !StartupWarnings.of(
                priced, address: .v4(host: "127.0.0.1", port: 8080), descriptors: StartupWarningsTests.roomy
            )
            .contains { $0.event == "unpriced_models" })
    }
}
