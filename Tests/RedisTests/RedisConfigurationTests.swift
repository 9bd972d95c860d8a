import Redis
import Testing

@Suite("Redis configuration")
struct RedisConfigurationTests {
    struct Good: Sendable, CustomStringConvertible {
        let url: String
        let host: String
        let port: Int
        let password: String?
        let username: String?
        let database: Int
        var description: String { url }
    }

    static let good: [Good] = [
        Good(url: "redis://127.0.0.1:6379", host: "127.0.0.1", port: 6379, password: nil, username: nil, database: 0),
        Good(url: "redis://localhost", host: "localhost", port: 6379, password: nil, username: nil, database: 0),
        Good(
            url: "redis://redis.internal:6380/2", host: "redis.internal", port: 6380, password: nil, username: nil,
            database: 2),
        Good(
            url: "redis://:s3cret@10.0.0.5:7000/15", host: "10.0.0.5", port: 7000, password: "s3cret", username: nil,
            database: 15),
        Good(
            url: "redis://gateway:p%40ss@h:1/", host: "h", port: 1, password: "p@ss", username: "gateway", database: 0),
        Good(url: "redis://[::1]:6390/1", host: "::1", port: 6390, password: nil, username: nil, database: 1),
    ]

    @Test("parses good URLs", arguments: good)
    func parsesGoodURLs(_ expected: Good) throws {
        let configuration = try RedisConfiguration(url: expected.url)
        #expect(configuration.host == expected.host)
        #expect(configuration.port == expected.port)
        #expect(configuration.password == expected.password)
        #expect(configuration.username == expected.username)
        #expect(configuration.database == expected.database)
        #expect(!configuration.description.contains("s3cret") && !configuration.description.contains("p@ss"))
    }

    static let bad: [String] = [
        "rediss://:hunter2@host:6380",
        "http://host:6379",
        "redis://:hunter2@host:99999",
        "redis://:hunter2@host:port",
        "redis://:hunter2@host:6379/db",
        "redis://:hunter2@host:6379/-1",
        "redis://:hunter2@:6379",
        "redis://hunter2@host:6379",
        "redis://:hunter2%zz@host",
        "redis://:@host",
        "redis://:hunter2@ho st:6379",
        "redis://:hunter2@host:6379?x=1",
        "",
    ]

    @Test("refuses bad URLs without showing the password", arguments: bad)
    func refusesBadURLs(_ url: String) {
        do {
            _ = try RedisConfiguration(url: url)
            Issue.record("accepted \(url)")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(!error.description.contains("hunter2"))
            #expect(error.description.contains("REDIS_URL"))
        }
    }

    @Test("says rediss:// is not supported yet")
    func refusesTLS() {
        #expect(throws: RedisError.self) { try RedisConfiguration(url: "rediss://host:6380") }
        do {
            _ = try RedisConfiguration(url: "rediss://host:6380")
        } catch {
            #expect(error.message.contains("TLS"))
        }
    }

    @Test("reads REDIS_URL and REDIS_TIMEOUT_MS from the environment")
    func readsEnvironment() throws {
        #expect(try RedisConfiguration(environment: [:]) == nil)
        let configuration = try #require(
            try RedisConfiguration(environment: ["REDIS_URL": "redis://h:1", "REDIS_TIMEOUT_MS": "75"]))
        #expect(configuration.timeout == .milliseconds(75))
        #expect(try RedisConfiguration(environment: ["REDIS_URL": "redis://h:1"])?.timeout == .milliseconds(50))
        #expect(throws: RedisError.self) {
            try RedisConfiguration(environment: ["REDIS_URL": "redis://h:1", "REDIS_TIMEOUT_MS": "0"])
        }
        #expect(throws: RedisError.self) {
            try RedisConfiguration(environment: ["REDIS_URL": "redis://h:1", "REDIS_TIMEOUT_MS": "fast"])
        }
    }
}
