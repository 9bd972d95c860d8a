import EventLoop

#if canImport(Glibc)
    import Glibc
#endif

/// Certificates for TLS tests, made with the `openssl` command into a temporary directory:
/// a CA, a server certificate for `localhost` and 127.0.0.1 signed by it, one for another
/// host name, an expired one, and a second CA that signed none of them.
package final class TestCertificates: Sendable {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package let directory: String
    /// The CA's certificate (a PEM bundle of one), what a client trusts.
    package var caFile: String { directory + "/ca.pem" }
    /// A CA that signed nothing here: trusting it alone, every server certificate fails.
    package var otherCAFile: String { directory + "/other-ca.pem" }
    /// For `localhost` and 127.0.0.1, valid now.
    package let server: (certificate: String, key: String)
    /// For `other.invalid` only: right CA, wrong name.
    package let wrongHost: (certificate: String, key: String)
    /// For `localhost` and 127.0.0.1, no longer valid.
    package let expired: (certificate: String, key: String)

    private init(directory: String) {
        self.directory = directory
        server = (directory + "/server.pem", directory + "/server.key")
        wrongHost = (directory + "/wrong-host.pem", directory + "/wrong-host.key")
        expired = (directory + "/expired.pem", directory + "/expired.key")
    }

    /// Makes every certificate; blocking, so it runs on a thread of its own.
    package static func make() async throws -> TestCertificates {
        try await DetachedThread.run { () throws -> TestCertificates in
            var template = Array("/tmp/tgtls-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else { throw Failure(description: "mkdtemp failed") }
            let certificates = TestCertificates(directory: String(cString: made))
            do {
                try certificates.makeAll()
            } catch {
                certificates.remove()
                throw error
            }
            return certificates
        }
    }

    private func makeAll() throws {
        try makeCA("ca", name: "TextGateway Test CA")
        try makeCA("other-ca", name: "TextGateway Unrelated CA")
        try makeLeaf("server", names: "DNS:localhost,IP:127.0.0.1", days: 2)
        try makeLeaf("wrong-host", names: "DNS:other.invalid", days: 2)
        // A negative validity: it ended before it began, so it is expired now.
        try makeLeaf("expired", names: "DNS:localhost,IP:127.0.0.1", days: -1)
    }

    private func makeCA(_ name: String, name subject: String) throws {
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "\(directory)/\(name).key", "-out", "\(directory)/\(name).pem", "-days", "2", "-subj",
            "/CN=\(subject)",
        ])
    }

    private func makeLeaf(_ name: String, names: String, days: Int) throws {
        let extensions = "\(directory)/\(name).ext"
        try write(
            "subjectAltName=\(names)\nbasicConstraints=CA:FALSE\n"
                + "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
            to: extensions)
        try openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "\(directory)/\(name).key", "-out", "\(directory)/\(name).csr", "-subj", "/CN=\(name)",
        ])
        try openssl([
            "x509", "-req", "-in", "\(directory)/\(name).csr", "-CA", caFile, "-CAkey", "\(directory)/ca.key",
            "-set_serial", "\(UInt32.random(in: 1...UInt32.max))", "-days", "\(days)", "-extfile", extensions,
            "-out", "\(directory)/\(name).pem",
        ])
    }

    private func openssl(_ arguments: [String]) throws {
        let (status, output) = try Subprocess.run("/usr/bin/openssl", arguments)
        guard status == 0 else {
            throw Failure(description: "openssl \(arguments.first ?? "") failed (\(status)): \(output)")
        }
    }

    /// Removes the directory and everything in it.
    package func remove() {
        _ = try? Subprocess.run("/bin/rm", ["-rf", directory])
    }
}

/// Writes `text` to a new file at `path` (replacing one that is there).
func write(_ text: String, to path: String) throws {
    guard let file = fopen(path, "w") else { throw TestCertificates.Failure(description: "cannot write \(path)") }
    defer { fclose(file) }
    let bytes = Array(text.utf8)
    guard fwrite(bytes, 1, bytes.count, file) == bytes.count else {
        throw TestCertificates.Failure(description: "short write to \(path)")
    }
}
