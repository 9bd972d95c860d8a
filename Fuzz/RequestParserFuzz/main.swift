// libFuzzer target for RequestParser. Built together with Sources/HTTP1/*.swift into one
// module by Fuzz/run.sh, so it can see internal API. Every invariant violation traps, which
// libFuzzer reports as a crash with the input saved.

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

/// Feeds `pieces` one after the other, drains events after each, and checks the invariants
/// that hold for any input.
private func run(_ pieces: [UnsafeRawBufferPointer], limits: RequestParser.Limits) -> Outcome {
    var parser = RequestParser(limits: limits)
    var outcome = Outcome()
    var framing: BodyFraming?
    var bodyBytes = 0
    var total = 0
    for piece in pieces {
        parser.append(piece)
        total += piece.count
        require(parser.bufferedByteCount <= total, "buffered more than received")
        while true {
            let event: RequestParser.Event?
            do {
                event = try parser.next()
            } catch {
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
                return outcome
            }
            guard let event else { break }
            switch event {
            case .head(let head):
                require(framing == nil, "head inside a request")
                check(head)
                framing = head.framing
                bodyBytes = 0
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
                if case .body(let previous)? = outcome.events.last {
                    outcome.events[outcome.events.count - 1] = .body(previous + bytes)
                } else {
                    outcome.events.append(event)
                }
            case .end:
                switch framing {
                case .contentLength(let length)?: require(bodyBytes == length, "short body")
                case .none?: require(bodyBytes == 0, "body without framing")
                case .chunked?: break
                case nil: fatalError("end outside a request")
                }
                framing = nil
                outcome.events.append(event)
            }
        }
    }
    return outcome
}

/// Checks what a head promises: a token method, a path, a supported version, one Host for
/// HTTP/1.1, never both framings, and no line breaks or NUL in any field.
private func check(_ head: RequestHead) {
    require(!head.method.rawValue.isEmpty && head.method.rawValue.utf8.allSatisfy(ASCII.isTokenChar))
    require(head.method != .CONNECT)
    require(head.path == "*" ? head.method == .OPTIONS : head.path.hasPrefix("/"))
    require(head.version == .http1_1 || head.version == .http1_0)
    let hosts = head.headers.values("host").count
    require(head.version == .http1_1 ? hosts == 1 : hosts <= 1)
    require(!(head.headers.contains("content-length") && head.headers.contains("transfer-encoding")))
    for field in head.headers {
        require(!field.name.isEmpty && field.name.utf8.allSatisfy(ASCII.isTokenChar))
        require(!field.value.utf8.contains { $0 == 0 || $0 == ASCII.cr || $0 == ASCII.lf })
    }
    switch head.framing {
    case .chunked: require(head.headers.values("transfer-encoding").count == 1)
    case .contentLength(let length):
        require(length >= 0 && head.headers.values("content-length") == [String(length)])
    case .none: require(!head.headers.contains("content-length") && !head.headers.contains("transfer-encoding"))
    }
}

/// Traps with `message` when `condition` is false. Unlike `precondition`, the message and
/// line survive `-O`, so libFuzzer's log says which invariant broke.
private func require(
    _ condition: Bool,
    _ message: @autoclosure () -> String = "invariant violated",
    file: StaticString = #fileID,
    line: UInt = #line
) {
    if !condition { fatalError(message(), file: file, line: line) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    guard let first = input.first else { return 0 }
    // The first byte picks where to split the input in two.
    let split = size * Int(first) / 255
    let halves = [UnsafeRawBufferPointer(rebasing: input[..<split]), UnsafeRawBufferPointer(rebasing: input[split...])]
    for limits in [RequestParser.Limits(), smallLimits] {
        let whole = run([input], limits: limits)
        require(run(halves, limits: limits) == whole, "splitting the input changed the outcome")
        if size <= 512 {
            let bytes = (0..<size).map { UnsafeRawBufferPointer(rebasing: input[$0..<$0 + 1]) }
            require(run(bytes, limits: limits) == whole, "feeding byte by byte changed the outcome")
        }
    }
    return 0
}
