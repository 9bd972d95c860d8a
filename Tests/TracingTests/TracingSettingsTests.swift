import Testing

@testable import Tracing

@Suite("Tracing settings: key=value lists")
struct TracingSettingsTests {
    /// The pairs as "key=value" strings, for comparing (tuples are not Equatable in arrays).
    static func parsed(_ text: String) -> [String]? {
        TracingSettings.parseList(text)?.map { "\($0.key)=\($0.value)" }
    }

    @Test("pairs with spaces trimmed around keys and values, values percent-decoded")
    func parses() throws {
        let pairs = try #require(TracingSettings.parseList("a=b, c = d%2Ce"))
        #expect(pairs.map(\.key) == ["a", "c"])
        #expect(pairs.map(\.value) == ["b", "d,e"])
        #expect(
            Self.parsed("service.name=text-gateway,deployment.environment=prod") == [
                "service.name=text-gateway", "deployment.environment=prod",
            ])
        #expect(Self.parsed("Authorization=Bearer%20abc%3D%3d") == ["Authorization=Bearer abc=="], "either case")
        #expect(Self.parsed("city=%D8%AA%D9%87%D8%B1%D8%A7%D9%86") == ["city=تهران"], "UTF-8 decoded")
        #expect(Self.parsed("a=b,,c=d,") == ["a=b", "c=d"], "empty entries are passed over")
        #expect(Self.parsed("a=x=y") == ["a=x=y"], "the first = splits")
        #expect(Self.parsed("a=") == ["a="], "an empty value")
        #expect(Self.parsed("\ta\t=\tb\t") == ["a=b"])
        #expect(Self.parsed("") == [])
    }

    @Test(
        "an entry without =, with an empty key, or a value that does not decode makes the whole list none",
        arguments: [
            "novalue", "a=b,novalue", "=x", " =x", "a=b, =c", "a=%zz", "a=%", "a=%2", "a=b%2", "a=%g0",
            "a=%FF", // not UTF-8
            "a=%C3", // a cut UTF-8 sequence
        ])
    func refused(text: String) {
        #expect(TracingSettings.parseList(text) == nil)
    }

    @Test("a percent sign followed by control characters is not a hex escape")
    func controlCharactersAreNotHex() {
        #expect(TracingSettings.parseList("a=%\u{10}\u{11}") == nil)
    }

    @Test("settings compare by every field, headers in order")
    func equality() {
        var left = TracingSettings(endpoint: "http://127.0.0.1:4318/v1/traces")
        var right = left
        #expect(left == right)
        left.headers = [("a", "1"), ("b", "2")]
        right.headers = [("b", "2"), ("a", "1")]
        #expect(left != right)
        right.headers = left.headers
        #expect(left == right)
        right.maxBatchSize = 1
        #expect(left != right)
    }

    @Test("service name: the resource's, else text-gateway")
    func serviceName() {
        var settings = TracingSettings(endpoint: "http://127.0.0.1:4318/v1/traces")
        #expect(settings.serviceName == "text-gateway")
        settings.resource = [SpanAttribute("service.name", .int(3)), SpanAttribute("service.name", .string("edge"))]
        #expect(settings.serviceName == "edge")
    }
}

@Suite("The endpoint as logs name it")
struct EndpointForLogsTests {
    @Test(
        "no user, password or query reaches a log line",
        arguments: [
            ("https://user:s3cret@collector.example:4318/v1/traces", "https://collector.example:4318/v1/traces"),
            ("http://collector:4318/v1/traces?api_key=s3cret", "http://collector:4318/v1/traces"),
            ("http://token@collector/v1/traces#frag", "http://collector/v1/traces"),
            ("http://collector:4318/v1/traces", "http://collector:4318/v1/traces"),
            ("http://collector/path@with/at", "http://collector/path@with/at"),
        ])
    func stripped(endpoint: String, logged: String) {
        #expect(TracingSettings(endpoint: endpoint).endpointForLogs == logged)
    }
}
