import EventLoop
import HTTP1
import HTTPClient
import HTTPServer
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Test certificates and an nginx with `certificate` (TLS, HTTP/2 unless `http2` is false)
/// in front of an in-process upstream; `body` gets the https base URL, the proxy and the
/// certificates. Everything is stopped and removed afterwards.
private func withTLSProxy(
    certificate: (TestCertificates) -> (certificate: String, key: String) = { $0.server },
    http2: Bool = true,
    host: String = "127.0.0.1",
    _ routes: (inout Router) -> Void = { router in router.get("/hello") { _ in .text("hello") } },
    _ body: (String, TLSProxy, TestCertificates) async throws -> Void
) async throws {
    let certificates = try await TestCertificates.make()
    defer { certificates.remove() }
    try await withUpstream(routes) { _, upstream in
        let upstreamPort = Int(upstream.split(separator: ":").last!)!
        let proxy = try await TLSProxy.start(
            upstreamPort: upstreamPort, certificate: certificate(certificates), http2: http2)
        do {
            try await body("https://\(host):\(proxy.port)", proxy, certificates)
        } catch {
            await proxy.stop()
            throw error
        }
        await proxy.stop()
    }
}

/// The error `body` throws, failing the test when it throws none or another type.
private func clientError(_ body: () async throws -> Void) async -> HTTPClientError? {
    do {
        try await body()
        Issue.record("expected an HTTPClientError, got success")
    } catch let error as HTTPClientError {
        return error
    } catch {
        Issue.record("expected an HTTPClientError, got \(error)")
    }
    return nil
}

@Suite("HTTP client over TLS and HTTP/2", .serialized)
struct HTTPSTests {
    @Test("answers over HTTP/2 with the request's own CA file, by IP and by host name")
    func trustedCAOverHTTP2() async throws {
        try await withTLSProxy { base, proxy, certificates in
            try await withClient({ $0.timeout = .seconds(10) }) { client in
                let response = try await client.send(
                    HTTPClientRequest(url: base + "/hello", caFile: certificates.caFile))
                #expect(response.status == 200)
                #expect(String(decoding: response.body, as: UTF8.self) == "hello")
                #expect(response.head.httpVersion == .http2)
                #expect(response.head.httpVersion.description == "2")
                let named = try await client.send(
                    HTTPClientRequest(url: "https://localhost:\(proxy.port)/hello", caFile: certificates.caFile))
                #expect(named.status == 200)
                #expect(named.head.httpVersion == .http2)
            }
        }
    }

    @Test("a reused handle verifies each request against its own trust: the CA file, or the system store")
    func caFileDoesNotCarryOver() async throws {
        try await withTLSProxy { base, _, certificates in
            // One loop, one request at a time: every request runs on the same easy handle.
            try await withClient({ $0.timeout = .seconds(10) }) { client in
                let trusted = try await client.send(
                    HTTPClientRequest(url: base + "/hello", caFile: certificates.caFile))
                #expect(trusted.status == 200)
                let untrusted = await clientError { _ = try await client.send(HTTPClientRequest(url: base + "/hello")) }
                #expect(untrusted?.kind == .tls, "the system store does not hold the test CA")
                #expect(untrusted?.beforeResponse == true)
                let trustedAgain = try await client.send(
                    HTTPClientRequest(url: base + "/hello", caFile: certificates.caFile))
                #expect(trustedAgain.status == 200)
                let other = await clientError {
                    _ = try await client.send(HTTPClientRequest(url: base + "/hello", caFile: certificates.otherCAFile))
                }
                #expect(other?.kind == .tls, "a connection verified with one CA is not reused for another")
            }
        }
    }

    @Test("fails .tls when the certificate chains to another CA")
    func wrongCA() async throws {
        try await withTLSProxy { base, _, certificates in
            try await withClient({ $0.timeout = .seconds(10) }) { client in
                let error = await clientError {
                    _ = try await client.send(HTTPClientRequest(url: base + "/hello", caFile: certificates.otherCAFile))
                }
                #expect(error?.kind == .tls)
                #expect(error?.beforeResponse == true)
            }
        }
    }

    @Test("fails .tls on an expired certificate")
    func expiredCertificate() async throws {
        try await withTLSProxy(certificate: { $0.expired }) { base, _, certificates in
            try await withClient({ $0.timeout = .seconds(10) }) { client in
                let error = await clientError {
                    _ = try await client.send(HTTPClientRequest(url: base + "/hello", caFile: certificates.caFile))
                }
                #expect(error?.kind == .tls)
                #expect(error?.beforeResponse == true)
            }
        }
    }

    @Test("fails .tls when the certificate is for another host name")
    func hostNameMismatch() async throws {
        try await withTLSProxy(certificate: { $0.wrongHost }) { base, proxy, certificates in
            try await withClient({ $0.timeout = .seconds(10) }) { client in
                for url in [base + "/hello", "https://localhost:\(proxy.port)/hello"] {
                    let error = await clientError {
                        _ = try await client.send(HTTPClientRequest(url: url, caFile: certificates.caFile))
                    }
                    #expect(error?.kind == .tls, "\(url)")
                }
            }
        }
    }

    @Test("fails .tls when the CA file cannot be read")
    func unreadableCAFile() async throws {
        try await withTLSProxy { base, _, certificates in
            try await withClient({ $0.timeout = .seconds(10) }) { client in
                let error = await clientError {
                    _ = try await client.send(
                        HTTPClientRequest(url: base + "/hello", caFile: certificates.directory + "/missing.pem"))
                }
                #expect(error?.kind == .tls)
            }
        }
    }

    @Test("1,000 requests at once on a cold client share a few HTTP/2 connections")
    func coldBurstMultiplexes() async throws {
        _ = Socket.raiseOpenFileLimit()
        let arrived = Atomic<Int>(0)
        try await HeavyLoad.exclusive {
            try await withTLSProxy({ router in
                router.get("/slow") { _ in
                    // Each answers only once all 1,000 are in flight together: requests queued
                    // behind too few streams never are, and answer "queued" after the wait.
                    arrived.add(1, ordering: .relaxed)
                    // Looks every 50 ms: a thousand waiters polling faster would load the machine.
                    await eventually(
                        "all 1,000 requests are in flight", every: .milliseconds(50), onTimeout: .returnsFalse
                    ) { arrived.load(ordering: .relaxed) >= 1000 }
                    return .text(arrived.load(ordering: .relaxed) == 1000 ? "done" : "queued")
                }
            }) { base, proxy, certificates in
                try await withClient({ $0.timeout = .seconds(120) }) { client in
                    let versions = try await withThrowingTaskGroup(of: HTTPClientResponseHead.Version?.self) { group in
                        for _ in 0..<1000 {
                            group.addTask {
                                let response = try await client.send(
                                    HTTPClientRequest(url: base + "/slow", caFile: certificates.caFile))
                                let answered = response.status == 200 && response.body == Array("done".utf8)
                                return answered ? response.head.httpVersion : nil
                            }
                        }
                        var versions: [HTTPClientResponseHead.Version?] = []
                        for try await version in group { versions.append(version) }
                        return versions
                    }
                    #expect(versions.count == 1000)
                    #expect(versions.allSatisfy { $0 == .http2 })
                    await eventually("the proxy's access log has 1,000 lines") { proxy.accessLogLines().count == 1000 }
                    // At most the client's per-host cap, however many streams nginx allows on each.
                    let connections = proxy.connectionsLogged()
                    #expect(connections <= 8, "\(connections) connections")
                }
            }
        }
    }

    @Test("an https host that answers in HTTP/1.1 is not held to the HTTP/2 connection cap")
    func http1OverTLSIsNotCapped() async throws {
        try await withTLSProxy(
            http2: false,
            { router in
                router.get("/slow") { _ in
                    // Long enough for the 40 requests to be in flight together.
                    try await Task.sleep(for: .milliseconds(500))
                    return .text("done")
                }
            }
        ) { base, proxy, certificates in
            try await withClient({ $0.timeout = .seconds(30) }) { client in
                let first = try await client.send(HTTPClientRequest(url: base + "/slow", caFile: certificates.caFile))
                #expect(first.head.httpVersion == .http1_1)
                #expect(first.head.httpVersion.description == "1.1")
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<40 {
                        group.addTask {
                            let response = try await client.send(
                                HTTPClientRequest(url: base + "/slow", caFile: certificates.caFile))
                            #expect(response.status == 200)
                        }
                    }
                    try await group.waitForAll()
                }
                await eventually("the proxy's access log has 41 lines") { proxy.accessLogLines().count == 41 }
                #expect(
                    proxy.connectionsLogged() >= 40, "one connection per request in flight, far past the HTTP/2 cap")
            }
        }
    }

    @Test(
        "a cold burst to an https host answering in HTTP/1.1 gets a connection per request once a head shows it"
    )
    func coldHTTP1OverTLSBurstIsNotRationed() async throws {
        try await withTLSProxy(
            http2: false,
            { router in
                router.get("/slow") { _ in
                    // Long enough for the burst's requests to be in flight together.
                    try await Task.sleep(for: .milliseconds(500))
                    return .text("done")
                }
            }
        ) { base, proxy, certificates in
            try await withClient({ $0.timeout = .seconds(30) }) { client in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<64 {
                        group.addTask {
                            let response = try await client.send(
                                HTTPClientRequest(url: base + "/slow", caFile: certificates.caFile))
                            #expect(response.status == 200)
                            #expect(response.head.httpVersion == .http1_1)
                        }
                    }
                    try await group.waitForAll()
                }
                await eventually("the proxy's access log has 64 lines") { proxy.accessLogLines().count == 64 }
                // Held to the HTTP/2 cap, the burst would have waited for those few connections in turn.
                let connections = proxy.connectionsLogged()
                #expect(connections >= 32, "\(connections) connections")
            }
        }
    }

    @Test("plain http still opens a connection per request in flight")
    func plainHTTPIsNotCapped() async throws {
        try await HeavyLoad.exclusive {
            try await withUpstream({ router in
                router.get("/slow") { _ in
                    // Long enough for the 300 requests to be in flight together.
                    try await Task.sleep(for: .milliseconds(500))
                    return .text("done")
                }
            }) { server, base in
                try await withClient({ $0.timeout = .seconds(30) }) { client in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for _ in 0..<300 {
                            group.addTask {
                                let response = try await client.send(HTTPClientRequest(url: base + "/slow"))
                                #expect(response.status == 200)
                            }
                        }
                        try await group.waitForAll()
                    }
                    #expect(server.acceptedConnectionCount >= 300)
                }
            }
        }
    }

    @Test("a response head later than the head timeout fails .timedOut before any response")
    func headTimeout() async throws {
        let released = Atomic<Bool>(false)
        try await withUpstream({ router in
            router.get("/stall") { _ in
                // An upstream whose head comes only once the test is done with it (or after a
                // minute): with a client timeout of two minutes, a .timedOut can only be the head's.
                await eventually("the test is done with the stalled head", onTimeout: .returnsFalse) {
                    released.load(ordering: .relaxed)
                }
                return .text("late")
            }
            router.get("/trickle") { _ in
                HTTPResponse(
                    body: .stream { writer in
                        for index in 0..<4 {
                            try await writer.write("piece \(index)\n")
                            // The upstream's pace: the body takes longer than the head timeout.
                            try await Task.sleep(for: .milliseconds(150))
                        }
                    })
            }
        }) { _, base in
            try await withClient({ $0.timeout = .seconds(120) }) { client in
                let error = await clientError {
                    _ = try await client.send(HTTPClientRequest(url: base + "/stall", headTimeout: .milliseconds(300)))
                }
                #expect(error?.kind == .timedOut)
                #expect(error?.beforeResponse == true)
                released.store(true, ordering: .relaxed)
                #expect(await client.activeTransferCount() == 0)
                // A head in time, and a body that takes longer than the head timeout: answered.
                let streamed = try await client.send(
                    HTTPClientRequest(url: base + "/trickle", headTimeout: .milliseconds(300)))
                #expect(streamed.status == 200)
                #expect(String(decoding: streamed.body, as: UTF8.self) == (0..<4).map { "piece \($0)\n" }.joined())
                let stream = try await client.stream(
                    HTTPClientRequest(url: base + "/trickle", headTimeout: .milliseconds(300)))
                var text = ""
                for try await chunk in stream.body { text += String(decoding: chunk, as: UTF8.self) }
                #expect(text.hasSuffix("piece 3\n"))
            }
        }
    }

    @Test("a stream whose head is late fails .timedOut, and the handle is reused cleanly")
    func headTimeoutOnStream() async throws {
        try await withUpstream({ router in
            router.get("/stall") { _ in
                // An upstream whose head comes later than the head timeout.
                try await Task.sleep(for: .seconds(5))
                return .text("late")
            }
            router.get("/ok") { _ in .text("ok") }
        }) { _, base in
            try await withClient({ $0.timeout = .seconds(10) }) { client in
                let error = await clientError {
                    _ = try await client.stream(
                        HTTPClientRequest(url: base + "/stall", headTimeout: .milliseconds(200)))
                }
                #expect(error?.kind == .timedOut)
                #expect(error?.beforeResponse == true)
                // No head timeout on the next request: the timer of the last one is gone.
                let response = try await client.send(HTTPClientRequest(url: base + "/ok"))
                #expect(response.status == 200)
            }
        }
    }

    @Test(
        "a kept-alive connection the server resets as the next request arrives: that request is answered on a new one")
    func resetReusedConnectionIsRetried() async throws {
        let server = try ResettingServer()
        defer { server.stop() }
        try await withClient({ $0.timeout = .seconds(10) }) { client in
            let base = "http://127.0.0.1:\(server.port)"
            let first = try await client.send(
                HTTPClientRequest(method: "POST", url: base + "/one", body: Array("a".utf8)))
            #expect(String(decoding: first.body, as: UTF8.self) == "first")
            let second = try await client.send(
                HTTPClientRequest(method: "POST", url: base + "/two", body: Array("b".utf8)))
            #expect(second.status == 200)
            #expect(String(decoding: second.body, as: UTF8.self) == "second")
            #expect(server.accepted == 2)
        }
    }

    @Test("an HTTP/2 stream reset before its head on a reused connection is sent once more, on a new connection")
    func resetStreamIsRetriedOnFreshConnection() async throws {
        try await withTLSProxy { base, proxy, certificates in
            try await withClient({ $0.timeout = .seconds(10) }) { client in
                let warm = try await client.send(HTTPClientRequest(url: base + "/hello", caFile: certificates.caFile))
                #expect(warm.head.httpVersion == .http2)
                let error = await clientError {
                    _ = try await client.send(
                        HTTPClientRequest(url: base + "/nginx/reset", caFile: certificates.caFile))
                }
                #expect(error?.kind == .transport)
                #expect(error?.beforeResponse == true)
                await eventually("the proxy's access log has at least 3 lines") { proxy.accessLogLines().count >= 3 }
                let resets = proxy.accessLogLines().filter { $0.hasSuffix(" /nginx/reset") }
                #expect(resets.count == 2, "tried on the warm connection, then once on a new one: \(resets)")
                let connections = Set(resets.compactMap { $0.split(separator: " ").first })
                #expect(connections.count == 2)
                // The next request goes out on a pooled connection again (no fresh connect left on).
                #expect(
                    try await client.send(HTTPClientRequest(url: base + "/hello", caFile: certificates.caFile)).status
                        == 200)
                await eventually("the proxy's access log has 4 lines") { proxy.accessLogLines().count == 4 }
                #expect(proxy.connectionsLogged() == 2)
            }
        }
    }

    @Test("a connection reset with no retry left fails before any response; after a byte of it, not so")
    func beforeResponseOnTransportFailures() async throws {
        let silent = try ResettingServer(answerFirst: false)
        defer { silent.stop() }
        try await withClient({ $0.timeout = .seconds(10) }) { client in
            // A fresh connection reset before the head: not retried (nothing shows it was a
            // race with an idle close), and nothing was answered.
            let error = await clientError {
                _ = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(silent.port)/"))
            }
            #expect(error?.kind == .transport)
            #expect(error?.beforeResponse == true)
        }
        let truncating = try ResettingServer(truncate: true)
        defer { truncating.stop() }
        try await withClient({ $0.timeout = .seconds(10) }) { client in
            let error = await clientError {
                _ = try await client.send(HTTPClientRequest(url: "http://127.0.0.1:\(truncating.port)/"))
            }
            #expect(error?.kind == .transport)
            #expect(error?.beforeResponse == false)
        }
    }

    @Test("fails .tls when the server does not speak TLS at all")
    func handshakeWithPlainServer() async throws {
        try await withUpstream({ router in router.get("/hello") { _ in .text("hello") } }) { _, base in
            try await withClient({ $0.timeout = .seconds(10) }) { client in
                let plain = "https://" + base.dropFirst("http://".count)
                let error = await clientError { _ = try await client.send(HTTPClientRequest(url: plain + "/hello")) }
                #expect(error?.kind == .tls)
                #expect(error?.beforeResponse == true)
                // The same server over plain http, on the same handle, still answers.
                let answered = try await client.send(HTTPClientRequest(url: base + "/hello"))
                #expect(answered.status == 200)
            }
        }
    }

    @Test("a command the tests spawn (openssl, nginx) inherits none of the test process's descriptors")
    func spawnedCommandsInheritNoSockets() throws {
        let socketHeldOpen = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) // no CLOEXEC, as TestClient's
        defer { close(socketHeldOpen) }
        let (status, output) = try Subprocess.run("/bin/ls", ["/proc/self/fd"])
        #expect(status == 0)
        // Standard input, output and error, and the directory ls reads.
        let descriptors = output.split(whereSeparator: { $0 == "\n" || $0 == " " }).compactMap { Int32($0) }
        #expect(!descriptors.contains(socketHeldOpen), "\(descriptors)")
        #expect(descriptors.allSatisfy { $0 <= 3 }, "\(descriptors)")
    }

    @Test("beforeResponse defaults to what the kind implies")
    func beforeResponseDefaults() {
        #expect(HTTPClientError(.tls).beforeResponse)
        #expect(HTTPClientError(.connectFailed).beforeResponse)
        #expect(!HTTPClientError(.transport).beforeResponse)
        #expect(HTTPClientError(.transport, beforeResponse: true).beforeResponse)
    }
}

/// A raw HTTP/1.1 server on a thread of its own, for what a real server does only by
/// chance of timing. By default: it answers the first request on a connection and keeps
/// it open, then resets that connection (RST) the moment the next request arrives, and
/// answers on any later connection. `answerFirst` false: every connection is reset as its
/// first request arrives. `truncate`: it sends half a response head, then resets.
private final class ResettingServer: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let port: Int
    private let listener: Int32
    private let acceptedCount = Atomic<Int>(0)
    var accepted: Int { acceptedCount.load(ordering: .relaxed) }

    init(answerFirst: Bool = true, truncate: Bool = false) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound, listen(fd, 16) == 0 else {
            close(fd)
            throw ResettingServer.Failure(description: "listen failed")
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        DetachedThread.detach { [self] in
            while true {
                let connection = accept(fd, nil, nil)
                guard connection >= 0 else {
                    // Shut down by ``stop()``; closed here, so that no other test's socket can
                    // take the number while this loop might still accept on it.
                    close(fd)
                    return
                }
                let index = acceptedCount.add(1, ordering: .relaxed).oldValue
                DetachedThread.detach {
                    Self.serve(connection, index: index, answerFirst: answerFirst, truncate: truncate)
                }
            }
        }
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private static func serve(_ fd: Int32, index: Int, answerFirst: Bool, truncate: Bool) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        defer { close(fd) }
        guard readRequest(fd) else { return }
        if truncate {
            send(fd, "HTTP/1.1 200 OK\r\nContent-Le")
            reset(fd)
            return
        }
        if index == 0 && answerFirst {
            send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst")
            // Kept alive; the client's next request on it is met with a reset.
            guard readRequest(fd) else { return }
            reset(fd)
        } else if !answerFirst {
            reset(fd)
        } else {
            send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecond")
        }
    }

    /// Reads one request head and its `Content-Length` body; false when the peer left.
    private static func readRequest(_ fd: Int32) -> Bool {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if let end = bytes.indices.first(where: { bytes[$0...].starts(with: [13, 10, 13, 10]) }) {
                let head = String(decoding: bytes[..<end], as: UTF8.self).lowercased()
                let length =
                    head.split(separator: "\r\n").compactMap { line -> Int? in
                        guard line.hasPrefix("content-length:") else { return nil }
                        return Int(line.dropFirst("content-length:".count).drop { $0 == " " })
                    }.first ?? 0
                if bytes.count >= end + 4 + length { return true }
            }
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { return false }
            bytes += buffer[0..<count]
        }
    }

    private static func send(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Closes with a reset rather than a FIN (linger on, zero seconds).
    private static func reset(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }
}
