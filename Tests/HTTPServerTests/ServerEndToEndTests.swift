import EventLoop
import HTTP1
import HTTPServer
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("HTTP server over loopback", .serialized)
struct ServerEndToEndTests {
    @Test("keeps one connection alive for 100 sequential requests")
    func keepAliveSequential() async throws {
        try await withServer(routes: echoRoutes) { server, port in
            try await onThread {
                let client = try TestClient(port: port)
                for index in 0..<100 {
                    try client.send("GET /path?n=\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                    let response = try client.readResponse()
                    #expect(response.status == 200)
                    #expect(response.text == "/path?n=\(index)")
                    #expect(response.header("Date") != nil)
                    #expect(response.header("Connection") == nil)
                }
            }
            #expect(server.acceptedConnectionCount == 1)
        }
    }

    @Test("at its connection cap it stops accepting, and serves the waiting connection once one closes")
    func connectionCap() async throws {
        try await withServer(configure: { $0.maxConnections = 2 }, routes: echoRoutes) { server, port in
            try await onThread {
                let first = try TestClient(port: port)
                let second = try TestClient(port: port)
                for client in [first, second] {
                    try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                    #expect(try client.readResponse().status == 200)
                }
                // Connects (the kernel's backlog takes it) but is not accepted while two are open.
                let third = try TestClient(port: port)
                try third.send("GET /path?waiting HTTP/1.1\r\nHost: x\r\n\r\n")
                first.abort()
                let response = try third.readResponse()
                #expect(response.status == 200 && response.text == "/path?waiting")
                second.abort()
            }
            #expect(server.acceptedConnectionCount == 3)
        }
    }

    @Test("answers three pipelined requests in one write, in order")
    func pipelined() async throws {
        try await withServer(routes: { router in
            echoRoutes(&router)
            router.get("/slow") { _ in
                // The first answer is the last one ready: the order must not follow readiness.
                try await Task.sleep(for: .milliseconds(100))
                return .text("slow")
            }
        }) { _, port in
            try await onThread {
                let client = try TestClient(port: port)
                try client.send(
                    "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"
                        + "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabcde"
                        + "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
                )
                #expect(try client.readResponse().text == "slow")
                #expect(try client.readResponse().text == "abcde")
                #expect(try client.readResponse().text == "hello")
            }
        }
    }

    @Test("answers HEAD with the GET headers and no body")
    func head() async throws {
        try await withServer(routes: echoRoutes) { _, port in
            try await onThread {
                let client = try TestClient(port: port)
                try client.send("HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                let head = try client.readResponse(head: true)
                #expect(head.status == 200)
                #expect(head.header("Content-Length") == "5")
                let get = try client.readResponse()
                #expect(get.text == "hello")
            }
        }
    }

    @Test("closes an HTTP/1.0 connection without keep-alive, keeps one with it")
    func http10() async throws {
        try await withServer(routes: echoRoutes) { _, port in
            try await onThread {
                let client = try TestClient(port: port)
                try client.send("GET /hello HTTP/1.0\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.text == "hello")
                #expect(response.header("Connection") == "close")
                #expect(client.readsEndOfStream())

                let kept = try TestClient(port: port)
                try kept.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                #expect(try kept.readResponse().header("Connection") == "keep-alive")
                try kept.send("GET /hello HTTP/1.0\r\n\r\n")
                #expect(try kept.readResponse().text == "hello")
            }
        }
    }

    @Test("honours Connection: close on HTTP/1.1")
    func connectionClose() async throws {
        try await withServer(routes: echoRoutes) { _, port in
            try await onThread {
                let client = try TestClient(port: port)
                try client.send("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                #expect(try client.readResponse().header("Connection") == "close")
                #expect(client.readsEndOfStream())
            }
        }
    }

    @Test("sends 100 Continue only for a body it will read")
    func expectContinue() async throws {
        try await withServer(configure: { $0.limits.maxBodyBytes = 1000 }, routes: echoRoutes) { _, port in
            try await onThread {
                let client = try TestClient(port: port)
                try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
                #expect(try client.readHead().status == 100)
                try client.send("ping")
                #expect(try client.readResponse().text == "ping")

                let big = try TestClient(port: port)
                try big.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n")
                let refused = try big.readResponse()
                #expect(refused.status == 413)
                #expect(refused.header("Connection") == "close")
            }
        }
    }

    @Test("reads a chunked request body")
    func chunkedBody() async throws {
        try await withServer(routes: echoRoutes) { _, port in
            try await onThread {
                let client = try TestClient(port: port)
                try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
                try client.send("5;ext=1\r\nhello\r\n")
                try client.send("6\r\n world\r\n0\r\nTrailer: x\r\n\r\n")
                #expect(try client.readResponse().text == "hello world")
            }
        }
    }

    @Test("refuses a 10 MB body with 413 and stays responsive")
    func hugeBody() async throws {
        try await withServer(routes: echoRoutes) { _, port in
            try await onThread {
                let client = try TestClient(port: port)
                try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10485760\r\n\r\n")
                try? client.send([UInt8](repeating: 0x61, count: 256 * 1024))
                let response = try client.readResponse()
                #expect(response.status == 413)
                #expect(response.header("Connection") == "close")

                let other = try TestClient(port: port)
                try other.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try other.readResponse().status == 200)
            }
        }
    }

    @Test("answers parse errors with their status and closes")
    func parseErrors() async throws {
        let cases: [(String, Int)] = [
            ("GET /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("GET /hello HTTP/1.1\r\n\r\n", 400),
            ("GET /hello HTTP/2.0\r\nHost: x\r\n\r\n", 505),
            ("GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: x\r\n\r\n", 414),
            ("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        ]
        try await withServer(routes: echoRoutes) { _, port in
            try await onThread {
                for (request, status) in cases {
                    let client = try TestClient(port: port)
                    try client.send(request)
                    let response = try client.readResponse()
                    #expect(response.status == status, "\(request.prefix(40))")
                    #expect(response.header("Connection") == "close")
                    #expect(client.readsEndOfStream())
                }
            }
        }
    }

    @Test("answers 404 for an unknown path and 405 with Allow for a wrong method")
    func routing() async throws {
        try await withServer(routes: echoRoutes) { _, port in
            try await onThread {
                let client = try TestClient(port: port)
                try client.send("GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try client.readResponse().status == 404)
                try client.send("DELETE /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.status == 405)
                #expect(response.header("Allow") == "GET, HEAD")
            }
        }
    }

    @Test("cuts off a slowloris client while serving others")
    func slowloris() async throws {
        try await withServer(configure: { $0.headerReadTimeout = .milliseconds(300) }, routes: echoRoutes) {
            server, port in
            try await onThread {
                let slow = try TestClient(port: port)
                try slow.send("GET /hello HTTP/1.1\r\n")
                // The slow client's pace: a header line every 100 ms, kept up until the server
                // cuts it off. A limit that each line restarted would never do so; 600 lines (a
                // minute) are far past the 300 ms limit however loaded the machine is.
                var lines = 0
                while lines < 600, !slow.hasInput, (try? slow.send("X-A: b\r\n")) != nil {
                    if lines < 5 {
                        let other = try TestClient(port: port)
                        try other.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                        #expect(try other.readResponse().status == 200)
                    }
                    usleep(100_000)
                    lines += 1
                }
                #expect(lines < 600, "a header line every 100 ms kept the connection open")
                let response = try slow.readResponse()
                #expect(response.status == 408)
                #expect(slow.readsEndOfStream())
            }
            await eventually("the server has no connection open") { server.openConnectionCount == 0 }
        }
    }

    @Test("holds 1,000 idle connections while a fresh request succeeds")
    func manyIdleConnections() async throws {
        Socket.raiseOpenFileLimit()
        try await HeavyLoad.exclusive {
            try await withServer(routes: echoRoutes) { server, port in
                try await onThread {
                    var idle: [TestClient] = []
                    for _ in 0..<1000 { idle.append(try TestClient(port: port)) }
                    let fresh = try TestClient(port: port)
                    try fresh.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                    #expect(try fresh.readResponse().text == "hello")
                    try idle[500].send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                    #expect(try idle[500].readResponse().text == "hello")
                    withExtendedLifetime(idle) {}
                }
                #expect(server.acceptedConnectionCount >= 1001)
            }
        }
    }

    @Test("forgets a client that vanishes mid-body")
    func vanishingClient() async throws {
        let handled = Observed(0)
        try await withServer(routes: { router in
            router.post("/echo") { request in
                handled.update { $0 += 1 }
                return HTTPResponse(body: .bytes(request.body))
            }
        }) { server, port in
            try await onThread {
                let client = try TestClient(port: port)
                try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789")
                client.abort()
            }
            await eventually("the server has no connection open") { server.openConnectionCount == 0 }
            #expect(handled.value == 0)
        }
    }

    @Test("cancels the handler when the client disconnects while it runs")
    func cancelsHandlerOnDisconnect() async throws {
        let started = Observed(false)
        let cancelled = Observed(false)
        try await withServer(routes: { router in
            router.get("/wait") { _ in
                started.update { $0 = true }
                do {
                    // A handler that would run 10 s: only the cancellation ends it sooner.
                    try await Task.sleep(for: .seconds(10))
                } catch {
                    cancelled.update { $0 = true }
                    throw error
                }
                return .text("late")
            }
        }) { _, port in
            let client = try await onThread {
                let client = try TestClient(port: port)
                try client.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
                return client
            }
            await eventually("the handler has started") { started.value }
            client.abort()
            await eventually("the handler is cancelled") { cancelled.value }
        }
    }

    @Test("streams a chunked response and fails the writer once the client is gone")
    func streaming() async throws {
        let writerFailed = Observed(false)
        try await withServer(routes: { router in
            router.get("/stream") { _ in
                HTTPResponse(
                    headers: ["Content-Type": "text/plain"],
                    body: .stream { writer in
                        for piece in ["one ", "two ", "three"] { try await writer.write(piece) }
                    })
            }
            router.get("/endless") { _ in
                HTTPResponse(
                    body: .stream { writer in
                        do {
                            while true {
                                try await writer.write([UInt8](repeating: 0x62, count: 16 * 1024))
                            }
                        } catch {
                            writerFailed.update { $0 = true }
                            throw error
                        }
                    })
            }
        }) { server, port in
            try await onThread {
                let client = try TestClient(port: port)
                try client.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.header("Transfer-Encoding") == "chunked")
                #expect(response.text == "one two three")

                let endless = try TestClient(port: port)
                try endless.send("GET /endless HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try endless.readHead()
                // Time for the writer to fill the socket's buffers and wait on backpressure, so
                // that the hang-up finds it waiting; nothing marks that moment.
                usleep(200_000)
                endless.abort()
            }
            await eventually("the write to the client that hung up fails") { writerFailed.value }
            await eventually("the server has no connection open") { server.openConnectionCount == 0 }
        }
    }

    @Test("graceful shutdown finishes the request in flight and refuses new connections")
    func gracefulShutdown() async throws {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.loopCount = 2
        let started = Observed(false)
        let release = Observed(false)
        var router = Router()
        router.get("/slow") { _ in
            started.update { $0 = true }
            // In flight until the shutdown has been seen refusing connections.
            await eventually("the test releases the request", onTimeout: .returnsFalse) { release.value }
            return .text("finished")
        }
        let responder = router.buildResponder()
        let server = try HTTPServer(configuration: configuration) { try await responder.respond(to: $0) }
        let port = try await server.start().port

        async let inFlight: TestClient.Response = onThread {
            let client = try TestClient(port: port)
            try client.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            return try client.readResponse()
        }
        await eventually("the handler has started") { started.value }
        async let stopped: Void = server.shutdown(gracePeriod: .seconds(5))
        await eventually("the shutting-down server refuses new connections") {
            (try? TestClient(port: port)) == nil
        }
        release.update { $0 = true }
        let response = try await inFlight
        #expect(response.status == 200)
        #expect(response.text == "finished")
        #expect(response.header("Connection") == "close")
        await stopped
        #expect(server.openConnectionCount == 0)
    }

    @Test("shutdown serves a request left in the listen backlog and closes a silent connection there, neither reset")
    func shutdownDrainsBacklog() async throws {
        // At the cap the listener stops accepting: what connects next stays in the kernel's backlog.
        try await withServer(configure: { $0.maxConnections = 1 }, routes: echoRoutes) { server, port in
            // `first` stays open until the shutdown, so the server stays at its cap.
            let (first, waiting, silent) = try await onThread {
                let first = try TestClient(port: port)
                try first.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try first.readResponse().status == 200)
                let waiting = try TestClient(port: port)
                try waiting.send("GET /path?backlog HTTP/1.1\r\nHost: x\r\n\r\n")
                return (first, waiting, try TestClient(port: port))
            }
            #expect(server.acceptedConnectionCount == 1)
            await server.shutdown(gracePeriod: .seconds(5))
            try await onThread {
                let response = try waiting.readResponse()
                #expect(response.status == 200 && response.text == "/path?backlog")
                #expect(response.header("Connection") == "close")
                #expect(waiting.readsEndOfStream())
                // Closed with a FIN: end of stream, not a reset.
                #expect(silent.readsEndOfStream())
                #expect(first.readsEndOfStream())
            }
            #expect(server.acceptedConnectionCount == 3 && server.openConnectionCount == 0)
        }
    }

    @Test("holds back a stream producer while the client does not read, then closes a stalled write")
    func backpressureAndWriteStall() async throws {
        let produced = Observed(0)
        let failed = Observed(false)
        try await withServer(
            configure: { $0.writeStallTimeout = .milliseconds(400) },
            routes: { router in
                router.get("/endless") { _ in
                    HTTPResponse(
                        body: .stream { writer in
                            do {
                                while true {
                                    try await writer.write([UInt8](repeating: 0x62, count: 16 * 1024))
                                    produced.update { $0 += 16 * 1024 }
                                }
                            } catch {
                                failed.update { $0 = true }
                                throw error
                            }
                        })
                }
            }
        ) { server, port in
            let client = try TestClient(port: port)
            try client.send("GET /endless HTTP/1.1\r\nHost: x\r\n\r\n")
            // The stalled write is closed after 400 ms; until then the producer is held back, so
            // what it wrote is bounded by the watermark plus the kernel's socket buffers.
            await eventually("the stalled write fails") { failed.value }
            #expect(produced.value < 32 * 1024 * 1024)
            await eventually("the server has no connection open") { server.openConnectionCount == 0 }
            withExtendedLifetime(client) {}
        }
    }

    @Test("closes a kept-alive connection after the idle timeout")
    func idleTimeout() async throws {
        try await withServer(configure: { $0.idleTimeout = .milliseconds(200) }, routes: echoRoutes) { server, port in
            try await onThread {
                let client = try TestClient(port: port)
                try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try client.readResponse().status == 200)
                #expect(client.readsEndOfStream())
            }
            await eventually("the server has no connection open") { server.openConnectionCount == 0 }
        }
    }

    @Test("listens on IPv6 and reports the port it picked")
    func ipv6() async throws {
        try await withServer(configure: { $0.host = "::1" }, routes: echoRoutes) { server, port in
            #expect(port > 0)
            #expect(server.localAddress == .v6(host: "::1", port: port))
            try await onThread {
                let client = try TestClient(port: port, host: "::1")
                try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try client.readResponse().text == "hello")
            }
        }
    }

    @Test("answers an HTTP/1.0 stream close-delimited and a HEAD stream without a body")
    func streamFraming() async throws {
        try await withServer(routes: { router in
            router.get("/stream") { _ in
                HTTPResponse(
                    body: .stream { writer in
                        try await writer.write("abc")
                        try await writer.write("def")
                    })
            }
        }) { _, port in
            try await onThread {
                let old = try TestClient(port: port)
                try old.send("GET /stream HTTP/1.0\r\n\r\n")
                let response = try old.readResponse()
                #expect(response.header("Transfer-Encoding") == nil)
                #expect(response.header("Connection") == "close")
                #expect(response.text == "abcdef")

                let head = try TestClient(port: port)
                try head.send("HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\nGET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try head.readResponse(head: true).status == 200)
                #expect(try head.readResponse().text == "abcdef")
            }
        }
    }
}
