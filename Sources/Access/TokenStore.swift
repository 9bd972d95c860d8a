import Crypto

/// The callers allowed in, by the SHA-256 digest of their bearer tokens.
///
/// Built once from configuration, then immutable and shared by every loop:
///
/// - `GATEWAY_TOKENS`: comma-separated `sha256hex:userId:plan` entries
///   (``parse(inline:)``);
/// - `GATEWAY_TOKENS_FILE`: one `sha256hex userId plan` entry a line, fields separated by
///   blanks, `#` starting a comment, blank lines ignored (``parse(file:)``).
///
/// ``authenticate(authorization:)`` hashes the presented token and compares the digest
/// with every configured digest in constant time, so neither the time taken nor a lookup
/// structure says how close a guess came.
package struct TokenStore: Sendable {
    /// The configured callers, in configuration order.
    package let entries: [CallerToken]

    /// The longest token accepted in an `Authorization` header, in bytes.
    package static let maximumTokenLength = 512

    /// A store of `entries`. When two entries share a digest, the first one wins
    /// (the parsers reject such configurations).
    package init(entries: [CallerToken]) {
        self.entries = entries
    }

    /// How many callers are configured.
    package var count: Int { entries.count }

    /// Whether no caller is configured (every token is refused).
    package var isEmpty: Bool { entries.isEmpty }

    // MARK: Authenticating

    /// The caller whose token `authorization` (an `Authorization` header value) carries, or
    /// `nil` when the header is missing, malformed or names no configured token.
    ///
    /// The value is read by ``BearerCredentials``: `Bearer` in any case, one or more spaces,
    /// then 1–512 printable ASCII characters without spaces.
    package func authenticate(authorization: String?) -> Caller? {
        guard let authorization, let token = BearerCredentials.token(in: authorization) else { return nil }
        return caller(digest: SHA256.hash(token))
    }

    /// The configured caller whose token has SHA-256 `digest`, or nil.
    package func caller(digest: [UInt8]) -> Caller? {
        // Every entry is compared, whatever matched before: the time taken depends on the
        // number of entries only. No dictionary is keyed by the secret's digest.
        var matched = -1
        for index in entries.indices {
            let equal = ConstantTime.equals(entries[index].digest, digest)
            if equal && matched < 0 { matched = index }
        }
        guard matched >= 0 else { return nil }
        let entry = entries[matched]
        return Caller(userID: entry.userID, plan: entry.plan)
    }

    /// Whether `token` is one ``authenticate(authorization:)`` could ever accept: 1–512
    /// printable ASCII characters without spaces.
    package static func isAcceptableToken(_ token: String) -> Bool {
        let bytes = token.utf8
        return !bytes.isEmpty && bytes.count <= maximumTokenLength && bytes.allSatisfy(BearerCredentials.isTokenByte)
    }

    /// The token `text-gateway token hash` reads from standard input: one line, the blanks
    /// and line breaks around it dropped (the newline `echo` adds). Nil when that is not one
    /// token ``isAcceptableToken(_:)`` allows (1–512 printable ASCII characters without
    /// spaces), or when a second line follows: a hash of it could never match.
    package static func token(fromInput input: [UInt8]) -> String? {
        let blanks: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n")]
        var bytes = input[...]
        while let first = bytes.first, blanks.contains(first) { bytes.removeFirst() }
        while let last = bytes.last, blanks.contains(last) { bytes.removeLast() }
        guard bytes.count <= maximumTokenLength, bytes.allSatisfy(BearerCredentials.isTokenByte) else { return nil }
        let token = String(decoding: bytes, as: UTF8.self)
        return isAcceptableToken(token) ? token : nil
    }

    /// The hex digest configuration holds for `token`: what `text-gateway token hash` prints
    /// for a token read from standard input. Leading and trailing blanks and line breaks
    /// (the newline `echo` adds) are not part of the token and are dropped first.
    package static func hashLine(forToken token: String) -> String {
        let blanks: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n")]
        var bytes = token.utf8[...]
        while let first = bytes.first, blanks.contains(first) { bytes.removeFirst() }
        while let last = bytes.last, blanks.contains(last) { bytes.removeLast() }
        return SHA256.hexDigest(bytes)
    }

    // MARK: Parsing configuration

    /// Parses `GATEWAY_TOKENS`: `sha256hex:userId:plan` entries separated by commas.
    ///
    /// Blanks around an entry are ignored, and so are empty entries (a trailing comma).
    /// Positions in errors count every comma-separated piece from 1.
    package static func parse(inline text: String) throws(TokenConfigError) -> TokenStore {
        var builder = Builder()
        for (offset, piece) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let entry = trimmingBlanks(piece)
            guard !entry.isEmpty else { continue }
            let fields = entry.split(separator: ":", omittingEmptySubsequences: false)
            try builder.add(fields, at: .entry(offset + 1))
        }
        return TokenStore(entries: builder.entries)
    }

    /// Parses a tokens file: one `sha256hex userId plan` entry a line, fields separated by
    /// spaces or tabs. A `#` starts a comment that runs to the end of the line (no field
    /// can contain one); blank lines are ignored; `\n`, `\r\n` and `\r` end a line.
    package static func parse(file text: String) throws(TokenConfigError) -> TokenStore {
        var builder = Builder()
        // `\r\n` is one `Character`, so line breaks are matched as characters, not as `\n`.
        let lines = text.split(
            omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
        for (offset, rawLine) in lines.enumerated() {
            var line = rawLine[...]
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard !fields.isEmpty else { continue }
            try builder.add(fields, at: .line(offset + 1))
        }
        return TokenStore(entries: builder.entries)
    }

    private static func trimmingBlanks(_ text: Substring) -> Substring {
        var text = text
        while let first = text.first, first.isWhitespace { text.removeFirst() }
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return text
    }

    /// Collects validated entries and rejects a digest configured twice.
    private struct Builder {
        var entries: [CallerToken] = []
        private var firstLocation: [[UInt8]: TokenConfigError.Location] = [:]

        mutating func add(_ fields: [Substring], at location: TokenConfigError.Location) throws(TokenConfigError) {
            guard fields.count == 3 else {
                throw TokenConfigError(.wrongFieldCount(found: fields.count), at: location)
            }
            // Digests from configuration are public (they are not the tokens), so keying a
            // dictionary by them while parsing leaks nothing.
            guard let digest = CallerToken.decodeHexDigest(String(fields[0])) else {
                throw TokenConfigError(.invalidHash, at: location)
            }
            let userID = String(fields[1])
            guard CallerToken.isValidUserID(userID) else { throw TokenConfigError(.invalidUserID, at: location) }
            let plan = String(fields[2])
            guard Plan.isValidName(plan) else { throw TokenConfigError(.invalidPlanName, at: location) }
            if let first = firstLocation[digest] {
                throw TokenConfigError(.duplicateToken(first: first), at: location)
            }
            firstLocation[digest] = location
            entries.append(CallerToken(digest: digest, userID: userID, plan: plan))
        }
    }
}
