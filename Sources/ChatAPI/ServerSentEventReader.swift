/// An incremental reader of `text/event-stream` bytes, following the WHATWG HTML
/// "event stream interpretation" rules. Pure: no I/O, no clock.
///
/// Feed bytes as they arrive, split anywhere; each call returns the events completed by
/// those bytes:
/// - lines end in CRLF, LF or CR, and a CR at the end of one feed followed by an LF at the
///   start of the next is one line break;
/// - a UTF-8 byte order mark at the very start of the stream is skipped (also when split);
/// - `data:` lines accumulate, joined with `"\n"`; one space after the colon is stripped;
///   a line without a colon is a field with an empty value;
/// - `event:`, `id:` (ignored if it contains NUL) and `retry:` (digits only) are read,
///   other fields are ignored;
/// - a line starting with `:` is a comment: it is counted in ``commentCount`` and ignored;
/// - a blank line dispatches the event, unless it has no `data:` line at all;
/// - bytes are decoded as UTF-8, invalid sequences becoming U+FFFD.
///
/// Memory is bounded: a line longer than ``maximumLineLength`` bytes, or an event whose
/// data is longer than ``maximumEventLength`` bytes, makes ``feed(_:)`` throw, and the
/// reader then stays failed until ``finish()``. Events completed earlier in the same
/// throwing call are lost.
///
/// **End of stream.** Unlike the WHATWG rules, which discard an event that is not
/// followed by a blank line, ``finish()`` treats the end of the stream as the end of the
/// last line and of the last event and dispatches it. Servers that close right after their
/// last `data:` line are thus read in full; a stream cut in the middle of a line yields a
/// partial event, which a consumer of JSON data detects because the JSON is incomplete.
package struct ServerSentEventReader: Sendable {
    /// The default ``maximumLineLength``: 1 MiB.
    package static let defaultMaximumLineLength = 1 << 20
    /// The default ``maximumEventLength``: 4 MiB.
    package static let defaultMaximumEventLength = 4 << 20

    /// The longest line accepted, in bytes, without its line break.
    package let maximumLineLength: Int
    /// The most `data:` bytes accepted in one event, counting the `"\n"` between lines.
    package let maximumEventLength: Int
    /// How many comment lines (`: ping`, heartbeats) have been read.
    package private(set) var commentCount = 0

    private enum ByteOrderMark {
        /// At the start of the stream, having matched this many bytes of the BOM.
        case pending(matched: Int)
        /// Past the start of the stream.
        case settled
    }

    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]
    private static let lineFeed = UInt8(ascii: "\n")
    private static let carriageReturn = UInt8(ascii: "\r")
    private static let colon = UInt8(ascii: ":")
    private static let space = UInt8(ascii: " ")
    /// A line buffer that grew beyond this is released rather than kept for reuse.
    private static let retainedCapacity = 16 * 1024

    private var byteOrderMark = ByteOrderMark.pending(matched: 0)
    /// The start of a line that has not ended yet.
    private var line: [UInt8] = []
    /// Whether the last byte seen was a CR, so that an LF right after it is skipped.
    private var skipsLineFeed = false
    /// The current event's `data:` values, each followed by LF; empty when it has none.
    private var data: [UInt8] = []
    private var eventType: String?
    private var lastEventID: String?
    private var retry: Int?
    private var failure: ServerSentEventError?

    /// Creates a reader with the given bounds (in bytes).
    package init(
        maximumLineLength: Int = ServerSentEventReader.defaultMaximumLineLength,
        maximumEventLength: Int = ServerSentEventReader.defaultMaximumEventLength
    ) {
        self.maximumLineLength = max(0, maximumLineLength)
        self.maximumEventLength = max(0, maximumEventLength)
    }

    /// Reads the next bytes of the stream and returns the events they complete.
    /// - Throws: ``ServerSentEventError/lineTooLong`` or
    ///   ``ServerSentEventError/eventTooLarge``; after that, every call throws the same error
    ///   until ``finish()``.
    package mutating func feed(_ bytes: some Collection<UInt8>) throws(ServerSentEventError) -> [ServerSentEvent] {
        if let failure { throw failure }
        // The parser works on one concrete type, so that it is fully optimised whatever
        // collection the caller has.
        let slice: ArraySlice<UInt8> =
            if let array = bytes as? [UInt8] {
                array[...]
            } else if let arraySlice = bytes as? ArraySlice<UInt8> {
                arraySlice
            } else {
                Array(bytes)[...]
            }
        var events: [ServerSentEvent] = []
        do {
            try consumeSkippingByteOrderMark(slice, into: &events)
        } catch {
            failure = error
            line = []
            data = []
            throw error
        }
        return events
    }

    /// Ends the stream: the last line and event, if unfinished, are treated as complete and
    /// the event is dispatched (see the type's documentation). The reader is then ready for a
    /// new stream, with the last event id cleared; ``commentCount`` keeps counting.
    ///
    /// A failed reader returns no events, as does a final line or event over the bounds.
    package mutating func finish() -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        if failure == nil {
            do throws(ServerSentEventError) {
                if case .pending(let matched) = byteOrderMark, matched > 0 {
                    byteOrderMark = .settled
                    try consume(Self.byteOrderMark[..<matched], into: &events)
                }
                if !line.isEmpty {
                    let last = line
                    line = []
                    try processLine(last[...], into: &events)
                }
                dispatch(into: &events)
            } catch {
                // Over the bounds at the very end: the partial event is dropped.
            }
        }
        let comments = commentCount
        self = ServerSentEventReader(maximumLineLength: maximumLineLength, maximumEventLength: maximumEventLength)
        commentCount = comments
        return events
    }

    private mutating func consumeSkippingByteOrderMark(
        _ bytes: ArraySlice<UInt8>,
        into events: inout [ServerSentEvent]
    ) throws(ServerSentEventError) {
        guard case .pending(var matched) = byteOrderMark else {
            try consume(bytes, into: &events)
            return
        }
        var index = bytes.startIndex
        while index != bytes.endIndex, matched < Self.byteOrderMark.count, bytes[index] == Self.byteOrderMark[matched] {
            matched += 1
            index = bytes.index(after: index)
        }
        if matched == Self.byteOrderMark.count {
            byteOrderMark = .settled
        } else if index == bytes.endIndex {
            byteOrderMark = .pending(matched: matched)
            return
        } else {
            // Not a BOM after all: the bytes taken for one are ordinary content.
            byteOrderMark = .settled
            try consume(Self.byteOrderMark[..<matched], into: &events)
        }
        try consume(bytes[index...], into: &events)
    }

    private mutating func consume(
        _ bytes: ArraySlice<UInt8>,
        into events: inout [ServerSentEvent]
    ) throws(ServerSentEventError) {
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if skipsLineFeed {
                skipsLineFeed = false
                if bytes[index] == Self.lineFeed {
                    index = bytes.index(after: index)
                    continue
                }
            }
            let rest = bytes[index...]
            guard let end = rest.firstIndex(where: { $0 == Self.lineFeed || $0 == Self.carriageReturn }) else {
                try appendToLine(rest)
                return
            }
            skipsLineFeed = bytes[end] == Self.carriageReturn
            if line.isEmpty {
                let whole = bytes[index..<end]
                guard whole.count <= maximumLineLength else { throw .lineTooLong }
                try processLine(whole, into: &events)
            } else {
                try appendToLine(bytes[index..<end])
                try processLine(line[...], into: &events)
                if line.capacity > Self.retainedCapacity {
                    line = []
                } else {
                    line.removeAll(keepingCapacity: true)
                }
            }
            index = bytes.index(after: end)
        }
    }

    private mutating func appendToLine(_ bytes: ArraySlice<UInt8>) throws(ServerSentEventError) {
        guard bytes.count <= maximumLineLength - line.count else { throw .lineTooLong }
        line.append(contentsOf: bytes)
    }

    private mutating func processLine(
        _ line: ArraySlice<UInt8>,
        into events: inout [ServerSentEvent]
    ) throws(ServerSentEventError) {
        guard let first = line.first else {
            dispatch(into: &events)
            return
        }
        if first == Self.colon {
            commentCount &+= 1
            return
        }
        let name: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
        if let colon = line.firstIndex(of: Self.colon) {
            name = line[..<colon]
            value = line[line.index(after: colon)...]
            if value.first == Self.space {
                value = value.dropFirst()
            }
        } else {
            name = line[...]
            value = line[line.endIndex...]
        }
        if name.elementsEqual("data".utf8) {
            guard value.count <= maximumEventLength - data.count else { throw .eventTooLarge }
            data.append(contentsOf: value)
            data.append(Self.lineFeed)
        } else if name.elementsEqual("event".utf8) {
            eventType = String(decoding: value, as: UTF8.self)
        } else if name.elementsEqual("id".utf8) {
            if !value.contains(0) {
                lastEventID = String(decoding: value, as: UTF8.self)
            }
        } else if name.elementsEqual("retry".utf8) {
            if !value.isEmpty, value.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                let milliseconds = Int(String(decoding: value, as: UTF8.self))
            {
                retry = milliseconds
            }
        }
    }

    /// Dispatches the event gathered so far, if it has data, and starts the next one.
    private mutating func dispatch(into events: inout [ServerSentEvent]) {
        defer {
            eventType = nil
            retry = nil
            if data.capacity > Self.retainedCapacity {
                data = []
            } else {
                data.removeAll(keepingCapacity: true)
            }
        }
        guard !data.isEmpty else { return }
        let type = eventType.flatMap { $0.isEmpty ? nil : $0 }
        let id = lastEventID.flatMap { $0.isEmpty ? nil : $0 }
        events.append(
            ServerSentEvent(event: type, data: String(decoding: data.dropLast(), as: UTF8.self), id: id, retry: retry)
        )
    }
}
