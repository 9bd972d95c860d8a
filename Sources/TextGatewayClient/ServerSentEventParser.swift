/// One server-sent event: its `event` name (`message` when none was given) and its data
/// lines joined by newlines.
struct ServerSentEvent: Sendable, Hashable {
    var name: String
    var data: String
}

/// Turns the bytes of a `text/event-stream` body, in pieces of any size, into events
/// (WHATWG's rules: lines end in LF, CRLF or CR; `:` starts a comment; a blank line ends an
/// event; `id` and `retry` are read past, a gateway stream never resumes).
struct ServerSentEventParser: Sendable {
    private var line: [UInt8] = []
    private var afterCR = false
    private var name = ""
    private var dataLines: [String] = []
    private var hasData = false

    /// The events `bytes` completes.
    mutating func feed(_ bytes: some Sequence<UInt8>) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if afterCR {
                afterCR = false
                if byte == 0x0A { continue }
            }
            switch byte {
            case 0x0A:
                if let event = endLine() { events.append(event) }
            case 0x0D:
                afterCR = true
                if let event = endLine() { events.append(event) }
            default:
                line.append(byte)
            }
        }
        return events
    }

    /// The event a body that ends without its blank line leaves, if any.
    mutating func finish() -> ServerSentEvent? {
        var last = line.isEmpty ? nil : endLine()
        if last == nil { last = endLine() }
        return last
    }

    private mutating func endLine() -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            defer {
                name = ""
                dataLines = []
                hasData = false
            }
            guard hasData else { return nil }
            return ServerSentEvent(name: name.isEmpty ? "message" : name, data: dataLines.joined(separator: "\n"))
        }
        if line.first == UInt8(ascii: ":") { return nil }
        let field: String
        var value: String
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            field = String(decoding: line[..<colon], as: UTF8.self)
            var start = line.index(after: colon)
            if start < line.endIndex, line[start] == UInt8(ascii: " ") { start = line.index(after: start) }
            value = String(decoding: line[start...], as: UTF8.self)
        } else {
            field = String(decoding: line, as: UTF8.self)
            value = ""
        }
        switch field {
        case "event": name = value
        case "data":
            dataLines.append(value)
            hasData = true
            value = ""
        default: break
        }
        return nil
    }
}
