import Testing

@testable import Gateway
@testable import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Logger")
struct LoggerTests {
    @Test("builds an event's fields only when its level is written")
    func fieldsBuiltOnlyWhenWritten() {
        let sink = LogSink.memory()
        let logger = Logger(level: .warning, format: .json, sink: sink)
        var built = 0
        func fields() -> [(String, Logger.Value?)] {
            built += 1
            return [("request_id", .string("R1")), ("status", .int(502)), ("code", nil)]
        }

        logger.log(.info, "request", fields())
        #expect(built == 0)
        #expect(sink.lines.isEmpty)

        logger.log(.warning, "upstream_failure", fields())
        #expect(built == 1)
        #expect(sink.lines.count == 1)
        let line = sink.lines.first ?? ""
        #expect(line.contains(#""event":"upstream_failure""#))
        #expect(line.contains(#""request_id":"R1","status":502"#))
        #expect(!line.contains("code"))
    }

    @Test("writes whole lines to a descriptor, all readable once flush returns")
    func descriptorSinkFlushes() throws {
        var ends: [CInt] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        let logger = Logger(level: .info, format: .text, sink: .descriptor(ends[1]))
        for number in 0..<50 { logger.info("request", [("number", .int(number)), ("route", .string("a b"))]) }
        #expect(logger.flush())

        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            received += buffer[0..<count]
        }
        let lines = String(decoding: received, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 51, "50 lines, each ending in a newline")
        for (number, line) in lines.dropLast().enumerated() {
            #expect(line.hasSuffix(#" INFO request number=\#(number) route="a b""#), "\(line)")
        }
    }
}
