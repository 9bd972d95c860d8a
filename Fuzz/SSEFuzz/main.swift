// libFuzzer target for ServerSentEventReader and ServerSentEventWriter. Every invariant
// violation traps, which libFuzzer reports as a crash with the input saved.
//
// Input: two bytes of limits, four bytes of split points, then the stream.
import ChatAPI

private struct Outcome: Equatable {
    var events: [ServerSentEvent] = []
    var error: ServerSentEventError?
    var comments = 0
}

/// How the stream is cut into the pieces fed to the reader.
private enum Feeding {
    case whole
    case pieces(ends: [Int])
    case byteByByte
}

/// Where ServerSentEventReader keeps its unfinished line and event among its stored
/// properties, found once by reflection since they are private.
private let bufferOffsets: (line: Int, data: Int) = {
    let labels = Mirror(reflecting: ServerSentEventReader()).children.map(\.label)
    guard let line = labels.firstIndex(of: "line"), let data = labels.firstIndex(of: "data") else {
        fatalError("ServerSentEventReader no longer has line and data buffers")
    }
    return (line, data)
}()

/// The bytes the reader holds on to between calls.
private func buffered(_ reader: ServerSentEventReader) -> (line: Int, data: Int) {
    let children = Mirror(reflecting: reader).children
    func count(at offset: Int) -> Int {
        guard let bytes = children[children.index(children.startIndex, offsetBy: offset)].value as? [UInt8] else {
            fatalError("ServerSentEventReader buffers are no longer byte arrays")
        }
        return bytes.count
    }
    return (count(at: bufferOffsets.line), count(at: bufferOffsets.data))
}

/// Feeds `stream` as `feeding` says, stops at the first error, then finishes the stream.
private func read(
    _ stream: ArraySlice<UInt8>,
    _ feeding: Feeding,
    checksBuffers: Bool = false,
    maximumLineLength: Int = ServerSentEventReader.defaultMaximumLineLength,
    maximumEventLength: Int = ServerSentEventReader.defaultMaximumEventLength
) -> Outcome {
    var reader = ServerSentEventReader(maximumLineLength: maximumLineLength, maximumEventLength: maximumEventLength)
    var outcome = Outcome()
    func feed(_ piece: ArraySlice<UInt8>) -> Bool {
        do {
            outcome.events += try reader.feed(piece)
        } catch {
            outcome.error = error
            do {
                _ = try reader.feed(piece)
                fatalError("a failed reader read on")
            } catch let again {
                require(again == error, "a different error after an error")
            }
            return false
        }
        if checksBuffers {
            let (line, data) = buffered(reader)
            require(line <= reader.maximumLineLength, "line buffer over its limit")
            // Each data value is kept with the LF that joins it to the next.
            require(data <= reader.maximumEventLength + 1, "data buffer over its limit")
        }
        return true
    }
    switch feeding {
    case .whole:
        _ = feed(stream)
    case .pieces(let ends):
        var start = stream.startIndex
        for end in ends + [stream.endIndex] {
            guard feed(stream[start..<end]) else { break }
            start = end
        }
    case .byteByByte:
        for index in stream.indices {
            guard feed(stream[index..<index + 1]) else { break }
        }
    }
    if outcome.error != nil {
        require(reader.finish().isEmpty, "a failed reader finished with events")
    } else {
        outcome.events += reader.finish()
    }
    outcome.comments = reader.commentCount
    let fresh = reader.finish()
    require(fresh.isEmpty, "a finished reader kept an event")
    return outcome
}

/// What any event read from any stream looks like.
private func check(_ event: ServerSentEvent) {
    require(!event.data.utf8.contains(UInt8(ascii: "\r")), "CR in data")
    if let type = event.event {
        require(!type.isEmpty && !type.utf8.contains { $0 == 0x0A || $0 == 0x0D }, "bad event type")
    }
    if let id = event.id {
        require(!id.isEmpty && !id.utf8.contains { $0 == 0x0A || $0 == 0x0D || $0 == 0 }, "bad event id")
    }
    if let retry = event.retry { require(retry >= 0, "negative retry") }
}

/// `bytes` with CRLF, LF and CR each turned into one LF.
private func normalizingLineBreaks(_ bytes: some Collection<UInt8>) -> [UInt8] {
    var result: [UInt8] = []
    var afterCR = false
    for byte in bytes {
        if byte == 0x0A, afterCR {
            afterCR = false
            continue
        }
        afterCR = byte == 0x0D
        result.append(byte == 0x0D ? 0x0A : byte)
    }
    return result
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 6 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let maximumLineLength = Int(input[0]) * 4
    let maximumEventLength = Int(input[1]) * 8
    let stream = input[6...]
    let ends = input[2..<6].map { stream.startIndex + stream.count * Int($0) / 255 }.sorted()

    // Within the default limits: however the stream is cut, the same events.
    let reference = read(stream, .whole)
    require(reference.error == nil, "an error within the default limits")
    reference.events.forEach(check)
    require(read(stream, .pieces(ends: ends)) == reference, "cutting the stream changed the events")

    // Within the input's limits: the same error however the stream is cut, never an event
    // the unbounded reader does not see, and without an error the same events. Feeding byte
    // by byte (every cut at once) is done here only: with limits the stream stays within,
    // it is the check above at every cut.
    let feedings: [Feeding] =
        stream.count <= 512 ? [.whole, .pieces(ends: ends), .byteByByte] : [.whole, .pieces(ends: ends)]
    // Reflection is slow: the buffers are checked after each piece of the cut feeding only.
    let small = feedings.map {
        var checksBuffers = false
        if case .pieces = $0 { checksBuffers = true }
        return read(
            stream, $0, checksBuffers: checksBuffers,
            maximumLineLength: maximumLineLength, maximumEventLength: maximumEventLength
        )
    }
    for outcome in small {
        require(outcome.error == small[0].error, "cutting the stream changed the error")
        require(reference.events.starts(with: outcome.events), "an event the unbounded reader does not see")
        if outcome.error == nil {
            // At the end of the stream a last event over the bounds is dropped, not thrown.
            require(reference.events.count - outcome.events.count <= 1, "events lost without an error")
            require(outcome == small[0], "cutting the stream changed the events")
        }
    }
    // One feed that throws loses the events completed in it.
    if small[0].error != nil { require(small[0].events.isEmpty, "events kept from a throwing feed") }

    // What was read, written back, reads the same. The writer has no retry field, and an
    // empty id resets the last event id where the event had none.
    var written: [UInt8] = []
    for event in reference.events {
        written += ServerSentEventWriter.event(name: event.event, data: event.data, id: event.id ?? "")
    }
    let reread = read(written[...], .whole)
    let withoutRetry = reference.events.map { ServerSentEvent(event: $0.event, data: $0.data, id: $0.id) }
    require(reread.error == nil && reread.events == withoutRetry, "events do not round-trip through the writer")

    // Any name, data and id, split from the stream at 0xFF bytes, round-trip as documented.
    let parts = stream.split(separator: 0xFF, maxSplits: 2, omittingEmptySubsequences: false)
    let name = String(decoding: parts[0], as: UTF8.self)
    let text = String(decoding: parts.count > 1 ? parts[1] : [], as: UTF8.self)
    let id = parts.count > 2 ? String(decoding: parts[2], as: UTF8.self) : nil
    let block = ServerSentEventWriter.event(name: name, data: text, id: id)
    let cleanName = String(decoding: name.utf8.filter { $0 != 0x0A && $0 != 0x0D }, as: UTF8.self)
    let cleanID = id.map { String(decoding: $0.utf8.filter { $0 != 0x0A && $0 != 0x0D && $0 != 0 }, as: UTF8.self) }
    let expected = ServerSentEvent(
        event: cleanName.isEmpty ? nil : cleanName,
        data: String(decoding: normalizingLineBreaks(text.utf8), as: UTF8.self),
        id: cleanID.flatMap { $0.isEmpty ? nil : $0 }
    )
    let single = read(block[...], .whole)
    require(single.error == nil && single.events == [expected], "a written event does not read back")
    // A comment is one comment line per line of its text, and no event.
    let comment = read(ServerSentEventWriter.comment(text)[...], .whole)
    let lines = normalizingLineBreaks(text.utf8).count { $0 == 0x0A } + 1
    require(comment.events.isEmpty && comment.comments == lines, "a written comment does not read back")
    return 0
}
