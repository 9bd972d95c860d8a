import EventLoop
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A program started by a test, with its output in temporary files, stopped only by its pid.
final class ChildProcess {
    let pid: pid_t
    private let outputPath: String
    private(set) var exitStatus: Int32?

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// The directory of the test bundle, where SwiftPM puts the package's executables.
    static var productsDirectory: String {
        let path = CommandLine.arguments[0]
        guard let slash = path.lastIndex(of: "/") else { return "." }
        var directory = String(path[..<slash])
        // On Linux the test runner is `<products>/<Package>PackageTests.xctest`.
        if directory.hasSuffix(".xctest") { directory = String(directory[..<directory.lastIndex(of: "/")!]) }
        return directory
    }

    /// - Parameters:
    ///   - fileSizeLimitKiB: when set, the child runs under `ulimit -f` (a full disk, as far
    ///     as its writes can tell).
    ///   - umask: when set, the child's file mode creation mask (octal, as `umask` takes it).
    ///   - standardOutputOnly: ``output`` holds standard output only; standard error is dropped.
    init(
        _ executable: String, arguments: [String], environment: [String: String], workingDirectory: String? = nil,
        fileSizeLimitKiB: Int? = nil, umask: String? = nil, standardOutputOnly: Bool = false
    ) throws {
        // A package executable by name, any other program by its absolute path.
        let path = executable.hasPrefix("/") ? executable : Self.productsDirectory + "/" + executable
        guard access(path, X_OK) == 0 else { throw Failure(description: "\(path) is not built") }
        var template = Array("/tmp/textgateway-child-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw Failure(description: "mkstemp failed") }
        outputPath = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)

        // `env -C DIR` changes directory, then execs the program in place (same pid).
        var words = workingDirectory.map { ["/usr/bin/env", "-C", $0, path] } ?? [path]
        // The shell sets the limit, the mask and the redirection, then becomes the program (same pid).
        var prelude: [String] = []
        // POSIX's `ulimit -f` counts blocks of 512 bytes (dash does; bash, out of POSIX mode, 1024).
        if let fileSizeLimitKiB { prelude.append("ulimit -f \(fileSizeLimitKiB * 2)") }
        if let umask { prelude.append("umask \(umask)") }
        if !prelude.isEmpty || standardOutputOnly {
            let exec = standardOutputOnly ? "exec \"$@\" 2>/dev/null" : "exec \"$@\""
            words = ["/bin/sh", "-c", (prelude + [exec]).joined(separator: " && "), "sh"] + words
        }
        let spawned = Result { try spawnChild(words + arguments, environment: environment, output: .descriptor(fd)) }
        close(fd)
        pid = try spawned.get()
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        unlink(outputPath)
    }

    /// Everything the child wrote to stdout and stderr so far.
    var output: String {
        guard let file = fopen(outputPath, "r") else { return "" }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    func signal(_ number: Int32) { kill(pid, number) }

    /// Waits up to `seconds` for the child to exit; returns its exit code (or 128+signal), nil
    /// when it has not exited. The caller decides what a child still running means.
    func waitForExit(seconds: Double) async -> Int32? {
        var code: Int32?
        await eventually("child \(pid) exits", within: .seconds(seconds), onTimeout: .returnsFalse) {
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == pid else { return false }
            code = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            return true
        }
        if let code { exitStatus = code }
        return code
    }

    /// Waits up to `seconds` until the output contains `text`, and says whether it does; unless
    /// told otherwise, a test issue at the caller's line when it does not.
    @discardableResult
    func waitForOutput(
        _ text: String, seconds: Double = 10, onTimeout: PollTimeout = .fails,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Bool {
        await eventually(
            "the output of child \(pid) contains \(text)", within: .seconds(seconds), onTimeout: onTimeout,
            sourceLocation: sourceLocation
        ) { output.contains(text) }
    }
}
