/// Serialises response heads and chunked framing into byte buffers. Pure.
///
/// The encoder writes exactly the fields it is given (it adds no `Date`, `Content-Length`
/// or `Connection`). So that no value can split a response, CR, LF and NUL in the reason
/// phrase, field names and field values are written as spaces.
package enum ResponseEncoder {
    /// Appends `"HTTP/1.1 200 OK\r\n"`, one `"Name: value\r\n"` per field in order, and `"\r\n"`.
    ///
    /// The status code is written as a decimal number and should be in `100...599`.
    package static func writeHead(
        status: HTTPStatus,
        version: HTTPVersion,
        headers: HTTPHeaders,
        into buffer: inout [UInt8]
    ) {
        writeStatusLine(status: status, version: version, into: &buffer)
        for field in headers {
            writeField(name: field.name, value: field.value, into: &buffer)
        }
        writeEndOfHead(into: &buffer)
    }

    /// Appends the status line, `"HTTP/1.1 200 OK\r\n"`.
    package static func writeStatusLine(status: HTTPStatus, version: HTTPVersion, into buffer: inout [UInt8]) {
        buffer.append(contentsOf: "HTTP/".utf8)
        writeDecimal(version.major, into: &buffer)
        buffer.append(UInt8(ascii: "."))
        writeDecimal(version.minor, into: &buffer)
        buffer.append(ASCII.space)
        writeDecimal(status.code, into: &buffer)
        buffer.append(ASCII.space)
        writeSafe(status.reasonPhrase, into: &buffer)
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
    }

    /// Appends one field line, `"Name: value\r\n"`.
    package static func writeField(name: String, value: String, into buffer: inout [UInt8]) {
        writeSafe(name, into: &buffer)
        buffer.append(ASCII.colon)
        buffer.append(ASCII.space)
        writeSafe(value, into: &buffer)
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
    }

    /// Appends one field line with a decimal value, `"Content-Length: 42\r\n"`.
    package static func writeField(name: String, value: Int, into buffer: inout [UInt8]) {
        writeSafe(name, into: &buffer)
        buffer.append(ASCII.colon)
        buffer.append(ASCII.space)
        writeDecimal(value, into: &buffer)
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
    }

    /// Appends the empty line that ends a head.
    package static func writeEndOfHead(into buffer: inout [UInt8]) {
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
    }

    /// Appends one chunk: the size in lower-case hexadecimal, CRLF, the bytes, CRLF.
    /// An empty collection writes nothing, since a zero-size chunk would end the body.
    package static func writeChunk(_ bytes: some Collection<UInt8>, into buffer: inout [UInt8]) {
        let count = bytes.count
        guard count > 0 else { return }
        let digits = (Int.bitWidth - count.leadingZeroBitCount + 3) / 4
        for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
            let digit = UInt8((count >> shift) & 0xF)
            buffer.append(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
        }
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
        buffer.append(contentsOf: bytes)
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
    }

    /// Appends the last chunk with an empty trailer section: `"0\r\n\r\n"`.
    package static func writeLastChunk(into buffer: inout [UInt8]) {
        buffer.append(contentsOf: "0\r\n\r\n".utf8)
    }

    /// The digits of `value` (a minus sign first when negative), without building a string.
    static func writeDecimal(_ value: Int, into buffer: inout [UInt8]) {
        if value < 0 { buffer.append(UInt8(ascii: "-")) }
        let magnitude = value.magnitude
        var place: UInt = 1
        while place <= magnitude / 10 { place *= 10 }
        while place > 0 {
            buffer.append(UInt8(ascii: "0") + UInt8(magnitude / place % 10))
            place /= 10
        }
    }

    /// Appends the string's UTF-8 bytes with CR, LF and NUL replaced by spaces.
    private static func writeSafe(_ string: String, into buffer: inout [UInt8]) {
        let copied: Bool? = string.utf8.withContiguousStorageIfAvailable { bytes in
            // Fast path: one bulk copy when no byte needs replacing (the usual case).
            for byte in bytes where byte == ASCII.cr || byte == ASCII.lf || byte == 0 { return false }
            buffer.append(contentsOf: bytes)
            return true
        }
        if copied == true { return }
        for byte in string.utf8 {
            buffer.append(byte == ASCII.cr || byte == ASCII.lf || byte == 0 ? ASCII.space : byte)
        }
    }
}
