// libFuzzer target for RequestParser. Every invariant violation traps, which libFuzzer
// reports as a crash with the input saved.
//
// Fuzz/run.sh builds Sources/HTTP1 as its own module with coverage and `-enable-testing`,
// and this file without coverage: the harness's own comparisons would otherwise cost about
// as much as the parser's and add features that say nothing about the parser.
@testable import HTTP1

/// Limits small enough for the fuzzer to reach every limit check quickly.
private let smallLimits = RequestParser.Limits(
    maxRequestLineBytes: 64,
    maxHeaderBytes: 256,
    maxHeaderCount: 4,
    maxBodyBytes: 64
)

/// The events of one feeding, with consecutive body events merged, and the final error.
private struct Outcome: Equatable {
    var events: [RequestParser.Event] = []
    var error: HTTPParseError?
}

/// How the input is cut into the pieces fed to the parser.
private enum Feeding {
    case whole
    case split(at: Int)
    case byteByByte
}

/// One feeding of the input into a fresh parser, checking after every piece and event the
/// invariants that hold for any input.
private struct Run {
    let limits: RequestParser.Limits
    /// Whether to check each head's promises; the other feedings must give equal heads.
    let checksHeads: Bool
    var parser: RequestParser
    var outcome = Outcome()
    /// Body bytes not yet merged into `outcome.events`, so that merging stays linear.
    var pendingBody: [UInt8] = []
    var framing: BodyFraming?
    var bodyBytes = 0
    var total = 0

    init(limits: RequestParser.Limits, checksHeads: Bool) {
        self.limits = limits
        self.checksHeads = checksHeads
        parser = RequestParser(limits: limits)
    }

    /// Feeds one piece and drains its events; false once the parser has failed.
    mutating func feed(_ piece: UnsafeRawBufferPointer) -> Bool {
        parser.append(piece)
        total += piece.count
        require(parser.bufferedByteCount <= total, "buffered more than received")
        while true {
            let event: RequestParser.Event?
            do {
                event = try parser.next()
            } catch {
                fail(with: error, piece: piece)
                return false
            }
            guard let event else { return true }
            switch event {
            case .head(let head):
                require(framing == nil, "head inside a request")
                if checksHeads { check(head, limits: limits) }
                framing = head.framing
                bodyBytes = 0
                flushBody()
                outcome.events.append(event)
            case .body(let bytes):
                require(framing != nil, "body outside a request")
                require(!bytes.isEmpty, "empty body event")
                bodyBytes += bytes.count
                require(bodyBytes <= limits.maxBodyBytes, "body over the limit")
                if case .contentLength(let length)? = framing {
                    require(bodyBytes <= length, "body over its Content-Length")
                } else {
                    require(framing == .chunked, "body without framing")
                }
                pendingBody.append(contentsOf: bytes)
            case .end:
                switch framing {
                case .contentLength(let length)?: require(bodyBytes == length, "short body")
                case .none?: require(bodyBytes == 0, "body without framing")
                case .chunked?: break
                case nil: fatalError("end outside a request")
                }
                framing = nil
                flushBody()
                outcome.events.append(event)
            }
        }
    }

    /// A failed parser keeps failing the same way and buffers nothing more.
    private mutating func fail(with error: HTTPParseError, piece: UnsafeRawBufferPointer) {
        outcome.error = error
        require(!parser.isAwaitingRequest, "a failed parser awaits a request")
        for _ in 0..<2 {
            do {
                _ = try parser.next()
                fatalError("next() returned after an error")
            } catch let again {
                require(again == error, "a different error after an error")
            }
        }
        parser.append(piece)
        require(parser.bufferedByteCount == 0, "a failed parser buffers bytes")
        if case .bodyTooLarge = error.code, case .contentLength(let length)? = framing {
            require(length > limits.maxBodyBytes && bodyBytes == 0, "unexpected bodyTooLarge")
        }
    }

    private mutating func flushBody() {
        guard !pendingBody.isEmpty else { return }
        outcome.events.append(.body(pendingBody))
        pendingBody = []
    }

    mutating func finish() -> Outcome {
        flushBody()
        return outcome
    }
}

private func run(
    _ input: UnsafeRawBufferPointer,
    _ feeding: Feeding,
    limits: RequestParser.Limits,
    checksHeads: Bool = false
) -> Outcome {
    var run = Run(limits: limits, checksHeads: checksHeads)
    switch feeding {
    case .whole:
        _ = run.feed(input)
    case .split(let index):
        if run.feed(UnsafeRawBufferPointer(rebasing: input[..<index])) {
            _ = run.feed(UnsafeRawBufferPointer(rebasing: input[index...]))
        }
    case .byteByByte:
        for index in input.indices {
            guard run.feed(UnsafeRawBufferPointer(rebasing: input[index..<index + 1])) else { break }
        }
    }
    return run.finish()
}

/// Checks what a head promises: a token method, a target of visible ASCII without `#` whose
/// path and query are its parts, a supported version, one Host of host characters for
/// HTTP/1.1, never both framings, chunked only as one `chunked` field of HTTP/1.1, field
/// values trimmed and without control bytes but HTAB, and the request line and field count
/// within the limits.
private func check(_ head: RequestHead, limits: RequestParser.Limits) {
    require(!head.method.rawValue.isEmpty && head.method.rawValue.utf8.allSatisfy(ASCII.isTokenChar))
    require(head.method != .CONNECT)
    require(head.path == "*" ? head.method == .OPTIONS : head.path.hasPrefix("/"))
    require(head.version == .http1_1 || head.version == .http1_0)
    require(
        head.target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") },
        "a target byte outside visible ASCII, or #")
    // method SP target SP HTTP/x.y
    require(
        head.method.rawValue.utf8.count + head.target.utf8.count + 10 <= limits.maxRequestLineBytes,
        "a request line over its limit")
    let query = head.target.firstIndex(of: "?").map { String(head.target[head.target.index(after: $0)...]) }
    require(head.query == query, "the query is not what follows the target's first ?")
    if head.target.hasPrefix("/") {
        require(head.target == head.path + (query.map { "?" + $0 } ?? ""), "the path is not the target's")
    }
    let hosts = head.headers.values("host")
    require(head.version == .http1_1 ? hosts.count == 1 : hosts.count <= 1)
    require(hosts.allSatisfy { $0.utf8.allSatisfy(isHostByte) }, "a Host value with a byte no host has")
    require(!(head.headers.contains("content-length") && head.headers.contains("transfer-encoding")))
    require(head.headers.count <= limits.maxHeaderCount, "more fields than the limit")
    for field in head.headers {
        require(!field.name.isEmpty && field.name.utf8.allSatisfy(ASCII.isTokenChar))
        let value = Array(field.value.utf8)
        require(value.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }, "a control byte in a field value")
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        require(
            value.first.map(isBlank) != true && value.last.map(isBlank) != true,
            "a field value with whitespace at an end")
    }
    switch head.framing {
    case .chunked:
        let encodings = head.headers.values("transfer-encoding")
        require(encodings.count == 1 && encodings[0].lowercased() == "chunked", "chunked without one chunked field")
        require(head.version == .http1_1, "Transfer-Encoding in HTTP/1.0")
    case .contentLength(let length):
        require(length >= 0 && head.headers.values("content-length") == [String(length)])
    case .none: require(!head.headers.contains("content-length") && !head.headers.contains("transfer-encoding"))
    }
}

/// `uri-host [":" port]` bytes, written out: unreserved, sub-delims, `:`, `%`, `[` and `]`.
private func isHostByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"):
        return true
    default:
        return "-._~!$&'()*+,;=:%[]".utf8.contains(byte)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    guard let first = input.first else { return 0 }
    // The first byte picks where to split the input in two.
    let split = size * Int(first) / 255
    for limits in [RequestParser.Limits(), smallLimits] {
        // The whole feeding checks every head; the others must give the same outcome, so
        // the same heads.
        let whole = run(input, .whole, limits: limits, checksHeads: true)
        require(run(input, .split(at: split), limits: limits) == whole, "splitting the input changed the outcome")
        if size <= 512 {
            require(run(input, .byteByByte, limits: limits) == whole, "feeding byte by byte changed the outcome")
        }
    }
    return 0
}
