import EventLoop
import HTTP1
import HTTPServer
import Synchronization

/// Starts a server on 127.0.0.1 with an ephemeral port, runs `body`, then shuts it down.
func withServer(
    configure: (inout ServerConfiguration) -> Void = { _ in },
    routes: (inout Router) -> Void,
    _ body: (HTTPServer, Int) async throws -> Void
) async throws {
    var configuration = ServerConfiguration()
    configuration.host = "127.0.0.1"
    configuration.port = 0
    configuration.loopCount = 2
    configure(&configuration)
    var router = Router()
    routes(&router)
    let responder = router.buildResponder()
    let server = try HTTPServer(configuration: configuration) { try await responder.respond(to: $0) }
    let address = try await server.start()
    do {
        try await body(server, address.port)
    } catch {
        await server.shutdown(gracePeriod: .zero)
        throw error
    }
    await server.shutdown(gracePeriod: .seconds(1))
}

/// A thread-safe box for values a test observes from handlers.
final class Observed<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>
    init(_ value: Value) { storage = Mutex(value) }
    var value: Value { storage.withLock { $0 } }
    func update(_ body: (inout Value) -> Void) { storage.withLock { body(&$0) } }
}

func echoRoutes(_ router: inout Router) {
    router.get("/hello") { _ in .text("hello") }
    router.post("/echo") { request in
        HTTPResponse(status: .ok, headers: ["Content-Type": "application/octet-stream"], body: .bytes(request.body))
    }
    router.get("/path") { request in .text(request.path + (request.query.map { "?" + $0 } ?? "")) }
}
