// libFuzzer target for the `.env` parser, DotEnv.parse(bytes:). Every invariant violation
// traps, which libFuzzer reports as a crash with the input saved.
@testable import Gateway

/// Stands in for a secret wherever the input has a 0x01 byte. `%` can be neither in a key
/// nor in any fixed text of an error, so an error description holding it has echoed input
/// that is not a key.
private let marker = Array("%s3cr3t%".utf8)

/// Every `reason` a parse error can have, before ` for KEY`.
private let reasons: Set<String> = [
    "expected KEY=VALUE",
    "invalid key",
    "unterminated single-quoted value",
    "unterminated double-quoted value",
    "unexpected text after the closing quote",
    "value is not valid UTF-8",
    "line longer than \(DotEnv.maximumLineLength) bytes",
]

private let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

private struct Outcome: Equatable {
    var entries: [Entry] = []
    var error: DotEnvError?
}

private struct Entry: Equatable {
    var key: String
    var value: String
}

private func parse(_ bytes: [UInt8]) -> Outcome {
    do {
        return Outcome(entries: try DotEnv.parse(bytes: bytes).map { Entry(key: $0.key, value: $0.value) })
    } catch {
        return Outcome(error: error)
    }
}

/// `[A-Za-z_][A-Za-z0-9_.]*`, written out independently of the parser.
private func isValidKey(_ key: String) -> Bool {
    var first = true
    for byte in key.utf8 {
        let letter = (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
        let digit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
        let allowed = letter || byte == UInt8(ascii: "_") || (!first && (digit || byte == UInt8(ascii: ".")))
        if !allowed { return false }
        first = false
    }
    return !first
}

/// The lines the parser can count: each LF ends one, and text after the last LF is one more.
private func lineCount(_ bytes: [UInt8]) -> Int {
    let feeds = bytes.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
    return feeds + (bytes.last.map { $0 != UInt8(ascii: "\n") } ?? false ? 1 : 0)
}

/// Checks an error: a line within the input, a valid key if any, and a description made of
/// the location, a fixed reason and that key, so nothing else of the input.
private func check(_ error: DotEnvError, in bytes: [UInt8]) {
    require(error.path == nil, "a parse error with a path")
    guard let line = error.line else { fatalError("a parse error without a line") }
    require(line >= 1 && line <= lineCount(bytes), "error line \(line) outside the input")
    var reason = error.reason
    if let key = error.key {
        require(isValidKey(key), "error key is not a valid key")
        let suffix = " for \(key)"
        require(reason.hasSuffix(suffix), "reason does not end with the key")
        reason.removeLast(suffix.count)
    }
    require(reasons.contains(reason), "unknown reason: \(reason)")
    require(error.description == "line \(line): \(error.reason)", "unexpected description")
    require(!error.description.utf8.contains(UInt8(ascii: "%")), "the error echoes input")
}

/// The entries written back as `KEY="value"` lines, escaping what a double-quoted value
/// must not hold as is.
private func serialize(_ entries: [Entry]) -> [UInt8] {
    var bytes: [UInt8] = []
    for entry in entries {
        bytes += entry.key.utf8
        bytes += "=\"".utf8
        for byte in entry.value.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): bytes += "\\\\".utf8
            case UInt8(ascii: "\""): bytes += "\\\"".utf8
            case UInt8(ascii: "\n"): bytes += "\\n".utf8
            case UInt8(ascii: "\r"): bytes += "\\r".utf8
            default: bytes.append(byte)
            }
        }
        bytes += "\"\n".utf8
    }
    return bytes
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(size)
    for byte in UnsafeBufferPointer(start: data, count: size) {
        if byte == 0x01 { bytes += marker } else { bytes.append(byte) }
    }

    let outcome = parse(bytes)
    require(parse(bytes) == outcome, "parsing is not deterministic")

    if let error = outcome.error {
        check(error, in: bytes)
    } else {
        for entry in outcome.entries {
            require(isValidKey(entry.key), "invalid key returned")
        }
        // What was read, written back in one canonical form, reads the same.
        let again = parse(serialize(outcome.entries))
        require(again.error == nil && again.entries == outcome.entries, "entries do not round-trip")
        // The public entry point, as a dictionary, keeps the last value of a key.
        if let text = String(validating: bytes, as: UTF8.self) {
            var expected: [String: String] = [:]
            for entry in outcome.entries { expected[entry.key] = entry.value }
            require((try? DotEnv.parseDictionary(text)) == expected, "parseDictionary differs from parse")
        }
    }
    guard !bytes.starts(with: byteOrderMark) else { return 0 }
    // A blank line in front moves an error one line down and changes nothing else.
    let shifted = parse([UInt8(ascii: "\n")] + bytes)
    require(shifted.entries == outcome.entries, "a blank line in front changed the entries")
    switch (shifted.error, outcome.error) {
    case (nil, nil): break
    case (let moved?, let original?):
        require(
            moved.line == original.line.map { $0 + 1 } && moved.reason == original.reason,
            "a blank line in front changed the error")
    default: fatalError("a blank line in front changed whether the text parses")
    }
    // A byte order mark in front changes nothing.
    require(parse(byteOrderMark + bytes) == outcome, "a byte order mark changed the result")
    // Without CRs, LF and CRLF line ends read the same.
    if !bytes.contains(UInt8(ascii: "\r")) {
        var crlf: [UInt8] = []
        crlf.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            if byte == UInt8(ascii: "\n") { crlf.append(UInt8(ascii: "\r")) }
            crlf.append(byte)
        }
        require(parse(crlf) == outcome, "CRLF line ends changed the result")
    }
    return 0
}
