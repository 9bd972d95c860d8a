/// A parsed request line: `method SP request-target SP HTTP-version` (RFC 9112 §3).
struct RequestLine: Sendable {
    var method: HTTPMethod
    var target: String
    var path: String
    var query: String?
    var version: HTTPVersion

    /// Parses a request line given without its CRLF (which has no CR in it).
    ///
    /// Errors, in the order they are checked: not three parts separated by single spaces →
    /// `invalidRequestLine`; method not a token → `invalidMethod`; version not `HTTP/d.d` →
    /// `invalidRequestLine`; other than 1.0 or 1.1 → `unsupportedVersion`; target → `invalidTarget`.
    init(parsing line: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) {
        var methodEnd = 0
        while methodEnd < line.count, line[methodEnd] != ASCII.space { methodEnd += 1 }
        guard methodEnd > 0, methodEnd < line.count else { throw .invalidRequestLine }
        let targetStart = methodEnd + 1
        var targetEnd = targetStart
        while targetEnd < line.count, line[targetEnd] != ASCII.space { targetEnd += 1 }
        guard targetEnd > targetStart, targetEnd < line.count else { throw .invalidRequestLine }
        let versionStart = targetEnd + 1
        for index in versionStart..<line.count where line[index] == ASCII.space {
            throw .invalidRequestLine
        }

        let methodBytes = UnsafeBufferPointer(rebasing: line[0..<methodEnd])
        for byte in methodBytes where !ASCII.isTokenChar(byte) { throw .invalidMethod }
        let version = try Self.parseVersion(UnsafeBufferPointer(rebasing: line[versionStart...]))
        let method = HTTPMethod.make(methodBytes)
        let targetBytes = UnsafeBufferPointer(rebasing: line[targetStart..<targetEnd])
        let (pathRange, queryStart) = try Self.parseTarget(targetBytes, method: method)

        self.method = method
        self.version = version
        self.target = String(decoding: targetBytes, as: UTF8.self)
        if pathRange == targetBytes.indices {
            self.path = target
        } else if pathRange.isEmpty {
            self.path = "/"
        } else {
            self.path = String(decoding: UnsafeBufferPointer(rebasing: targetBytes[pathRange]), as: UTF8.self)
        }
        if let queryStart {
            self.query = String(decoding: UnsafeBufferPointer(rebasing: targetBytes[queryStart...]), as: UTF8.self)
        } else {
            self.query = nil
        }
    }

    /// `HTTP/1.1` or `HTTP/1.0`; another `HTTP/d.d` is unsupported; anything else invalid.
    private static func parseVersion(_ bytes: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) -> HTTPVersion {
        guard bytes.count == 8,
            bytes[0] == UInt8(ascii: "H"), bytes[1] == UInt8(ascii: "T"), bytes[2] == UInt8(ascii: "T"),
            bytes[3] == UInt8(ascii: "P"), bytes[4] == ASCII.slash, bytes[6] == UInt8(ascii: "."),
            bytes[5] &- UInt8(ascii: "0") < 10, bytes[7] &- UInt8(ascii: "0") < 10
        else { throw .invalidRequestLine }
        let major = Int(bytes[5] &- UInt8(ascii: "0"))
        let minor = Int(bytes[7] &- UInt8(ascii: "0"))
        guard major == 1, minor <= 1 else { throw .unsupportedVersion }
        return minor == 1 ? .http1_1 : .http1_0
    }

    /// Validates the request-target (RFC 9112 §3.2) and returns the range of its path
    /// (empty for an absolute-form target without a path) and where its query starts.
    ///
    /// Accepted: origin-form (`/path?query`); absolute-form with an `http` or `https` scheme
    /// (any case), a non-empty authority without userinfo; `*` for `OPTIONS` only.
    /// Rejected: any byte outside visible ASCII, `#`, any other form, and `CONNECT`.
    private static func parseTarget(
        _ target: UnsafeBufferPointer<UInt8>,
        method: HTTPMethod
    ) throws(HTTPParseError) -> (path: Range<Int>, queryStart: Int?) {
        for byte in target where !ASCII.isTargetChar(byte) { throw .invalidTarget }
        guard method != .CONNECT else { throw .invalidTarget }

        var pathStart: Int
        if target[0] == ASCII.slash {
            pathStart = 0
        } else if target.count == 1, target[0] == ASCII.star {
            guard method == .OPTIONS else { throw .invalidTarget }
            return (0..<1, nil)
        } else {
            let authorityStart: Int
            if hasPrefix(target, "http://") {
                authorityStart = 7
            } else if hasPrefix(target, "https://") {
                authorityStart = 8
            } else {
                throw .invalidTarget
            }
            pathStart = authorityStart
            while pathStart < target.count, target[pathStart] != ASCII.slash, target[pathStart] != ASCII.question {
                guard ASCII.isHostChar(target[pathStart]) else { throw .invalidTarget }
                pathStart += 1
            }
            guard pathStart > authorityStart else { throw .invalidTarget }
        }
        var pathEnd = pathStart
        while pathEnd < target.count, target[pathEnd] != ASCII.question { pathEnd += 1 }
        return (pathStart..<pathEnd, pathEnd < target.count ? pathEnd + 1 : nil)
    }

    /// Whether `bytes` starts with `prefix` (lower-case ASCII), ignoring case.
    private static func hasPrefix(_ bytes: UnsafeBufferPointer<UInt8>, _ prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard bytes.count >= count else { return false }
        return ASCII.caseInsensitiveEquals(UnsafeBufferPointer(rebasing: bytes[0..<count]), prefix)
    }
}
