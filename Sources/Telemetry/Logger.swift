import EventLoop
import JSON
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One-line-per-event logging, as text (`key=value`) or JSON (`LOG_FORMAT=json`).
///
/// Callers pass only what may be logged: never a key, a token, an `Authorization` header,
/// user text or model output. Values are escaped so a value cannot start a new line.
package struct Logger: Sendable {
    package enum Level: Int, Comparable, Sendable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical

        package init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
            self = level
        }

        package var name: String {
            switch self {
            case .trace: return "trace"
            case .debug: return "debug"
            case .info: return "info"
            case .notice: return "notice"
            case .warning: return "warning"
            case .error: return "error"
            case .critical: return "critical"
            }
        }

        /// The name as a text line shows it (`INFO`).
        var upperName: StaticString {
            switch self {
            case .trace: return "TRACE"
            case .debug: return "DEBUG"
            case .info: return "INFO"
            case .notice: return "NOTICE"
            case .warning: return "WARNING"
            case .error: return "ERROR"
            case .critical: return "CRITICAL"
            }
        }

        package static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    package enum Format: String, Sendable {
        case text, json
    }

    /// A field value.
    package enum Value: Sendable, Equatable {
        case string(String)
        case int(Int)
        case milliseconds(Double)
        case bool(Bool)
    }

    package let level: Level
    package let format: Format
    private let sink: LogSink

    package init(level: Level = .info, format: Format = .text, sink: LogSink = .standardError) {
        self.level = level
        self.format = format
        self.sink = sink
    }

    /// Writes one event at `level` with its fields in order; fields with nil values are left out.
    /// The fields are built only when the event is written: an access log line that the level
    /// leaves out costs nothing per request.
    package func log(_ level: Level, _ event: String, _ fields: @autoclosure () -> [(String, Value?)] = []) {
        log(level, event) { line in
            for (key, value) in fields() {
                var key = key
                key.withUTF8 { key in
                    switch value {
                    case .string(let text): line.field(key, text)
                    case .int(let number): line.field(key, number)
                    case .milliseconds(let ms): line.field(key, milliseconds: ms)
                    case .bool(let flag): line.field(key, flag)
                    case nil: break
                    }
                }
            }
        }
    }

    /// Writes one event at `level` whose fields `write` adds to its line in order, straight
    /// into the line's bytes (the access log's way: no list of fields is built). `write` runs
    /// only when the level lets the event through.
    package func log(_ level: Level, _ event: String, write: (inout LogLine) -> Void) {
        guard level >= self.level else { return }
        var line = LogLine(format: format, level: level, event: event)
        write(&line)
        sink.write(line.finished())
    }

    /// Waits until the lines logged before the call have been written; see ``LogSink/flush(timeout:)``.
    @discardableResult
    package func flush(timeout: Duration = .seconds(2)) -> Bool { sink.flush(timeout: timeout) }

    package func info(_ event: String, _ fields: [(String, Value?)] = []) { log(.info, event, fields) }
    package func warning(_ event: String, _ fields: [(String, Value?)] = []) { log(.warning, event, fields) }
    package func error(_ event: String, _ fields: [(String, Value?)] = []) { log(.error, event, fields) }

    /// Bare when safe, otherwise quoted with `"`, `\` and control characters escaped.
    static func textValue(_ value: String) -> String {
        var bytes: [UInt8] = []
        appendTextValue(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``textValue(_:)`` of `value` to `bytes`.
    static func appendTextValue(_ value: String, to bytes: inout [UInt8]) {
        var value = value
        let plain = value.withUTF8 { utf8 in
            guard !utf8.isEmpty, utf8.allSatisfy({ $0 > 0x20 && $0 != 0x22 && $0 != 0x5C && $0 != 0x3D && $0 != 0x7F })
            else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if plain { return }
        bytes.append(UInt8(ascii: "\""))
        JSONWriter.appendStringContents(of: value, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    private static func appendUTF8(_ text: String, to bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }
}

/// One log line being written, as text (`ts LEVEL event key=value…`) or as a JSON object.
/// Values are escaped so that none can start a new line.
package struct LogLine {
    private var bytes: [UInt8] = []
    private let format: Logger.Format

    init(format: Logger.Format, level: Logger.Level, event: String) {
        self.format = format
        bytes.reserveCapacity(320)
        let now = Timestamp.realtime()
        switch format {
        case .text:
            Timestamp.appendISO8601(now: now, to: &bytes)
            bytes.append(0x20)
            level.upperName.withUTF8Buffer { bytes.append(contentsOf: $0) }
            bytes.append(0x20)
            var event = event
            event.withUTF8 { bytes.append(contentsOf: $0) }
        case .json:
            bytes.append(contentsOf: #"{"ts":""#.utf8)
            Timestamp.appendISO8601(now: now, to: &bytes)
            bytes.append(contentsOf: #"","level":""#.utf8)
            bytes.append(contentsOf: level.name.utf8)
            bytes.append(contentsOf: #"","event":""#.utf8)
            JSONWriter.appendStringContents(of: event, to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        }
    }

    /// A string field; nil leaves it out.
    package mutating func field(_ key: StaticString, _ value: String?) {
        guard let value else { return }
        key.withUTF8Buffer { field($0, value) }
    }

    /// A whole-number field; nil leaves it out.
    package mutating func field(_ key: StaticString, _ value: Int?) {
        guard let value else { return }
        key.withUTF8Buffer { field($0, value) }
    }

    /// A number with up to three decimals (milliseconds).
    package mutating func field(_ key: StaticString, milliseconds value: Double) {
        key.withUTF8Buffer { field($0, milliseconds: value) }
    }

    mutating func field(_ key: UnsafeBufferPointer<UInt8>, _ value: String) {
        self.key(key)
        switch format {
        case .text: Logger.appendTextValue(value, to: &bytes)
        case .json:
            bytes.append(UInt8(ascii: "\""))
            JSONWriter.appendStringContents(of: value, to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        }
    }

    mutating func field(_ key: UnsafeBufferPointer<UInt8>, _ value: Int) {
        self.key(key)
        JSONWriter.appendInteger(value, to: &bytes)
    }

    mutating func field(_ key: UnsafeBufferPointer<UInt8>, milliseconds value: Double) {
        self.key(key)
        JSONWriter.appendDecimal(value, to: &bytes)
    }

    mutating func field(_ key: UnsafeBufferPointer<UInt8>, _ value: Bool) {
        self.key(key)
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    /// ` key=` or `,"key":`; a key is the caller's own name, never escaped.
    private mutating func key(_ key: UnsafeBufferPointer<UInt8>) {
        switch format {
        case .text:
            bytes.append(0x20)
            bytes.append(contentsOf: key)
            bytes.append(UInt8(ascii: "="))
        case .json:
            bytes.append(contentsOf: #",""#.utf8)
            bytes.append(contentsOf: key)
            bytes.append(contentsOf: #"":"#.utf8)
        }
    }

    /// The line's bytes, closed and ending in a newline.
    consuming func finished() -> [UInt8] {
        if format == .json { bytes.append(UInt8(ascii: "}")) }
        bytes.append(0x0A)
        return bytes
    }
}

/// Where log lines go: standard error (default), standard output, another descriptor, or
/// memory (tests). A descriptor sink hands each line to a ``BatchedWriter``, whose own thread
/// writes it: logging never waits for the descriptor, lines are written whole, and a stalled
/// descriptor costs dropped lines rather than stalled loops. Call ``flush(timeout:)`` before
/// the process exits.
package final class LogSink: Sendable {
    private enum Target {
        case descriptor(BatchedWriter)
        case memory
    }
    private let target: Target
    private let captured = Mutex<[String]>([])

    private init(_ target: Target) { self.target = target }

    deinit {
        // Only sinks made by `descriptor(_:)` go away: without waiting here, the writer writes
        // what it holds and its thread ends on its own.
        if case .descriptor(let writer) = target { writer.shutdown(timeout: .zero) }
    }

    /// Standard error; its writer thread starts with the first use.
    package static let standardError = LogSink.descriptor(2)

    /// A sink that writes to `fd` through a writer thread of its own. The descriptor stays the
    /// caller's and must stay open while the sink lives; two sinks for one descriptor write
    /// independently, so share one sink per descriptor (as `standardError` is shared).
    package static func descriptor(_ fd: CInt) -> LogSink {
        LogSink(.descriptor(BatchedWriter(fileDescriptor: fd)))
    }

    /// A sink that keeps lines for inspection.
    package static func memory() -> LogSink { LogSink(.memory) }

    /// The lines a memory sink received.
    package var lines: [String] { captured.withLock { $0 } }

    /// Waits until the lines logged before the call have been written, for at most `timeout`
    /// so that a dead descriptor cannot hang exit; false if the time ran out.
    @discardableResult
    package func flush(timeout: Duration = .seconds(2)) -> Bool {
        switch target {
        case .descriptor(let writer): return writer.flush(timeout: timeout)
        case .memory: return true
        }
    }

    func write(_ line: [UInt8]) {
        switch target {
        case .descriptor(let writer):
            writer.append(line)
        case .memory:
            let text = String(decoding: line.dropLast(), as: UTF8.self)
            captured.withLock { $0.append(text) }
        }
    }
}
