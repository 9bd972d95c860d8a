/// Where Redis is and how long to wait for it: `REDIS_URL`, `REDIS_TIMEOUT_MS` and the rest.
package struct RedisConfiguration: Sendable, Equatable {
    /// A host name or numeric address (IPv6 without brackets).
    package var host: String
    package var port: Int
    /// Sent as `AUTH` at each connect when set. Never in any description.
    package var password: String?
    /// An ACL user name for `AUTH user password` (`redis://user:password@…`).
    package var username: String?
    /// Selected at each connect when not 0.
    package var database: Int
    /// How long one command may wait for its reply (`REDIS_TIMEOUT_MS`, default 50 ms). A
    /// timeout means a dead link: the connection is closed and made again.
    package var timeout: Duration
    /// How long connecting, with AUTH, SELECT and the scripts loaded, may take.
    package var connectTimeout: Duration
    /// The delay before reconnecting: full jitter up to a cap that doubles from the first
    /// value to the last after each failed attempt.
    package var reconnectBackoff: ClosedRange<Duration>

    package init(
        host: String = "127.0.0.1", port: Int = 6379, password: String? = nil, username: String? = nil,
        database: Int = 0,
        timeout: Duration = .milliseconds(50), connectTimeout: Duration = .milliseconds(1000),
        reconnectBackoff: ClosedRange<Duration> = .milliseconds(50)...(.seconds(5))
    ) {
        self.host = host
        self.port = port
        self.password = password
        self.username = username
        self.database = database
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.reconnectBackoff = reconnectBackoff
    }

    /// Parses `redis://[[user]:password@]host[:port][/db]`. `rediss://` is refused: no TLS yet.
    /// Errors name the part that is wrong, never the URL (it may hold a password).
    package init(url: String) throws(RedisError) {
        self.init()
        func invalid(_ reason: String) -> RedisError { RedisError(.invalidConfiguration, "REDIS_URL: \(reason)") }
        var rest: Substring
        if url.hasPrefix("redis://") {
            rest = url.dropFirst("redis://".count)
        } else if url.hasPrefix("rediss://") {
            throw invalid("rediss:// (TLS) is not supported yet; use redis:// over a trusted network")
        } else {
            throw invalid("must start with redis://")
        }
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard let colon = userInfo.firstIndex(of: ":") else {
                throw invalid("the user info must be [user]:password")
            }
            let user = try Self.percentDecoded(userInfo[..<colon], invalid("bad percent-encoding in the user name"))
            let password = try Self.percentDecoded(
                userInfo[userInfo.index(after: colon)...], invalid("bad percent-encoding in the password"))
            guard !password.isEmpty else { throw invalid("the password is empty") }
            username = user.isEmpty ? nil : user
            self.password = password
        }
        var authority = rest
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            let path = rest[rest.index(after: slash)...]
            if !path.isEmpty {
                guard let number = Int(path), number >= 0, number <= 65_535, path.allSatisfy(\.isASCII) else {
                    throw invalid("the database must be a number")
                }
                database = number
            }
        }
        guard !authority.contains("?"), !authority.contains("#") else {
            throw invalid("query and fragment are not supported")
        }
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw invalid("unclosed [ in the host") }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("unexpected text after the host") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            portText = authority[authority.index(after: colon)...]
        } else {
            host = String(authority)
        }
        guard !host.isEmpty else { throw invalid("the host is missing") }
        guard
            host.allSatisfy({
                $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" || $0 == "_")
            })
        else {
            throw invalid("the host has characters a host cannot have")
        }
        if let portText {
            guard let number = Int(portText), (1...65_535).contains(number), portText.allSatisfy(\.isASCII) else {
                throw invalid("the port must be 1-65535")
            }
            port = number
        }
    }

    /// The settings from the environment: nil without `REDIS_URL` (Redis is not used).
    package init?(environment: [String: String]) throws(RedisError) {
        guard let url = environment["REDIS_URL"], !url.isEmpty else { return nil }
        try self.init(url: url)
        if let text = environment["REDIS_TIMEOUT_MS"] {
            guard let milliseconds = Int(text), milliseconds > 0, milliseconds <= 600_000 else {
                throw RedisError(
                    .invalidConfiguration, "REDIS_TIMEOUT_MS must be a whole number of milliseconds, 1-600000")
            }
            timeout = .milliseconds(milliseconds)
        }
    }

    private static func percentDecoded(_ text: Substring, _ error: RedisError) throws(RedisError) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                throw error
            }
            bytes.append(high << 4 | low)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

extension RedisConfiguration: CustomStringConvertible {
    /// The URL with the password masked.
    package var description: String {
        let auth = password == nil ? "" : "\(username ?? ""):***@"
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "redis://\(auth)\(shownHost):\(port)/\(database)"
    }
}
