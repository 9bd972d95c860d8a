import Postgres
import Testing

@Suite("Postgres URLs")
struct PostgresConfigurationTests {
    struct Good: Sendable, CustomTestStringConvertible {
        let url: String
        let host: String
        let port: Int
        let user: String?
        let password: String?
        let database: String?
        var sslMode: PostgresConfiguration.SSLMode = .prefer
        var testDescription: String { url }
    }

    static let good: [Good] = [
        Good(
            url: "postgres://u:p@db.internal:5433/textgateway", host: "db.internal", port: 5433, user: "u",
            password: "p", database: "textgateway"),
        Good(url: "postgresql://localhost", host: "localhost", port: 5432, user: nil, password: nil, database: nil),
        Good(
            url: "postgres://gw@127.0.0.1/app?sslmode=require", host: "127.0.0.1", port: 5432, user: "gw",
            password: nil, database: "app", sslMode: .require),
        Good(
            url: "postgres://us%40er:p%3Ass%2Fw%C3%B6rd@[::1]:6000/d%20b?sslmode=verify-full", host: "::1", port: 6000,
            user: "us@er", password: "p:ss/wörd", database: "d b", sslMode: .verifyFull),
        Good(
            url: "postgres://u:p@%2Fvar%2Frun%2Fpostgresql/db", host: "/var/run/postgresql", port: 5432, user: "u",
            password: "p", database: "db"),
        Good(url: "postgres://u:@h/", host: "h", port: 5432, user: "u", password: "", database: nil),
        Good(url: "postgres://u:p:q@h/db", host: "h", port: 5432, user: "u", password: "p:q", database: "db"),
    ]

    @Test("a good URL gives its parts", arguments: good)
    func parsesGood(_ good: Good) throws {
        let configuration = try PostgresConfiguration(url: good.url)
        #expect(configuration.host == good.host)
        #expect(configuration.port == good.port)
        #expect(configuration.user == good.user)
        #expect(configuration.password == good.password)
        #expect(configuration.database == good.database)
        #expect(configuration.sslMode == good.sslMode)
    }

    @Test("the query sets the application name and the connect timeout")
    func queryParameters() throws {
        let configuration = try PostgresConfiguration(url: "postgres://u@h/db?application_name=gw-2&connect_timeout=3")
        #expect(configuration.applicationName == "gw-2")
        #expect(configuration.connectTimeout == .seconds(3))
    }

    static let bad: [String] = [
        "mysql://u:hunter2secret@h/db",
        "postgres://",
        "postgres://u:hunter2secret@/db",
        "postgres://u:hunter2secret@h:0/db",
        "postgres://u:hunter2secret@h:65536/db",
        "postgres://u:hunter2secret@h:port/db",
        "postgres://u:hunter2secret@h:-1/db",
        "postgres://u:hunter2secret@h/db?sslmode=maybe",
        "postgres://u:hunter2secret@h/db?password=x",
        "postgres://u:hunter2secret@h/db?sslmode",
        "postgres://u:hunter2secret%zz@h/db",
        "postgres://u:hunter2secret%@h/db",
        "postgres://u:hunter2secret%00@h/db",
        "postgres://u:hunter2secret@[::1/db",
        "postgres://u:hunter2secret@[not-v6]/db",
        "postgres://u:hunter2secret@h/a/b",
        "postgres://u:hunter2secret@h1,h2/db",
        "postgres://u:hunter2secret@h/db?connect_timeout=soon",
    ]

    @Test("a bad URL is refused, and the error never shows the password", arguments: bad)
    func refusesBad(_ url: String) {
        do {
            _ = try PostgresConfiguration(url: url)
            Issue.record("accepted \(url)")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(!String(describing: error).contains("hunter2"))
            #expect(!String(reflecting: error).contains("hunter2"))
            #expect(!error.message.contains("hunter2"))
        }
    }

    @Test("a configuration's description and reflection never show the password")
    func descriptionHidesPassword() throws {
        let configuration = try PostgresConfiguration(url: "postgres://gw:hunter2secret@db:5433/app")
        #expect(String(describing: configuration) == "postgres://gw:***@db:5433/app?sslmode=prefer")
        #expect(!String(reflecting: configuration).contains("hunter2"))
        var dumped = ""
        dump(configuration, to: &dumped)
        #expect(!dumped.contains("hunter2"))
    }

    @Test("SQLSTATEs map to the conditions the gateway acts on")
    func conditions() {
        #expect(PostgresCondition(sqlState: "23505") == .uniqueViolation)
        #expect(PostgresCondition(sqlState: "57014") == .queryCanceled)
        #expect(PostgresCondition(sqlState: "40001").isTransient)
        #expect(PostgresCondition(sqlState: "53300") == .insufficientResources)
        #expect(PostgresCondition(sqlState: "08006") == .connectionException)
        #expect(PostgresCondition(sqlState: "22P02") == .other("22P02"))
        #expect(!PostgresCondition(sqlState: "23505").isTransient)
    }
}
