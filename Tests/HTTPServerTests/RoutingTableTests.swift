import HTTP1
import Testing

@testable import HTTPServer

@Suite("The routing table: exact paths, and one parameter segment at the end or mid-path")
struct RoutingTableTests {
    static let table = RoutingTable<String>([
        "/api/process": [.POST: "process"],
        "/api/history/{id}": [.GET: "history item", .DELETE: "history item"],
        "/api/jobs": [.POST: "submit"],
        "/api/jobs/{id}": [.GET: "job", .DELETE: "job"],
        "/api/jobs/{id}/events": [.GET: "events"],
    ])

    static func found(_ method: HTTPMethod, _ path: String) -> String? {
        if case .found(let handler) = table.match(method, path) { return handler }
        return nil
    }

    @Test("each path goes to its route, a parameter being one non-empty segment")
    func matches() {
        #expect(Self.found(.POST, "/api/process") == "process")
        #expect(Self.found(.GET, "/api/history/abc") == "history item")
        #expect(Self.found(.POST, "/api/jobs") == "submit")
        #expect(Self.found(.GET, "/api/jobs/0123abcd") == "job")
        #expect(Self.found(.DELETE, "/api/jobs/0123abcd") == "job")
        #expect(Self.found(.GET, "/api/jobs/0123abcd/events") == "events")
        #expect(Self.found(.HEAD, "/api/jobs/0123abcd/events") == "events")
        // A job whose id is "events" is a job, not its own stream.
        #expect(Self.found(.GET, "/api/jobs/events") == "job")
        for path in [
            "/api/jobs/", "/api/jobs//events", "/api/jobs/a/b", "/api/jobs/a/events/x", "/api/history/",
            "/api/jobs/a/b/events",
        ] {
            if case .notFound = Self.table.match(.GET, path) {} else { Issue.record("\(path) matched") }
        }
    }

    @Test("a known path with another method is 405 with Allow")
    func methods() {
        guard case .methodNotAllowed(let allow) = Self.table.match(.POST, "/api/jobs/x/events") else {
            Issue.record("not 405")
            return
        }
        #expect(allow == "GET, HEAD")
    }

    @Test("the handler reads the parameter before what follows it")
    func parameter() {
        #expect(RoutingTable<String>.parameter(in: "/api/jobs/0123abcd/events", before: "/events") == "0123abcd")
        #expect(RoutingTable<String>.parameter(in: "/api/jobs/0123abcd") == "0123abcd")
        #expect(RoutingTable<String>.parameterPattern(of: "/api/jobs/{id}/events")! == ("/api/jobs/", "/events"))
        #expect(RoutingTable<String>.parameterPattern(of: "/api/history/{id}")! == ("/api/history/", ""))
        #expect(RoutingTable<String>.parameterPattern(of: "/api/jobs") == nil)
    }
}
