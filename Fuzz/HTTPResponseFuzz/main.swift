// libFuzzer target for ResponseReader, the reader of what a plain-http upstream answers.
// Every invariant violation traps, which libFuzzer reports as a crash with the input saved.
//
// Input: one byte of settings (bit 0: the request was HEAD; bits 1–2: the body limit, 0, 16,
// 4,096 or 16 MiB), four bytes of split points, then the bytes the upstream sent.
@testable import HTTPClient

private struct Outcome: Equatable {
    var status = 0
    var headComplete = false
    var fields: [String] = []
    var body: [UInt8] = []
    var ended = false
    var endsAtClose = false
    var keepAlive = false
    /// Bytes after the response's end, which the connection would not reuse.
    var trailing = 0
    var error: HTTPClientError.Kind?
}

/// Feeds `bytes` in pieces ending at `ends` (sorted, each within the input), the way the
/// connection does: what a call left unread is offered again with the next piece.
private func read(_ bytes: ArraySlice<UInt8>, ends: [Int], headRequest: Bool, limit: Int) -> Outcome {
    let sink = ResponseSink(streaming: false, maxBodyBytes: limit, highWatermark: 1 << 20)
    var reader = ResponseReader(headRequest: headRequest)
    var outcome = Outcome()
    var pending: [UInt8] = []
    var start = bytes.startIndex
    for end in ends + [bytes.endIndex] where end >= start {
        pending.append(contentsOf: bytes[start..<end])
        start = end
        do throws(HTTPClientError) {
            let result = pending.withUnsafeBytes { buffer in
                Result { () throws(HTTPClientError) in try reader.read(buffer, into: sink) }
            }
            let step = try result.get()
            require(step.consumed >= 0 && step.consumed <= pending.count, "consumed past what was offered")
            if step.ended {
                outcome.ended = true
                outcome.trailing = pending.count - step.consumed + (bytes.endIndex - start)
                break
            }
            pending.removeFirst(step.consumed)
            // An unfinished line is all that is left: never more than the head's limit.
            require(pending.count <= ResponseReader.headLimit + 1, "kept more than a head's worth")
        } catch {
            outcome.error = error.kind
            break
        }
    }
    outcome.status = sink.status
    outcome.headComplete = sink.headComplete
    if outcome.error == nil {
        outcome.fields = sink.headComplete ? sink.receivedHead.headers.map { $0.name + ": " + $0.value } : []
        outcome.body = sink.receivedBody
        outcome.endsAtClose = reader.endsAtClose
        outcome.keepAlive = reader.keepAlive
    }
    if outcome.ended {
        require(sink.headComplete && sink.status >= 200, "ended without a final head")
        require(!outcome.endsAtClose, "ended, yet said to run until the close")
    }
    if outcome.keepAlive { require(!outcome.endsAtClose, "kept alive a body that runs to the close") }
    require(outcome.body.count <= limit, "took a body past its limit")
    return outcome
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 5 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let settings = input[0]
    let limits = [0, 16, 4096, 16 << 20]
    let limit = limits[Int(settings >> 1) & 3]
    let headRequest = settings & 1 == 1
    let bytes = input[5...]
    let cuts = input[1..<5].map { bytes.startIndex + Int($0) % (bytes.count + 1) }.sorted()

    let whole = read(bytes, ends: [], headRequest: headRequest, limit: limit)
    let pieces = read(bytes, ends: cuts, headRequest: headRequest, limit: limit)
    require(whole == pieces, "pieces read otherwise than the whole: \(whole) against \(pieces)")
    if bytes.count <= 2048 {
        let byteByByte = read(bytes, ends: Array(bytes.indices), headRequest: headRequest, limit: limit)
        require(whole == byteByByte, "byte by byte read otherwise than the whole")
    }
    return 0
}
