import EventLoop
import HTTP1
import HTTPServer
import TestSupport
import Testing

/// The server calls a response's `finished` exactly once, with how the response ended.
@Suite("HTTPServer: the finished hook on every path")
struct FinishedHookTests {
    /// Records each request's end by the path it was for.
    private static func routes(
        _ ends: Observed<[String: [ResponseEnd]]>, started: Observed<[String: Int]> = Observed([:])
    ) -> (inout Router) -> Void {
        { router in
            @Sendable func noting(_ path: String, _ response: HTTPResponse) -> HTTPResponse {
                var response = response
                response.finished = { end in ends.update { $0[path, default: []].append(end) } }
                return response
            }
            router.get("/bytes") { _ in noting("/bytes", .text("hello")) }
            router.get("/slow") { _ in
                started.update { $0["/slow", default: 0] += 1 }
                // Ended by the hang-up's cancellation long before this: on a loaded machine a
                // few seconds could pass before the loop sees the hang-up.
                try? await Task.sleep(for: .seconds(60))
                return noting("/slow", .text("late"))
            }
            router.get("/stream") { _ in
                started.update { $0["/stream", default: 0] += 1 }
                return noting(
                    "/stream",
                    HTTPResponse(
                        body: .stream { writer in
                            for _ in 0..<3 { try await writer.write("piece\n") }
                        }))
            }
            router.get("/endless") { _ in
                noting(
                    "/endless",
                    HTTPResponse(
                        body: .stream { writer in
                            while true {
                                try await writer.write(Array(repeating: UInt8(ascii: "x"), count: 1024))
                                // The stream's pace: it is mid-way when the client goes.
                                try await Task.sleep(for: .milliseconds(5))
                            }
                        }))
            }
            router.get("/failing") { _ in
                noting(
                    "/failing",
                    HTTPResponse(
                        body: .stream { writer in
                            try await writer.write("one\n")
                            throw CancellationError()
                        }))
            }
        }
    }

    @Test("completed for a whole body and a whole stream, also for HEAD of a stream")
    func completed() async throws {
        let ends = Observed<[String: [ResponseEnd]]>([:])
        try await withServer(routes: Self.routes(ends)) { _, port in
            try await onThread {
                let client = try TestClient(port: port)
                try client.send("GET /bytes HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try client.readResponse()
                try client.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try client.readResponse()
                try client.send("HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try client.readResponse(head: true)
            }
            await eventually("/bytes ended once and /stream twice, completed") {
                ends.value["/bytes"] == [.completed] && ends.value["/stream"] == [.completed, .completed]
            }
        }
    }

    @Test("bodyFailed, once, for a stream whose producer throws")
    func bodyFailed() async throws {
        let ends = Observed<[String: [ResponseEnd]]>([:])
        try await withServer(routes: Self.routes(ends)) { _, port in
            try await onThread {
                let client = try TestClient(port: port)
                try client.send("GET /failing HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try? client.readResponse()
            }
            await eventually("/failing ended with bodyFailed") { ends.value["/failing"] == [.bodyFailed] }
        }
    }

    @Test(
        "connectionClosed once: client gone before the answer or mid-stream, resets racing a stream's head; dozens"
    )
    func connectionClosed() async throws {
        let ends = Observed<[String: [ResponseEnd]]>([:])
        let started = Observed<[String: Int]>([:])
        try await withServer(routes: Self.routes(ends, started: started)) { _, port in
            for index in 0..<10 {
                let client = try await onThread {
                    let client = try TestClient(port: port)
                    try client.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
                    return client
                }
                await eventually("/slow has started \(index + 1) times") { started.value["/slow"] == index + 1 }
                client.abort()
            }
            try await onThread {
                for _ in 0..<10 {
                    let client = try TestClient(port: port)
                    try client.send("GET /endless HTTP/1.1\r\nHost: x\r\n\r\n")
                    _ = try client.readHead()
                    client.abort()
                }
                for _ in 0..<30 {
                    let client = try TestClient(port: port)
                    try client.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
                    client.abort()
                }
            }
            await eventually("10 ends of /slow and of /endless: \(ends.value)") {
                ends.value["/slow"]?.count == 10 && ends.value["/endless"]?.count == 10
            }
            #expect(ends.value["/slow"]?.allSatisfy { $0 == .connectionClosed } == true)
            #expect(ends.value["/endless"]?.allSatisfy { $0 == .connectionClosed } == true)
            // A reset can beat the request to the server; every request that reached its
            // handler ends exactly once, whichever way.
            await eventually("every /stream that started has ended") {
                (ends.value["/stream"]?.count ?? 0) == (started.value["/stream"] ?? 0)
            }
            // A second end would come after the first, and nothing marks that none came: the
            // counts are read again after a pause.
            try await Task.sleep(for: .milliseconds(100))
            #expect((ends.value["/stream"]?.count ?? 0) == (started.value["/stream"] ?? 0))
        }
    }
}
