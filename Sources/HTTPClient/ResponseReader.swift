#if canImport(Glibc)
    import Glibc
#endif

/// Reads one HTTP/1.x response (RFC 9112) from a connection's bytes as they come, handing its
/// head lines and body to a ``ResponseSink``: interim (1xx) heads skipped, the body framed by
/// `Transfer-Encoding: chunked`, `Content-Length` or the connection's end, and whether the
/// connection may carry another request after it.
///
/// A response that cannot be read safely fails the request (``HTTPClientError/Kind/transport``):
/// no status line, a head over ``headLimit``, a `Content-Length` that is not one number, a
/// chunk size that is not one, a `101` that was never asked for.
struct ResponseReader {
    private enum Phase {
        case statusLine
        case fields
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkEnd
        case trailers
        case untilClose
        case done
    }

    /// What one call read.
    struct Step {
        /// Bytes used; the rest (an unfinished line) must be offered again with what follows.
        var consumed: Int
        /// The response is complete.
        var ended: Bool
    }

    /// The longest head taken (curl's limit too); a line-less flood fails the request.
    static let headLimit = 100 * 1024
    /// The longest chunk-size line taken, extensions included.
    static let chunkLineLimit = 4096

    private var phase = Phase.statusLine
    /// The request was `HEAD`: a response to it has no body, whatever its fields say.
    private let headRequest: Bool
    private var headBytes = 0
    private var contentLength: Int?
    private var lengthInvalid = false
    private var transferEncoded = false
    private var chunked = false
    private var closeAsked = false
    private var keepAliveAsked = false
    /// The connection may carry another request once this response ended.
    private(set) var keepAlive = false

    init(headRequest: Bool = false) {
        self.headRequest = headRequest
    }

    /// The body runs until the connection closes: the end of the connection is the end of the response.
    var endsAtClose: Bool {
        if case .untilClose = phase { return true }
        return false
    }

    /// Reads what `bytes` hold of the response.
    mutating func read(_ bytes: UnsafeRawBufferPointer, into sink: ResponseSink) throws(HTTPClientError) -> Step {
        guard let base = bytes.baseAddress else { return Step(consumed: 0, ended: isDone) }
        var index = 0
        while index < bytes.count {
            switch phase {
            case .statusLine, .fields, .trailers, .chunkSize, .chunkEnd:
                let left = bytes.count - index
                guard let found = memchr(base + index, 0x0A, left) else {
                    // Unfinished: the caller offers these bytes again with what follows.
                    try checkLine(left)
                    return Step(consumed: index, ended: false)
                }
                let end = UnsafeRawPointer(found) - base + 1
                try checkLine(end - index)
                let line = UnsafeRawBufferPointer(rebasing: bytes[index..<end])
                index = end
                try readLine(line, into: sink)
                if isDone { return Step(consumed: index, ended: true) }
            case .fixed(let remaining), .chunkData(let remaining):
                let count = min(remaining, bytes.count - index)
                guard sink.take(UnsafeRawBufferPointer(rebasing: bytes[index..<index + count])) else {
                    throw HTTPClientError(.responseTooLarge)
                }
                index += count
                if case .fixed = phase {
                    phase = remaining == count ? .done : .fixed(remaining: remaining - count)
                    if isDone { return Step(consumed: index, ended: true) }
                } else {
                    phase = remaining == count ? .chunkEnd : .chunkData(remaining: remaining - count)
                }
            case .untilClose:
                guard sink.take(UnsafeRawBufferPointer(rebasing: bytes[index...])) else {
                    throw HTTPClientError(.responseTooLarge)
                }
                index = bytes.count
            case .done:
                return Step(consumed: index, ended: true)
            }
        }
        return Step(consumed: index, ended: isDone)
    }

    private var isDone: Bool {
        if case .done = phase { return true }
        return false
    }

    /// Holds a line `count` bytes long (so far) to its phase's limit.
    private func checkLine(_ count: Int) throws(HTTPClientError) {
        switch phase {
        case .statusLine, .fields, .trailers:
            guard headBytes + count <= Self.headLimit else { throw Self.weird("response head too large") }
        default:
            guard count <= Self.chunkLineLimit else { throw Self.weird("chunk size line too long") }
        }
    }

    private mutating func readLine(_ line: UnsafeRawBufferPointer, into sink: ResponseSink) throws(HTTPClientError) {
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        let text = UnsafeRawBufferPointer(rebasing: line[0..<end])
        switch phase {
        case .statusLine:
            headBytes += line.count
            guard ResponseSink.isStatusLine(text), text.count >= 12, text[5] == UInt8(ascii: "1"),
                text[6] == UInt8(ascii: "."), ResponseSink.statusCode(ofStatusLine: text) >= 100
            else { throw Self.weird("not an HTTP/1.x status line") }
            sink.receiveHeaderLine(line)
            contentLength = nil
            lengthInvalid = false
            transferEncoded = false
            chunked = false
            closeAsked = false
            keepAliveAsked = false
            phase = .fields
        case .fields:
            headBytes += line.count
            if text.isEmpty {
                try endOfHead(line, into: sink)
            } else if text[0] == 0x20 || text[0] == 0x09 {
                // An obsolete folded line continues the field before it: left out (nothing
                // the client reads is sent folded).
            } else {
                noteFraming(text)
                sink.receiveHeaderLine(line)
            }
        case .trailers:
            headBytes += line.count
            if text.isEmpty { phase = .done }
        case .chunkSize:
            let size = try Self.chunkSize(text)
            phase = size == 0 ? .trailers : .chunkData(remaining: size)
        case .chunkEnd:
            guard text.isEmpty else { throw Self.weird("chunk not followed by a line end") }
            phase = .chunkSize
        default:
            break
        }
    }

    /// The empty line after the fields: an interim response's is skipped; a final one's
    /// starts its body, framed by what the fields said.
    private mutating func endOfHead(_ line: UnsafeRawBufferPointer, into sink: ResponseSink) throws(HTTPClientError) {
        let status = sink.status
        if status < 200 {
            guard status != 101 else { throw Self.weird("switching protocols was not asked for") }
            phase = .statusLine
            return
        }
        sink.receiveHeaderLine(line)
        keepAlive = !closeAsked && (sink.version.minor >= 1 || keepAliveAsked)
        if headRequest || status == 204 || status == 304 {
            phase = .done
        } else if transferEncoded {
            // A coding other than chunked last: the body runs to the connection's end (RFC 9112 §6.3).
            phase = chunked ? .chunkSize : .untilClose
        } else if lengthInvalid {
            throw Self.weird("invalid Content-Length")
        } else if let contentLength {
            phase = contentLength == 0 ? .done : .fixed(remaining: contentLength)
        } else {
            phase = .untilClose
        }
        if endsAtClose { keepAlive = false }
    }

    /// Notes what the fields that frame the body say: `Content-Length`, `Transfer-Encoding`, `Connection`.
    private mutating func noteFraming(_ text: UnsafeRawBufferPointer) {
        guard let base = text.baseAddress, let found = memchr(base, 0x3A, text.count) else { return }
        let colon = UnsafeRawPointer(found) - base
        let name = UnsafeRawBufferPointer(rebasing: text[0..<colon])
        let value = UnsafeRawBufferPointer(rebasing: text[(colon + 1)...])
        switch name.count {
        case 14 where ASCIIText.equalsLowercase(name, "content-length"):
            // Repeated values that agree (`5, 5`, or two fields) are one length; any other is invalid.
            for item in ASCIIText.listItems(value) {
                guard let length = ASCIIText.decimal(item), contentLength == nil || contentLength == length else {
                    lengthInvalid = true
                    return
                }
                contentLength = length
            }
        case 17 where ASCIIText.equalsLowercase(name, "transfer-encoding"):
            transferEncoded = true
            if let last = ASCIIText.listItems(value).last { chunked = ASCIIText.equalsLowercase(last, "chunked") }
        case 10 where ASCIIText.equalsLowercase(name, "connection"):
            for item in ASCIIText.listItems(value) {
                if ASCIIText.equalsLowercase(item, "close") { closeAsked = true }
                if ASCIIText.equalsLowercase(item, "keep-alive") { keepAliveAsked = true }
            }
        default:
            break
        }
    }

    /// A chunk-size line's size: hex digits, then extensions after `;` (ignored).
    private static func chunkSize(_ text: UnsafeRawBufferPointer) throws(HTTPClientError) -> Int {
        var size = 0
        var digits = 0
        for byte in text {
            let digit: Int
            switch byte {
            case 0x30...0x39: digit = Int(byte - 0x30)
            case 0x41...0x46: digit = Int(byte - 0x41 + 10)
            case 0x61...0x66: digit = Int(byte - 0x61 + 10)
            case UInt8(ascii: ";"), 0x20, 0x09:
                guard digits > 0 else { throw weird("invalid chunk size") }
                return size
            default: throw weird("invalid chunk size")
            }
            guard digits < 15 else { throw weird("chunk size too large") }
            size = size << 4 | digit
            digits += 1
        }
        guard digits > 0 else { throw weird("invalid chunk size") }
        return size
    }

    private static func weird(_ detail: String) -> HTTPClientError {
        HTTPClientError(.transport, "Weird server reply: \(detail)")
    }
}

/// Small readings of ASCII field text, on bytes where they lie.
enum ASCIIText {
    /// Whether `text` is `lowercase` in any case.
    static func equalsLowercase(_ text: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        guard text.count == lowercase.utf8CodeUnitCount else { return false }
        let wanted = lowercase.utf8Start
        for index in 0..<text.count {
            let byte = text[index]
            if (byte &- 0x41 < 26 ? byte | 0x20 : byte) != wanted[index] { return false }
        }
        return true
    }

    /// The items of a comma-separated field value, each without the spaces around it; empty items left out.
    static func listItems(_ value: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer] {
        var items: [UnsafeRawBufferPointer] = []
        var start = 0
        for index in 0...value.count where index == value.count || value[index] == UInt8(ascii: ",") {
            var low = start
            var high = index
            while low < high, value[low] == 0x20 || value[low] == 0x09 { low += 1 }
            while high > low, value[high - 1] == 0x20 || value[high - 1] == 0x09 { high -= 1 }
            if high > low { items.append(UnsafeRawBufferPointer(rebasing: value[low..<high])) }
            start = index + 1
        }
        return items
    }

    /// A whole decimal number of at most 15 digits; nil for anything else.
    static func decimal(_ text: UnsafeRawBufferPointer) -> Int? {
        guard !text.isEmpty, text.count <= 15 else { return nil }
        var value = 0
        for byte in text {
            let digit = byte &- 0x30
            guard digit < 10 else { return nil }
            value = value * 10 + Int(digit)
        }
        return value
    }
}
