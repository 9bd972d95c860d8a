#if canImport(Glibc)
    import Glibc
#endif

/// A request's head and body as the client's own connections send them: one buffer, sized
/// before it is written, sent with one `send`.
enum PlainRequest {
    /// `METHOD target HTTP/1.1`, `Host` (unless the request names its own), the request's
    /// fields in order (cleaned as ``HeaderLine`` cleans them; a field whose value is empty is
    /// left out, as curl leaves out its default for it), `Accept: */*` when none is given (as
    /// curl sends), `Content-Length` for a body (always for a POST), the empty line, the body.
    /// The request's own `Content-Length`, `Transfer-Encoding` and `Expect` are not sent: the
    /// body is always sent whole, with its length.
    ///
    /// A body of more than ``bodyApartBytes`` is not copied in: the caller writes it after the
    /// head, from the request's own bytes (an export of spans is hundreds of kilobytes).
    static func encode(_ request: HTTPClientRequest, target: PlainTarget) -> (bytes: [UInt8], bodyApart: Bool) {
        let whole = request.body ?? []
        let bodyApart = whole.count > bodyApartBytes
        let body = bodyApart ? [] : whole
        let sendsLength = request.body != nil || request.method == "POST"
        var hasHost = false
        var hasAccept = false
        var capacity = request.method.utf8.count + target.target.utf8.count + 12 + 2
        for field in request.headers {
            capacity += field.name.utf8.count + field.value.utf8.count + 4
            hasHost = hasHost || field.name.utf8.count == 4 && field.name.lowercased() == "host"
            hasAccept = hasAccept || field.name.utf8.count == 6 && field.name.lowercased() == "accept"
        }
        if !hasHost { capacity += 8 + target.hostField.utf8.count }
        if !hasAccept { capacity += 13 }
        if sendsLength { capacity += 18 + 20 }
        capacity += body.count
        let bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            guard let start = buffer.baseAddress else { return }
            var out = start
            func put(_ text: StaticString) {
                out.update(from: text.utf8Start, count: text.utf8CodeUnitCount)
                out += text.utf8CodeUnitCount
            }
            func put(_ text: String) {
                var text = text
                text.withUTF8 { bytes in
                    guard let base = bytes.baseAddress else { return }
                    out.update(from: base, count: bytes.count)
                    out += bytes.count
                }
            }
            put(request.method)
            put(" ")
            put(target.target)
            put(" HTTP/1.1\r\n")
            if !hasHost {
                put("Host: ")
                put(target.hostField)
                put("\r\n")
            }
            for field in request.headers {
                guard !HeaderLine.isSkipped(field.name), let end = HeaderLine.write(field, to: out, emptyValue: .omit)
                else { continue }
                out = end
                put("\r\n")
            }
            if !hasAccept { put("Accept: */*\r\n") }
            if sendsLength {
                put("Content-Length: ")
                put(String(whole.count))
                put("\r\n")
            }
            put("\r\n")
            body.withUnsafeBufferPointer { bytes in
                guard let base = bytes.baseAddress else { return }
                out.update(from: base, count: bytes.count)
                out += bytes.count
            }
            count = out - start
        }
        return (bytes, bodyApart)
    }

    static let bodyApartBytes = 16 * 1024
}

/// One header field written as a line: CR and LF dropped from the name and the value, and `:`
/// from the name, so a field can never start another line.
enum HeaderLine {
    /// What to write for a field whose value is empty (after cleaning).
    enum EmptyValue {
        /// `name:` (curl's way to remove its own default for the field).
        case bare
        /// Nothing.
        case omit
    }

    /// Fields the client frames itself, never taken from the request.
    static func isSkipped(_ name: String) -> Bool {
        switch name.utf8.count {
        case 6: name.lowercased() == "expect"
        case 14: name.lowercased() == "content-length"
        case 17: name.lowercased() == "transfer-encoding"
        default: false
        }
    }

    /// Writes `name: value` (or `name:`) at `out`, without a line end; returns where it ends,
    /// nil when nothing was written (an empty value with `.omit`, or an empty name).
    static func write(
        _ field: (name: String, value: String), to out: UnsafeMutablePointer<UInt8>, emptyValue: EmptyValue
    ) -> UnsafeMutablePointer<UInt8>? {
        var out = out
        let start = out
        var name = field.name
        var value = field.value
        name.withUTF8 { bytes in
            for byte in bytes where byte != 0x0D && byte != 0x0A && byte != UInt8(ascii: ":") {
                out.pointee = byte
                out += 1
            }
        }
        if out == start && emptyValue == .omit { return nil }
        out.pointee = UInt8(ascii: ":")
        out += 1
        let separator = out
        out += 1 // the space, kept only if some value byte follows
        value.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return }
            // Most values hold no line break: copied whole, not a byte at a time.
            if memchr(base, 0x0D, bytes.count) == nil && memchr(base, 0x0A, bytes.count) == nil {
                out.update(from: base, count: bytes.count)
                out += bytes.count
                return
            }
            for byte in bytes where byte != 0x0D && byte != 0x0A {
                out.pointee = byte
                out += 1
            }
        }
        if out == separator + 1 {
            if emptyValue == .omit { return nil }
            return separator
        }
        separator.pointee = UInt8(ascii: " ")
        return out
    }
}
