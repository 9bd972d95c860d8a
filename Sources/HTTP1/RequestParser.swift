#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An incremental, strict HTTP/1.1 request parser (RFC 9112). Pure: no I/O, no clock.
///
/// Feed it bytes as they arrive with ``append(_:)-(UnsafeRawBufferPointer)`` and call
/// ``next()`` until it returns `nil` (more bytes needed). Each request yields one
/// ``Event/head(_:)``, zero or more ``Event/body(_:)`` and one ``Event/end``; bytes after
/// the end belong to the next, pipelined, request.
///
/// The parser is strict so that nothing in front of the server can disagree with it about
/// where a request ends:
/// - every line must end in CRLF: a bare LF is ``HTTPParseError/bareLineFeed`` and a CR
///   not followed by LF is ``HTTPParseError/bareCarriageReturn``;
/// - up to 8 empty lines before a request line are skipped (RFC 9112 §2.2);
/// - `CONNECT` is rejected as ``HTTPParseError/invalidTarget`` (this server never tunnels);
/// - `Transfer-Encoding` must be a single field whose value is exactly `chunked`, never
///   with `Content-Length`, and never in an HTTP/1.0 request;
/// - several `Content-Length` values are accepted only when they are the same number;
/// - limits are enforced as bytes arrive, without waiting for a line to end.
///
/// After an error the parser stays failed: every later ``next()`` throws the same error and
/// appended bytes are dropped.
public struct RequestParser: Sendable {
    /// Size limits, each answered with its own status when exceeded.
    public struct Limits: Sendable, Hashable {
        /// Longest request line, without its CRLF. Exceeding it is a 414.
        public var maxRequestLineBytes: Int
        /// Largest header section: all field lines and the empty line that ends the
        /// section, with their CRLFs. Also applies to a chunked body's trailer section.
        /// Exceeding it is a 431.
        public var maxHeaderBytes: Int
        /// Most header fields (or trailer fields). Exceeding it is a 431.
        public var maxHeaderCount: Int
        /// Largest body, as declared by `Content-Length` or decoded from chunks. Exceeding
        /// it is a 413.
        public var maxBodyBytes: Int

        /// Creates limits. The parser treats a negative value as zero.
        public init(
            maxRequestLineBytes: Int = 8192,
            maxHeaderBytes: Int = 32768,
            maxHeaderCount: Int = 100,
            maxBodyBytes: Int = 1_048_576
        ) {
            self.maxRequestLineBytes = maxRequestLineBytes
            self.maxHeaderBytes = maxHeaderBytes
            self.maxHeaderCount = maxHeaderCount
            self.maxBodyBytes = maxBodyBytes
        }
    }

    /// What the parser found next in the byte stream.
    public enum Event: Sendable, Equatable {
        /// A complete, validated request head. Always the first event of a request.
        case head(RequestHead)
        /// Some body bytes, in order, never empty (chunked framing already removed).
        case body([UInt8])
        /// The request is complete.
        case end
    }

    private enum State: Sendable {
        case requestLine
        case fieldLines
        case body(remaining: Int)
        case chunkSizeLine
        case chunkData(remaining: Int)
        case chunkDataCR
        case chunkDataLF
        case trailerLines
        case bodyTooLarge
        case failed(HTTPParseError)
    }

    /// Most empty lines skipped before a request line.
    static let maxLeadingEmptyLines = 8
    /// Longest chunk-size line (size and extensions), without its CRLF.
    static let maxChunkLineBytes = 4096
    /// A consumed prefix at least this long (and at least half the buffer) is dropped.
    private static let compactionThreshold = 4096
    /// An emptied buffer with more capacity than this is released rather than reused.
    private static let maxRetainedCapacity = 65536

    private let limits: Limits
    private var buffer: [UInt8] = []
    /// Index of the first byte not yet consumed.
    private var readIndex = 0
    /// How many bytes from `readIndex` are known to hold no LF (for the current line).
    private var scannedCount = 0
    private var state = State.requestLine
    private var head = PendingHead()
    private var emptyLinesSkipped = 0
    /// Bytes of the header or trailer section so far, CRLFs included.
    private var sectionBytes = 0
    /// Field lines of the header or trailer section so far.
    private var sectionFields = 0
    /// Chunk data bytes declared so far in this request.
    private var chunkedBodyBytes = 0

    /// Creates a parser with these limits.
    public init(limits: Limits = Limits()) {
        var limits = limits
        limits.maxRequestLineBytes = max(0, limits.maxRequestLineBytes)
        limits.maxHeaderBytes = max(0, limits.maxHeaderBytes)
        limits.maxHeaderCount = max(0, limits.maxHeaderCount)
        limits.maxBodyBytes = max(0, limits.maxBodyBytes)
        self.limits = limits
    }

    /// Adds received bytes to the buffer. Ignored once the parser has failed.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if case .failed = state { return }
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Adds received bytes to the buffer. Ignored once the parser has failed.
    public mutating func append(_ bytes: [UInt8]) {
        if case .failed = state { return }
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Bytes received and not yet consumed by ``next()``.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// True when between requests and no byte of a next request has arrived: the moment
    /// for an idle keep-alive timeout rather than a header-read timeout.
    public var isAwaitingRequest: Bool {
        if case .requestLine = state { return readIndex == buffer.count }
        return false
    }

    /// The next event, or `nil` when more bytes are needed.
    ///
    /// After ``Event/end``, parsing of the next pipelined request begins with the bytes
    /// already buffered. After an error every later call throws the same error. When a
    /// `Content-Length` exceeds ``Limits/maxBodyBytes`` the head is returned first and the
    /// following call throws ``HTTPParseError/bodyTooLarge``, so the server can answer 413
    /// knowing the request.
    public mutating func next() throws(HTTPParseError) -> Event? {
        do throws(HTTPParseError) {
            return try step()
        } catch {
            state = .failed(error)
            buffer = []
            readIndex = 0
            scannedCount = 0
            head = PendingHead()
            throw error
        }
    }

    private mutating func step() throws(HTTPParseError) -> Event? {
        while true {
            switch state {
            case .failed(let error):
                throw error

            case .bodyTooLarge:
                throw .bodyTooLarge

            case .requestLine:
                guard let lf = findLineFeed() else {
                    if bufferedByteCount > 0, bufferedByteCount - 1 > limits.maxRequestLineBytes {
                        throw .requestLineTooLong
                    }
                    return nil
                }
                if contentLength(ofLineEndingAt: lf) > limits.maxRequestLineBytes { throw .requestLineTooLong }
                let length = try checkedLineLength(lf)
                if length == 0 {
                    emptyLinesSkipped += 1
                    if emptyLinesSkipped > Self.maxLeadingEmptyLines { throw .invalidRequestLine }
                    consumeLine(lf)
                    continue
                }
                let requestLine = try withLine(length) { line throws(HTTPParseError) in
                    try RequestLine(parsing: line)
                }
                head = PendingHead(requestLine: requestLine)
                consumeLine(lf)
                sectionBytes = 0
                sectionFields = 0
                state = .fieldLines

            case .fieldLines:
                guard let lf = findLineFeed() else {
                    if sectionBytes + bufferedByteCount > limits.maxHeaderBytes { throw .headerSectionTooLarge }
                    return nil
                }
                sectionBytes += lf + 1
                if sectionBytes > limits.maxHeaderBytes { throw .headerSectionTooLarge }
                let length = try checkedLineLength(lf)
                if length > 0 {
                    sectionFields += 1
                    if sectionFields > limits.maxHeaderCount { throw .tooManyHeaders }
                    let field = try withLine(length) { line throws(HTTPParseError) in
                        try HeaderField(parsing: line)
                    }
                    try head.add(field)
                    consumeLine(lf)
                    continue
                }
                consumeLine(lf)
                let requestHead = try head.finish()
                head = PendingHead()
                emptyLinesSkipped = 0
                switch requestHead.framing {
                case .none:
                    state = .body(remaining: 0)
                case .contentLength(let length):
                    state = length > limits.maxBodyBytes ? .bodyTooLarge : .body(remaining: length)
                case .chunked:
                    chunkedBodyBytes = 0
                    state = .chunkSizeLine
                }
                return .head(requestHead)

            case .body(let remaining):
                if remaining == 0 {
                    state = .requestLine
                    return .end
                }
                guard bufferedByteCount > 0 else { return nil }
                let count = min(remaining, bufferedByteCount)
                state = .body(remaining: remaining - count)
                return .body(consumeBytes(count))

            case .chunkSizeLine:
                guard let lf = findLineFeed() else {
                    if bufferedByteCount > 0, bufferedByteCount - 1 > Self.maxChunkLineBytes {
                        throw .invalidChunkFraming
                    }
                    return nil
                }
                if contentLength(ofLineEndingAt: lf) > Self.maxChunkLineBytes { throw .invalidChunkFraming }
                let length = try checkedLineLength(lf)
                let size = try withLine(length) { line throws(HTTPParseError) in
                    try Self.parseChunkSizeLine(line)
                }
                consumeLine(lf)
                if size == 0 {
                    sectionBytes = 0
                    sectionFields = 0
                    state = .trailerLines
                } else {
                    if size > limits.maxBodyBytes - chunkedBodyBytes { throw .bodyTooLarge }
                    chunkedBodyBytes += size
                    state = .chunkData(remaining: size)
                }

            case .chunkData(let remaining):
                guard bufferedByteCount > 0 else { return nil }
                let count = min(remaining, bufferedByteCount)
                state = count == remaining ? .chunkDataCR : .chunkData(remaining: remaining - count)
                return .body(consumeBytes(count))

            case .chunkDataCR, .chunkDataLF:
                guard bufferedByteCount > 0 else { return nil }
                let expected: UInt8
                if case .chunkDataCR = state { expected = ASCII.cr } else { expected = ASCII.lf }
                guard buffer[readIndex] == expected else { throw .invalidChunkFraming }
                readIndex += 1
                if case .chunkDataCR = state { state = .chunkDataLF } else { state = .chunkSizeLine }

            case .trailerLines:
                guard let lf = findLineFeed() else {
                    if sectionBytes + bufferedByteCount > limits.maxHeaderBytes { throw .headerSectionTooLarge }
                    return nil
                }
                sectionBytes += lf + 1
                if sectionBytes > limits.maxHeaderBytes { throw .headerSectionTooLarge }
                let length = try checkedLineLength(lf)
                if length > 0 {
                    sectionFields += 1
                    if sectionFields > limits.maxHeaderCount { throw .tooManyHeaders }
                    _ = try withLine(length) { line throws(HTTPParseError) in
                        try HeaderField.validate(line)
                    }
                    consumeLine(lf)
                    continue
                }
                consumeLine(lf)
                state = .requestLine
                return .end
            }
        }
    }

    // MARK: - Buffer

    /// Drops the consumed prefix when the buffer is empty, or when the prefix is large and
    /// at least half the buffer, so that pipelined requests don't shift bytes every time.
    private mutating func compact() {
        if readIndex == buffer.count {
            if buffer.capacity > Self.maxRetainedCapacity {
                buffer = []
            } else {
                buffer.removeAll(keepingCapacity: true)
            }
            readIndex = 0
        } else if readIndex >= Self.compactionThreshold, readIndex >= buffer.count - readIndex {
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }

    /// Offset from `readIndex` of the next LF, or `nil`. Bytes already searched are not
    /// searched again.
    private mutating func findLineFeed() -> Int? {
        let start = readIndex + scannedCount
        guard start < buffer.count else { return nil }
        let found: Int? = buffer.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress,
                let hit = memchr(base + start, Int32(ASCII.lf), bytes.count - start)
            else { return nil }
            return base.distance(to: UnsafeRawPointer(hit))
        }
        guard let found else {
            scannedCount = buffer.count - readIndex
            return nil
        }
        return found - readIndex
    }

    /// Length of the line ending with the LF at offset `lf`, without its line ending.
    private func contentLength(ofLineEndingAt lf: Int) -> Int {
        lf > 0 && buffer[readIndex + lf - 1] == ASCII.cr ? lf - 1 : lf
    }

    /// Checks that the line ending at `lf` ends in CRLF and has no other CR, and returns
    /// its length without the CRLF.
    private func checkedLineLength(_ lf: Int) throws(HTTPParseError) -> Int {
        guard lf > 0, buffer[readIndex + lf - 1] == ASCII.cr else { throw .bareLineFeed }
        let length = lf - 1
        let start = readIndex
        let hasCR = buffer.withUnsafeBytes { bytes in
            guard length > 0, let base = bytes.baseAddress else { return false }
            return memchr(base + start, Int32(ASCII.cr), length) != nil
        }
        if hasCR { throw .bareCarriageReturn }
        return length
    }

    /// Calls `body` with the `length` bytes at `readIndex`.
    private func withLine<R>(
        _ length: Int,
        _ body: (UnsafeBufferPointer<UInt8>) throws(HTTPParseError) -> R
    ) throws(HTTPParseError) -> R {
        let start = readIndex
        return try buffer.withUnsafeBufferPointer { bytes throws(HTTPParseError) in
            try body(UnsafeBufferPointer(rebasing: bytes[start..<start + length]))
        }
    }

    private mutating func consumeLine(_ lf: Int) {
        readIndex += lf + 1
        scannedCount = 0
    }

    private mutating func consumeBytes(_ count: Int) -> [UInt8] {
        let bytes = Array(buffer[readIndex..<readIndex + count])
        readIndex += count
        return bytes
    }
}
