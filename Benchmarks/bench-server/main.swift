import HTTP1
import HTTPServer

// A minimal server for `make bench-server`: answers `GET /` with a fixed 13-byte body, and
// `GET /work?us=N` with the same after keeping its loop busy for N microseconds (at most one
// second): a handler that needs the CPU, for measuring how connections spread over loops.
#if canImport(Glibc)
    import Glibc
#endif

var configuration = ServerConfiguration()
configuration.host = "127.0.0.1"
configuration.port = 0
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--port": configuration.port = Int(arguments.next() ?? "") ?? 0
    case "--loops": configuration.loopCount = Int(arguments.next() ?? "") ?? configuration.loopCount
    default:
        print("usage: bench-server [--port P] [--loops N]")
        exit(2)
    }
}

let body = Array("Hello, world!".utf8)
var router = Router()
router.get("/") { _ in HTTPResponse(headers: ["Content-Type": "text/plain"], body: .bytes(body)) }
router.get("/work") { request in
    let microseconds =
        request.head.query.flatMap { query in
            query.split(separator: "&").lazy.compactMap { $0.hasPrefix("us=") ? Int($0.dropFirst(3)) : nil }.first
        } ?? 0
    let end = ContinuousClock.now + .microseconds(min(max(microseconds, 0), 1_000_000))
    while ContinuousClock.now < end {}
    return HTTPResponse(headers: ["Content-Type": "text/plain"], body: .bytes(body))
}
let responder = router.buildResponder()
let server = try HTTPServer(configuration: configuration) { try await responder.respond(to: $0) }
let address = try await server.start()
let line = Array("listening on \(address)\n".utf8)
_ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
while true { try await Task.sleep(for: .seconds(3600)) }
