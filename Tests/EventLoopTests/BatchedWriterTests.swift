import EventLoop
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Batched writer")
struct BatchedWriterTests {
    // A process writing to pipes through a BatchedWriter ignores SIGPIPE, as the server does
    // at start; without it a reader that goes away kills the test process.
    init() { signal(SIGPIPE, SIG_IGN) }

    @Test("delivers lines from several threads whole and in each thread's order")
    func severalThreads() async throws {
        let pipe = try TestPipe()
        defer { pipe.close() }
        let reader = PipeReader(pipe.readEnd)
        let writer = BatchedWriter(fileDescriptor: pipe.writeEnd)
        let threads = 4
        let perThread = 2_000
        let appenders = (0..<threads).map { thread in
            DetachedThread.start {
                for number in 0..<perThread { writer.append(Array("thread=\(thread) line=\(number) end\n".utf8)) }
            }
        }
        await DetachedThread.run { for appender in appenders { pthread_join(appender, nil) } }
        #expect(await DetachedThread.run { writer.shutdown(timeout: .seconds(10)) })
        pipe.closeWriteEnd()
        let text = String(decoding: await DetachedThread.run { reader.finish() }, as: UTF8.self)

        var next = [Int](repeating: 0, count: threads)
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[2] == "end",
                let thread = Int(parts[0].dropFirst("thread=".count)),
                let number = Int(parts[1].dropFirst("line=".count)),
                next.indices.contains(thread)
            else {
                Issue.record("a line arrived broken: \(line)")
                return
            }
            #expect(number == next[thread], "thread \(thread) out of order")
            next[thread] = number + 1
        }
        #expect(text.hasSuffix("\n"))
        #expect(next == [Int](repeating: perThread, count: threads))
        #expect(writer.droppedLineCount == 0)
    }

    @Test("writes a line without being asked, and flush returns once the bytes are readable")
    func flushWaitsForTheBytes() async throws {
        let pipe = try TestPipe()
        defer { pipe.close() }
        pipe.makeNonBlocking(pipe.readEnd)
        let writer = BatchedWriter(fileDescriptor: pipe.writeEnd)
        defer { writer.shutdown() }

        writer.append(Array("first\n".utf8))
        var received: [UInt8] = []
        await eventually("the first line arrives") {
            received += pipe.readAvailable()
            return received.count == 6
        }
        #expect(received == Array("first\n".utf8))

        for number in 0..<100 { writer.append(Array("line \(number)\n".utf8)) }
        #expect(await DetachedThread.run { writer.flush() })
        let expected = (0..<100).flatMap { Array("line \($0)\n".utf8) }
        #expect(pipe.readAvailable() == expected, "every byte readable as soon as flush returns")
    }

    @Test("never blocks append on a pipe nobody reads, and counts the lines it drops past its limit")
    func stalledPipe() async throws {
        let pipe = try TestPipe(capacity: 4096)
        defer { pipe.close() }
        let limit = 16 * 1024
        let writer = BatchedWriter(fileDescriptor: pipe.writeEnd, bufferLimit: limit)
        let line = Array("a line of log output, padded to a fixed length ......\n".utf8)
        let total = 10_000

        let appended = Atomic(false)
        DetachedThread.detach {
            for _ in 0..<total { writer.append(line) }
            appended.store(true, ordering: .releasing)
        }
        await eventually("the append returns instead of blocking") { appended.load(ordering: .acquiring) }
        let dropped = writer.droppedLineCount
        // At most the pipe, the batch in write(2) and a full buffer can have been taken.
        let kept = (4096 + 2 * limit) / line.count + 1
        #expect(dropped >= total - kept)
        #expect(
            await !DetachedThread.run { writer.flush(timeout: .milliseconds(20)) }, "a stalled pipe cannot be flushed")

        let reader = PipeReader(pipe.readEnd)
        #expect(await DetachedThread.run { writer.shutdown(timeout: .seconds(10)) })
        pipe.closeWriteEnd()
        let received = await DetachedThread.run { reader.finish() }
        #expect(received.count == (total - dropped) * line.count)
        #expect(received.isEmpty || received.suffix(line.count).elementsEqual(line), "lines stay whole")
        #expect(writer.droppedLineCount == dropped)
    }

    @Test("writes every byte to a small non-blocking pipe that is read slowly")
    func shortWrites() async throws {
        let pipe = try TestPipe(capacity: 4096)
        defer { pipe.close() }
        pipe.makeNonBlocking(pipe.writeEnd)
        let writer = BatchedWriter(fileDescriptor: pipe.writeEnd)
        var expected: [UInt8] = []
        for number in 0..<2_000 {
            let line = Array("\(number) \(String(repeating: "x", count: number % 300))\n".utf8)
            expected += line
            writer.append(line)
        }
        // Read only once all is appended: the pipe is full and each write takes a part.
        let reader = PipeReader(pipe.readEnd, chunk: 100)
        #expect(await DetachedThread.run { writer.shutdown(timeout: .seconds(20)) })
        pipe.closeWriteEnd()
        let received = await DetachedThread.run { reader.finish() }
        #expect(received.count == expected.count)
        // A Bool, so that a failure does not diff two long arrays.
        let same = received == expected
        #expect(same, "the bytes arrived changed or out of order")
        #expect(writer.droppedLineCount == 0)
    }

    @Test("drops and counts what a failing descriptor cannot take, and keeps running")
    func writeErrors() async throws {
        let badDescriptor = BatchedWriter(fileDescriptor: -1)
        badDescriptor.append(Array("one\n".utf8))
        badDescriptor.append(Array("two\nthree\n".utf8))
        #expect(await DetachedThread.run { badDescriptor.flush() })
        #expect(badDescriptor.droppedLineCount == 3, "EBADF")
        badDescriptor.append(Array("four\n".utf8))
        #expect(await DetachedThread.run { badDescriptor.flush() })
        #expect(badDescriptor.droppedLineCount == 4)
        #expect(await DetachedThread.run { badDescriptor.shutdown() })
        badDescriptor.append(Array("after shutdown\n".utf8))
        #expect(badDescriptor.droppedLineCount == 5)

        let pipe = try TestPipe()
        defer { pipe.close() }
        pipe.closeReadEnd()
        let readerGone = BatchedWriter(fileDescriptor: pipe.writeEnd)
        readerGone.append(Array("lost\n".utf8))
        #expect(await DetachedThread.run { readerGone.flush() })
        #expect(readerGone.droppedLineCount == 1, "EPIPE")
        #expect(await DetachedThread.run { readerGone.shutdown() })
    }
}

/// A pipe for one test. Tests close it in a `defer`, which also keeps it open until then.
private final class TestPipe: Sendable {
    let readEnd: CInt
    let writeEnd: CInt
    private let open = Mutex((read: true, write: true))

    /// `capacity` shrinks the pipe's buffer (to at least a page) so that it fills quickly.
    init(capacity: CInt? = nil) throws {
        var ends: [CInt] = [-1, -1]
        guard pipe(&ends) == 0 else { throw IOError(errnoCode: errno, reason: "pipe") }
        readEnd = ends[0]
        writeEnd = ends[1]
        if let capacity {
            // F_SETPIPE_SZ, which the Swift Glibc module does not export.
            let setPipeSize: CInt = 1031
            guard fcntl(writeEnd, setPipeSize, capacity) >= 0 else { throw IOError(errnoCode: errno, reason: "fcntl") }
        }
    }

    func close() {
        closeReadEnd()
        closeWriteEnd()
    }

    func makeNonBlocking(_ fd: CInt) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    func closeReadEnd() {
        if open.withLock({ ends in
            defer { ends.read = false }
            return ends.read
        }) {
            Glibc.close(readEnd)
        }
    }

    func closeWriteEnd() {
        if open.withLock({ ends in
            defer { ends.write = false }
            return ends.write
        }) {
            Glibc.close(writeEnd)
        }
    }

    /// What a non-blocking read end holds now.
    func readAvailable() -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            guard count > 0 else { return received }
            received += buffer[0..<count]
        }
    }
}

/// Reads a pipe on a thread of its own until end of stream, `chunk` bytes at a time.
private final class PipeReader: Sendable {
    private final class Received: Sendable {
        let bytes = Mutex<[UInt8]>([])
    }

    private let received: Received
    private let thread: pthread_t

    init(_ fd: CInt, chunk: Int = 65536) {
        let received = Received()
        self.received = received
        thread = DetachedThread.start {
            var buffer = [UInt8](repeating: 0, count: chunk)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                received.bytes.withLock { $0 += buffer[0..<count] }
            }
        }
    }

    /// Waits for end of stream (close the write end first) and returns everything read. Blocks:
    /// call it off the cooperative pool (`DetachedThread.run`), as every blocking call here is,
    /// so that a stalled test cannot starve the suites running beside it.
    func finish() -> [UInt8] {
        pthread_join(thread, nil)
        return received.bytes.withLock { $0 }
    }
}
