/// Builds `text/event-stream` bytes. Pure: each function returns the bytes of one complete
/// event or comment, ending in the blank line that dispatches it.
///
/// Whatever the input, the output is one well-formed block that ``ServerSentEventReader``
/// reads back as exactly the event given (with line breaks in `data` as `"\n"`):
/// - `data` is split at every line break (CRLF, LF or CR) into several `data:` lines;
/// - CR and LF are removed from an event name and from an id, and NUL from an id, since
///   they cannot be carried in those fields;
/// - every field is written as `name: value`, so a value starting with a space keeps it.
package enum ServerSentEventWriter {
    private static let lineFeed = UInt8(ascii: "\n")
    private static let carriageReturn = UInt8(ascii: "\r")

    /// One event: `event: name` (omitted when `name` is `nil` or empty after removing line
    /// breaks), `id: id` (when not `nil`), one `data:` line per line of `data`, then a blank
    /// line.
    package static func event(name: String?, data: String, id: String? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(data.utf8.count + 16)
        if var name {
            name.withUTF8 { name in
                // The usual name (`delta`, `done`) is written as it is; one with line breaks, without them.
                if !name.contains(where: { $0 == lineFeed || $0 == carriageReturn }) {
                    if !name.isEmpty { appendField("event", name, to: &bytes) }
                } else {
                    let cleanName = name.filter { $0 != lineFeed && $0 != carriageReturn }
                    if !cleanName.isEmpty { appendField("event", cleanName, to: &bytes) }
                }
            }
        }
        if let id {
            appendField("id", id.utf8.filter { $0 != lineFeed && $0 != carriageReturn && $0 != 0 }, to: &bytes)
        }
        forEachLine(of: data) { appendField("data", $0, to: &bytes) }
        bytes.append(lineFeed)
        return bytes
    }

    /// A comment, which readers ignore; used as a heartbeat (`comment("ping")` is
    /// `": ping\n\n"`). Each line of `text` becomes its own comment line.
    package static func comment(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 4)
        forEachLine(of: text) { appendField("", $0, to: &bytes) }
        bytes.append(lineFeed)
        return bytes
    }

    /// The terminator of an OpenAI stream: `data: [DONE]` and a blank line.
    package static func done() -> [UInt8] {
        Array("data: [DONE]\n\n".utf8)
    }

    private static func appendField(_ name: String, _ value: some Collection<UInt8>, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: name.utf8)
        bytes.append(UInt8(ascii: ":"))
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: value)
        bytes.append(lineFeed)
    }

    /// Calls `body` with each line of `text`, split at CRLF, LF or CR; an empty text is one
    /// empty line. Read where the text's bytes lie: a line is a slice of them, appended whole.
    private static func forEachLine(of text: String, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        var text = text
        text.withUTF8 { utf8 in
            var start = 0
            var index = 0
            while index < utf8.count {
                let byte = utf8[index]
                if byte == lineFeed || byte == carriageReturn {
                    body(UnsafeBufferPointer(rebasing: utf8[start..<index]))
                    index += 1
                    if byte == carriageReturn, index < utf8.count, utf8[index] == lineFeed { index += 1 }
                    start = index
                } else {
                    index += 1
                }
            }
            body(UnsafeBufferPointer(rebasing: utf8[start..<utf8.count]))
        }
    }
}
