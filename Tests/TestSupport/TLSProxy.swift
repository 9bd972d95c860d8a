import EventLoop
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// An nginx of a test's own terminating TLS (and HTTP/2) on a free loopback port, passing
/// requests to a plain-http upstream on loopback. It runs as the current user in its own
/// temporary directory (configuration, pid file, logs) and in a process group of its own,
/// stopped by its pid. Its access log has one line per request: the connection's number,
/// the request's number on it, the protocol, the status and the URI, so a test can count
/// the connections a client opened. `/nginx/reset` is nginx's own: it ends the request
/// without a byte of answer (`return 444`: an HTTP/2 stream is reset, HTTP/1.1 closed).
package final class TLSProxy: Sendable {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package let port: Int
    package let directory: String
    private let pid: pid_t
    package var accessLog: String { directory + "/access.log" }

    private init(port: Int, directory: String, pid: pid_t) {
        self.port = port
        self.directory = directory
        self.pid = pid
    }

    /// Starts nginx with `certificate` in front of 127.0.0.1:`upstreamPort`; `http2` false
    /// serves HTTP/1.1 only. Waits until it accepts connections.
    package static func start(
        upstreamPort: Int, certificate: (certificate: String, key: String), http2: Bool = true
    ) async throws -> TLSProxy {
        let (port, directory, pid) = try await DetachedThread.run { () throws -> (Int, String, pid_t) in
            var template = Array("/tmp/tgnginx-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else { throw Failure(description: "mkdtemp failed") }
            let directory = String(cString: made)
            let port = try LoopbackPort.free()
            // As root (CI), nginx's workers would otherwise run as nobody, who cannot read this
            // directory; as anyone else the directive is not allowed.
            let user = getuid() == 0 ? "user root;\n" : ""
            let configuration = """
                daemon off;
                master_process on;
                worker_processes 1;
                worker_rlimit_nofile 16384;
                \(user)pid \(directory)/nginx.pid;
                error_log \(directory)/error.log warn;
                events { worker_connections 8192; }
                http {
                    log_format connections '$connection $connection_requests $server_protocol $status $request_uri';
                    access_log \(directory)/access.log connections;
                    client_body_temp_path \(directory)/body;
                    proxy_temp_path \(directory)/proxy;
                    fastcgi_temp_path \(directory)/fastcgi;
                    uwsgi_temp_path \(directory)/uwsgi;
                    scgi_temp_path \(directory)/scgi;
                    server {
                        listen 127.0.0.1:\(port) ssl\(http2 ? " http2" : "");
                        ssl_certificate \(certificate.certificate);
                        ssl_certificate_key \(certificate.key);
                        keepalive_timeout 60s;
                        location = /nginx/reset { return 444; }
                        location / {
                            proxy_pass http://127.0.0.1:\(upstreamPort);
                            proxy_http_version 1.1;
                            proxy_set_header Connection "";
                            proxy_read_timeout 30s;
                        }
                    }
                }

                """
            try write(configuration, to: directory + "/nginx.conf")
            let pid = try spawn(
                ["/usr/sbin/nginx", "-p", directory, "-e", directory + "/error.log", "-c", directory + "/nginx.conf"],
                output: directory + "/nginx.out"
            )
            return (port, directory, pid)
        }
        let proxy = TLSProxy(port: port, directory: directory, pid: pid)
        guard await eventually("nginx listens on \(port)", onTimeout: .returnsFalse, { LoopbackPort.accepts(port) })
        else {
            let log = proxy.read("error.log") + proxy.read("nginx.out")
            await proxy.stop()
            throw Failure(description: "nginx did not listen on \(port): \(log)")
        }
        return proxy
    }

    /// Stops nginx (master and workers, by the master's pid as their process group), waits
    /// for the master, and removes the directory.
    package func stop() async {
        let pid = self.pid
        let directory = self.directory
        await DetachedThread.run {
            Glibc.kill(-pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            _ = try? Subprocess.run("/bin/rm", ["-rf", directory])
        }
    }

    /// The access log's lines so far (nginx writes each as its request ends).
    package func accessLogLines() -> [String] {
        read("access.log").split(separator: "\n").map(String.init)
    }

    /// Distinct client connections in the access log.
    package func connectionsLogged() -> Int {
        Set(accessLogLines().compactMap { $0.split(separator: " ").first }).count
    }

    private func read(_ name: String) -> String {
        guard let file = fopen(directory + "/" + name, "r") else { return "" }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// posix_spawn with an empty signal mask (nginx is stopped and reloaded by signals) in a
    /// process group of its own, output to `output`.
    private static func spawn(_ words: [String], output: String) throws -> pid_t {
        try spawnChild(words, output: .file(output), processGroup: true)
    }
}
