@testable import HTTP1

/// What a parser made of a byte stream: its events, with consecutive body events merged so
/// that different splits of the same bytes compare equal, and the error it stopped on.
struct ParseOutcome: Equatable, CustomStringConvertible {
    var events: [RequestParser.Event] = []
    var error: HTTPParseError?

    var heads: [RequestHead] {
        events.compactMap { if case .head(let head) = $0 { head } else { nil } }
    }

    var bodies: [[UInt8]] {
        var result: [[UInt8]] = []
        var current: [UInt8]?
        for event in events {
            switch event {
            case .head: current = []
            case .body(let bytes): current?.append(contentsOf: bytes)
            case .end:
                result.append(current ?? [])
                current = nil
            }
        }
        return result
    }

    var description: String {
        let rendered = events.map { event in
            switch event {
            case .head(let head): "head(\(head.method) \(head.target) \(head.version) \(head.framing))"
            case .body(let bytes): "body(\(bytes.count) bytes)"
            case .end: "end"
            }
        }
        return "\(rendered) error: \(error.map(String.init(describing:)) ?? "none")"
    }
}

enum ParserHarness {
    /// Feeds the pieces one after the other, draining events after each, and returns the outcome.
    /// Also checks the parser's invariants: a body event is never empty, and after an error
    /// every later call throws the same error.
    static func parse(_ pieces: [[UInt8]], limits: RequestParser.Limits = .init()) -> ParseOutcome {
        var parser = RequestParser(limits: limits)
        var outcome = ParseOutcome()
        for piece in pieces {
            parser.append(piece)
            do {
                while let event = try parser.next() {
                    if case .body(let bytes) = event {
                        precondition(!bytes.isEmpty, "empty body event")
                        if case .body(let previous)? = outcome.events.last {
                            outcome.events[outcome.events.count - 1] = .body(previous + bytes)
                            continue
                        }
                    }
                    outcome.events.append(event)
                }
            } catch {
                outcome.error = error
                parser.append(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
                for _ in 0..<2 {
                    do {
                        _ = try parser.next()
                        preconditionFailure("a failed parser must keep failing")
                    } catch let again {
                        precondition(again == error, "a failed parser must throw the same error")
                    }
                }
                return outcome
            }
        }
        return outcome
    }

    /// Parses the bytes in one piece.
    static func parse(_ bytes: [UInt8], limits: RequestParser.Limits = .init()) -> ParseOutcome {
        parse([bytes], limits: limits)
    }

    /// Parses the bytes split in two at `index`.
    static func parse(_ bytes: [UInt8], splitAt index: Int, limits: RequestParser.Limits = .init()) -> ParseOutcome {
        parse([Array(bytes[..<index]), Array(bytes[index...])], limits: limits)
    }

    /// Parses the bytes fed one at a time.
    static func parseByteByByte(_ bytes: [UInt8], limits: RequestParser.Limits = .init()) -> ParseOutcome {
        parse(bytes.map { [$0] }, limits: limits)
    }
}

extension Array where Element == UInt8 {
    /// The UTF-8 bytes of a string, for writing raw requests readably.
    init(raw string: String) {
        self = Array(string.utf8)
    }
}
