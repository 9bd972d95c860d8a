import Testing

@testable import HTTP1

@Suite("RequestHead: keep-alive and 100-continue")
struct RequestHeadTests {
    struct ConnectionCase: Sendable, CustomTestStringConvertible {
        var version: HTTPVersion
        var connection: [String]
        var keepAlive: Bool
        var testDescription: String { "\(version) Connection: \(connection) → keepAlive \(keepAlive)" }
    }

    static let connectionCases: [ConnectionCase] = [
        ConnectionCase(version: .http1_1, connection: [], keepAlive: true),
        ConnectionCase(version: .http1_1, connection: ["keep-alive"], keepAlive: true),
        ConnectionCase(version: .http1_1, connection: ["close"], keepAlive: false),
        ConnectionCase(version: .http1_1, connection: ["Close"], keepAlive: false),
        ConnectionCase(version: .http1_1, connection: ["Upgrade, CLOSE"], keepAlive: false),
        ConnectionCase(version: .http1_1, connection: ["upgrade", " close "], keepAlive: false),
        ConnectionCase(version: .http1_1, connection: ["closed"], keepAlive: true),
        ConnectionCase(version: .http1_1, connection: ["x-close"], keepAlive: true),
        ConnectionCase(version: .http1_0, connection: [], keepAlive: false),
        ConnectionCase(version: .http1_0, connection: ["keep-alive"], keepAlive: true),
        ConnectionCase(version: .http1_0, connection: ["Keep-Alive"], keepAlive: true),
        ConnectionCase(version: .http1_0, connection: ["foo, keep-alive"], keepAlive: true),
        ConnectionCase(version: .http1_0, connection: ["close"], keepAlive: false),
        ConnectionCase(version: .http1_0, connection: ["keep-alive, close"], keepAlive: false),
        ConnectionCase(version: .http1_0, connection: ["keep-alive-ish"], keepAlive: false),
    ]

    private func parseHead(_ version: HTTPVersion, _ fields: [(String, String)]) throws -> RequestHead? {
        var raw = "GET / \(version)\r\nHost: h\r\n"
        for (name, value) in fields { raw += "\(name): \(value)\r\n" }
        var parser = RequestParser()
        parser.append(Array(raw: raw + "\r\n"))
        guard case .head(let head)? = try parser.next() else { return nil }
        return head
    }

    @Test("keepAlive follows the version and the Connection tokens", arguments: connectionCases)
    func keepAlive(_ testCase: ConnectionCase) throws {
        let head = try #require(try parseHead(testCase.version, testCase.connection.map { ("Connection", $0) }))
        #expect(head.keepAlive == testCase.keepAlive)
    }

    @Test(
        "expectsContinue for Expect: 100-continue in any case, on HTTP/1.1 only",
        arguments: [
            (HTTPVersion.http1_1, [String](), false),
            (.http1_1, ["100-continue"], true),
            (.http1_1, ["100-Continue"], true),
            (.http1_1, [" 100-CONTINUE "], true),
            (.http1_1, ["200-ok"], false),
            (.http1_1, ["100-continued"], false),
            (.http1_0, ["100-continue"], false),
        ])
    func expectsContinue(_ version: HTTPVersion, _ expect: [String], _ expected: Bool) throws {
        let head = try #require(try parseHead(version, expect.map { ("Expect", $0) }))
        #expect(head.expectsContinue == expected)
    }
}
