import EventLoop

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking loopback client for end-to-end tests: raw bytes out, parsed responses in,
/// every read bounded by a receive timeout (generous: it is reached only when a test fails,
/// and a loaded machine may take seconds to answer).
package final class TestClient {
    package struct Response: Sendable {
        package var status: Int
        package var headers: [(String, String)]
        package var body: [UInt8]
        package var text: String { String(decoding: body, as: UTF8.self) }
        package func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package let fd: CInt
    private var buffer: [UInt8] = []

    /// Connects to `host`:`port` (127.0.0.1 or ::1); throws when refused.
    package init(port: Int, host: String = "127.0.0.1", timeoutSeconds: Int = 30) throws {
        let v6 = host.contains(":")
        fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let rc: CInt
        if v6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET6, host, &address.sin6_addr)
            rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr(host)
            rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        if rc != 0 {
            // No close here: `deinit` runs even when this init throws, and a second close
            // could close a number another thread of the test process holds by then.
            throw Failure(description: "connect: errno \(errno)")
        }
    }

    deinit { close(fd) }

    package func send(_ text: String) throws { try send(Array(text.utf8)) }

    package func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw Failure(description: "send: errno \(errno)") }
            offset += n
        }
    }

    /// Closes the connection abruptly.
    package func abort() {
        var value = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &value, socklen_t(MemoryLayout<linger>.size))
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Reads more bytes; false at end of stream, throws on timeout or error.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 { throw Failure(description: "recv: errno \(errno)") }
        if n == 0 { return false }
        buffer.append(contentsOf: chunk[0..<n])
        return true
    }

    private func readLine() throws -> String {
        while true {
            if let index = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                var line = Array(buffer[..<index])
                buffer.removeFirst(index + 1)
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            guard try fill() else { throw Failure(description: "end of stream in a line") }
        }
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else { throw Failure(description: "end of stream in a body") }
        }
        let bytes = Array(buffer[..<count])
        buffer.removeFirst(count)
        return bytes
    }

    /// Whether the server has sent something not yet read, or closed the connection: a look
    /// that does not wait.
    package var hasInput: Bool {
        if !buffer.isEmpty { return true }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0
    }

    /// True when the server closed the connection (reads end of stream) before the receive
    /// timeout.
    package func readsEndOfStream() -> Bool {
        do {
            while try fill() { buffer.removeAll() }
            return true
        } catch {
            return false
        }
    }

    /// Reads one response head only (for `100 Continue`).
    package func readHead() throws -> Response {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else {
            throw Failure(description: "bad status line: \(statusLine)")
        }
        var headers: [(String, String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw Failure(description: "bad header: \(line)") }
            let value = line[line.index(after: colon)...].drop { $0 == " " }
            headers.append((String(line[..<colon]), String(value)))
        }
        return Response(status: status, headers: headers, body: [])
    }

    /// Reads one response; `head: true` for a response to HEAD (no body).
    package func readResponse(head: Bool = false) throws -> Response {
        var response = try readHead()
        if head || response.status == 204 || response.status == 304 || response.status < 200 { return response }
        if let length = response.header("Content-Length"), let count = Int(length) {
            response.body = try readExactly(count)
        } else if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            while true {
                let sizeLine = try readLine()
                guard let size = Int(sizeLine.split(separator: ";")[0], radix: 16) else {
                    throw Failure(description: "bad chunk size \(sizeLine)")
                }
                if size == 0 {
                    while try !readLine().isEmpty {}
                    break
                }
                response.body += try readExactly(size)
                guard try readLine().isEmpty else { throw Failure(description: "missing CRLF after chunk") }
            }
        } else {
            while try fill() {}
            response.body = buffer
            buffer = []
        }
        return response
    }
}

// A test hands a client from the thread that connected it to the task that closes it, one
// at a time; nothing uses it from two threads at once.
extension TestClient: @unchecked Sendable {}

/// Runs blocking client code on a thread of its own so the cooperative pool stays free.
package func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    let result: Result<T, any Error> = await withCheckedContinuation { continuation in
        DetachedThread.detach {
            continuation.resume(returning: Result { try body() })
        }
    }
    return try result.get()
}
