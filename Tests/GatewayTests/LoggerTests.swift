@testable import Gateway
import Testing

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
}
