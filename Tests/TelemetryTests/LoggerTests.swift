import JSON
import Testing

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

    @Test("writes JSON with escaped strings and log values that cannot break a line")
    func escaping() {
        var writer = JSONWriter()
        writer.object {
            $0.field("s", "a\"b\\c\nd\u{1}")
            $0.field("n", 3)
            $0.nullField("z")
            $0.field("ms", milliseconds: 1.23456)
        }
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"{"s":"a\"b\\c\nd\u0001","n":3,"z":null,"ms":1.235}"#)
        for value in [0, 7, 10, 99, 100, 65_536, -3, -100, Int.max, Int.min] {
            var numbers = JSONWriter()
            numbers.object {
                $0.field("n", value)
                $0.field("m", Optional(value))
                $0.field("z", Int?.none)
            }
            #expect(String(decoding: numbers.bytes, as: UTF8.self) == #"{"n":\#(value),"m":\#(value),"z":null}"#)
        }
        var escapes = JSONWriter()
        escapes.object { $0.field("e", "\r\t\u{1F}\u{7F}\u{0}x\"\\") }
        #expect(String(decoding: escapes.bytes, as: UTF8.self) == #"{"e":"\r\t\u001f\u007f\u0000x\"\\"}"#)
        #expect(Logger.textValue("plain") == "plain")
        #expect(Logger.textValue("two words\nnext=line") == #""two words\nnext=line""#)
        #expect(
            JSONWriter.decimal(0.0004) == "0" && JSONWriter.decimal(12) == "12" && JSONWriter.decimal(0.05) == "0.05")
        #expect(
            JSONWriter.decimal(-1) == "0" && JSONWriter.decimal(.nan) == "0" && JSONWriter.decimal(.infinity) == "0")
        #expect(JSONWriter.decimal(1e300) == "9000000000000000")
        // Against the plain definition: thousandths rounded, trailing zeros of the fraction dropped.
        for thousandths in Array(0...2_100) + [9_999, 10_001, 123_456_789] {
            let value = Double(thousandths) / 1000
            var expected = String(thousandths / 1000)
            if thousandths % 1000 != 0 {
                var fraction = String(thousandths % 1000)
                while fraction.count < 3 { fraction = "0" + fraction }
                while fraction.hasSuffix("0") { fraction.removeLast() }
                expected += "." + fraction
            }
            #expect(JSONWriter.decimal(value) == expected)
        }
    }

    @Test("a text line: the timestamp, the level, the event and each field in order, values escaped")
    func textLine() throws {
        let sink = LogSink.memory()
        let logger = Logger(level: .info, format: .text, sink: sink)
        logger.log(
            .warning, "upstream_failure",
            [
                ("request_id", .string("R1")), ("skipped", nil), ("status", .int(-502)),
                ("upstream_ms", .milliseconds(12.5)), ("retry", .bool(true)), ("failure", .string("said \"no\"\n")),
                ("empty", .string("")), ("model", .string("مدل")),
            ])
        let line = try #require(sink.lines.first)
        // 2026-12-07T03:40:00.123Z: 24 characters, digits where digits go.
        let timestamp = Array(line.utf8.prefix(24))
        let shape = Array("dddd-dd-ddTdd:dd:dd.dddZ".utf8)
        #expect(timestamp.count == 24)
        for (byte, expected) in zip(timestamp, shape) {
            if expected == UInt8(ascii: "d") {
                #expect((UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), "\(line)")
            } else {
                #expect(byte == expected, "\(line)")
            }
        }
        let expected =
            #" WARNING upstream_failure request_id=R1 status=-502 upstream_ms=12.5 retry=true"#
            + #" failure="said \"no\"\n" empty="" model=مدل"#
        #expect(line.dropFirst(24) == expected)
    }

    @Test("timestamps: ISO 8601 in UTC with milliseconds, padded, a year past 9999 whole")
    func timestamps() {
        #expect(Timestamp.iso8601(milliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.iso8601(milliseconds: 1_764_417_600_123) == "2025-11-29T12:00:00.123Z")
        #expect(Timestamp.iso8601(milliseconds: 1_000_000_000_007) == "2001-09-09T01:46:40.007Z")
        #expect(Timestamp.iso8601(milliseconds: -1) == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp.iso8601(milliseconds: 253_402_300_800_000) == "10000-01-01T00:00:00.000Z")
        let now = Timestamp.realtime()
        var bytes: [UInt8] = Array("x".utf8)
        Timestamp.appendISO8601(now: now, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "x" + Timestamp.iso8601(now: now))
    }

    @Test(
        "a line written field by field is the line a list of fields gives, as text and as JSON",
        arguments: [
            Logger.Format.text, .json,
        ])
    func writtenInPlace(format: Logger.Format) throws {
        let sink = LogSink.memory()
        let logger = Logger(level: .info, format: format, sink: sink)
        logger.log(
            .info, "request",
            [
                ("request_id", .string("R1")), ("user_id", nil), ("status", .int(200)),
                ("path", .string("/api/\"x\"\n")), ("total_ms", .milliseconds(1.25)),
            ])
        logger.log(.info, "request") { line in
            line.field("request_id", "R1")
            line.field("user_id", nil as String?)
            line.field("status", 200)
            line.field("path", "/api/\"x\"\n")
            line.field("total_ms", milliseconds: 1.25)
        }
        #expect(sink.lines.count == 2)
        // Past the timestamp, which the two lines took a moment apart.
        let lines = sink.lines.map { $0.replacing(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/, with: "TS") }
        #expect(lines[0] == lines[1])
        if format == .json {
            let object = try JSONValue.parse(Array(sink.lines[1].utf8))
            #expect(object["level"]?.stringValue == "info")
            #expect(object["event"]?.stringValue == "request")
            #expect(object["path"]?.stringValue == "/api/\"x\"\n")
            #expect(object["status"]?.intValue == 200)
            #expect(object["user_id"] == nil)
            #expect(lines[1].hasPrefix(#"{"ts":"TS","level":"info","event":"request","request_id":"R1","status":200"#))
        } else {
            #expect(lines[1] == #"TS INFO request request_id=R1 status=200 path="/api/\"x\"\n" total_ms=1.25"#)
        }
    }
}
