#if canImport(Glibc)
    package import Glibc
#endif

/// A command the tests run (`sqlite3`, say), spawned with `posix_spawn` and reaped with
/// `waitpid` by whoever waits for it. Not Foundation's `Process`: its reaping races the test
/// runner's own watch over child processes (exit tests), and a test waiting for it can hang.
package final class Subprocess {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package let pid: Int32
    private var input: Int32 = -1
    private var output: Int32 = -1

    /// Starts `executable` with `arguments`; with `input`, its standard input is a pipe this
    /// side writes (``write(_:)``, ``closeInput()``); with `captureOutput`, its standard output
    /// and error are a pipe ``readOutputToEnd()`` reads; otherwise they are /dev/null.
    package init(
        _ executable: String, _ arguments: [String], input wantsInput: Bool = false, captureOutput: Bool = false
    ) throws {
        var inPipe: [Int32] = [-1, -1]
        var outPipe: [Int32] = [-1, -1]
        // Close-on-exec, so no other child spawned meanwhile holds an end open.
        func makePipe(_ ends: inout [Int32]) throws {
            guard pipe(&ends) == 0 else { throw Failure(description: "pipe failed") }
            for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        }
        if wantsInput { try makePipe(&inPipe) }
        if captureOutput { try makePipe(&outPipe) }
        let spawned = Result {
            try spawnChild(
                [executable] + arguments, input: wantsInput ? .descriptor(inPipe[0]) : .devNull,
                output: captureOutput ? .descriptor(outPipe[1]) : .devNull
            )
        }
        for fd in [inPipe[0], outPipe[1]] where fd >= 0 { close(fd) }
        let child: pid_t
        do {
            child = try spawned.get()
        } catch {
            for fd in [inPipe[1], outPipe[0]] where fd >= 0 { close(fd) }
            throw error
        }
        pid = child
        input = inPipe[1]
        output = outPipe[0]
    }

    deinit {
        closeInput()
        if output >= 0 { close(output) }
    }

    /// Writes `text` to the command's standard input.
    package func write(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty, input >= 0 {
            let written = bytes.withUnsafeBytes { Glibc.write(input, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }

    /// Ends the command's standard input.
    package func closeInput() {
        if input >= 0 { close(input) }
        input = -1
    }

    /// Everything the command writes to its standard output and error, until it closes them.
    package func readOutputToEnd() -> String {
        guard output >= 0 else { return "" }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(output, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Waits for the command to end: its exit status, or 128 plus the signal that ended it.
    @discardableResult
    package func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Runs a command to its end: its exit status and what it printed (output and error).
    package static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = try Subprocess(executable, arguments, captureOutput: true)
        let text = process.readOutputToEnd()
        return (process.wait(), text)
    }
}

/// Makes a spawned child close every descriptor above standard error that it would inherit:
/// a test's socket held open by a child would never show its peer a close (suites run in
/// parallel, and not every socket is opened with CLOEXEC). glibc's
/// `posix_spawn_file_actions_addclosefrom_np` is not visible to Swift, so it is looked up;
/// without it the child inherits them as before.
package func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return }
    _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
}
