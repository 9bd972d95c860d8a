import EventLoop

/// Where and how a ``PostgresClient`` connects, and the time it gives each step.
///
/// Neither ``description`` nor any error made while parsing a URL carries the password.
package struct PostgresConfiguration: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// libpq's `sslmode`.
    package enum SSLMode: String, Sendable, Hashable, CaseIterable {
        case disable, allow, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    /// A host name, a numeric IPv4 or IPv6 address, or the directory of a Unix socket (`/…`).
    package var host: String
    package var port: Int
    /// nil: libpq's default (the operating system's user name).
    package var user: String?
    package var password: String?
    /// nil: the user's name.
    package var database: String?
    package var sslMode: SSLMode
    /// Shown in `pg_stat_activity`.
    package var applicationName: String
    /// How long one connection attempt may take, TLS and authentication included.
    package var connectTimeout: Duration
    /// How long a query may take from the call, waiting for a connection included, unless
    /// the call gives its own.
    package var queryTimeout: Duration
    /// The first wait before reconnecting after a failure; each further failure doubles it
    /// up to ``maxReconnectDelay``, with jitter.
    package var minReconnectDelay: Duration
    package var maxReconnectDelay: Duration

    package init(
        host: String, port: Int = 5432, user: String? = nil, password: String? = nil, database: String? = nil,
        sslMode: SSLMode = .prefer, applicationName: String = "text-gateway",
        connectTimeout: Duration = .seconds(10), queryTimeout: Duration = .seconds(30),
        minReconnectDelay: Duration = .milliseconds(50), maxReconnectDelay: Duration = .seconds(5)
    ) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.sslMode = sslMode
        self.applicationName = applicationName
        self.connectTimeout = connectTimeout
        self.queryTimeout = queryTimeout
        self.minReconnectDelay = minReconnectDelay
        self.maxReconnectDelay = maxReconnectDelay
    }

    /// Parses `postgres://user:password@host:port/database?sslmode=require` (or
    /// `postgresql://`). Every part but the host may be left out; user, password, host and
    /// database are percent-decoded; an IPv6 host is written in brackets. The query may set
    /// `sslmode`, `application_name` and `connect_timeout` (seconds); anything else is refused.
    package init(url: String) throws(PostgresError) {
        func fail(_ reason: String) -> PostgresError {
            PostgresError(.invalidConfiguration, message: "DATABASE_URL: " + reason)
        }
        var rest = Substring(url)
        if rest.hasPrefix("postgres://") {
            rest = rest.dropFirst("postgres://".count)
        } else if rest.hasPrefix("postgresql://") {
            rest = rest.dropFirst("postgresql://".count)
        } else {
            throw fail("the scheme must be postgres:// or postgresql://")
        }
        var queryPart: Substring?
        if let mark = rest.firstIndex(of: "?") {
            queryPart = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var pathPart: Substring?
        if let slash = rest.firstIndex(of: "/") {
            pathPart = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var user: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                guard let decodedUser = Self.percentDecoded(userInfo[..<colon]) else {
                    throw fail("the user name is not valid percent-encoded UTF-8")
                }
                guard let decodedPassword = Self.percentDecoded(userInfo[userInfo.index(after: colon)...]) else {
                    throw fail("the password is not valid percent-encoded UTF-8")
                }
                user = decodedUser
                password = decodedPassword
            } else {
                guard let decodedUser = Self.percentDecoded(userInfo) else {
                    throw fail("the user name is not valid percent-encoded UTF-8")
                }
                user = decodedUser
            }
            if user == "" { user = nil }
        }
        var hostPart = rest
        var portPart: Substring?
        if hostPart.hasPrefix("[") {
            guard let close = hostPart.firstIndex(of: "]") else { throw fail("an IPv6 host lacks its closing bracket") }
            let after = hostPart[hostPart.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw fail("unexpected text after the IPv6 host") }
                portPart = after.dropFirst()
            }
            hostPart = hostPart[hostPart.index(after: hostPart.startIndex)..<close]
            guard NumericAddress.bytes(of: String(hostPart))?.count == 16 else {
                throw fail("the bracketed host is not an IPv6 address")
            }
        } else if let colon = hostPart.lastIndex(of: ":") {
            portPart = hostPart[hostPart.index(after: colon)...]
            hostPart = hostPart[..<colon]
        }
        guard let host = Self.percentDecoded(hostPart), !host.isEmpty else { throw fail("the URL has no host") }
        guard !host.contains(where: { $0 == "," }) else { throw fail("several hosts are not supported") }
        var port = 5432
        if let portPart {
            guard let number = Int(portPart), (1...65_535).contains(number), portPart.allSatisfy(\.isASCII) else {
                throw fail("the port must be a number from 1 to 65535")
            }
            port = number
        }
        var database: String?
        if let pathPart, !pathPart.isEmpty {
            guard let decoded = Self.percentDecoded(pathPart), !decoded.contains("/") else {
                throw fail("the database name is not valid")
            }
            database = decoded
        }
        self.init(host: host, port: port, user: user, password: password, database: database)
        for pair in (queryPart ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let key = Self.percentDecoded(parts[0]), let value = Self.percentDecoded(parts[1])
            else {
                throw fail("a query parameter is malformed")
            }
            switch key {
            case "sslmode":
                guard let mode = SSLMode(rawValue: value) else {
                    throw fail("sslmode must be one of " + SSLMode.allCases.map(\.rawValue).joined(separator: ", "))
                }
                sslMode = mode
            case "application_name":
                applicationName = value
            case "connect_timeout":
                guard let seconds = Int(value), seconds > 0, seconds <= 3600 else {
                    throw fail("connect_timeout must be a number of seconds")
                }
                connectTimeout = .seconds(seconds)
            default:
                throw fail("unknown parameter \(key.prefix(40))")
            }
        }
    }

    /// `text` with every `%XX` decoded; nil for a broken escape, bytes that are not UTF-8, or a NUL.
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(Self.hexValue), let low = iterator.next().flatMap(Self.hexValue)
            else { return nil }
            bytes.append(high << 4 | low)
        }
        guard !bytes.contains(0), let decoded = String(validating: bytes, as: UTF8.self) else { return nil }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// libpq's connection keywords and values, password included: for libpq only.
    var libpqParameters: [(String, String)] {
        var parameters: [(String, String)] = [("host", host), ("port", String(port))]
        if let user { parameters.append(("user", user)) }
        if let password { parameters.append(("password", password)) }
        if let database { parameters.append(("dbname", database)) }
        parameters.append(("sslmode", sslMode.rawValue))
        parameters.append(("application_name", applicationName))
        // Our own timer bounds the attempt; libpq's would only be checked inside blocking calls.
        parameters.append(("connect_timeout", "0"))
        return parameters
    }

    package var description: String {
        let who = user.map { $0 + (password == nil ? "" : ":***") + "@" } ?? ""
        let where_ = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(who)\(where_):\(port)/\(database ?? "")?sslmode=\(sslMode.rawValue)"
    }

    package var debugDescription: String { description }

    package var customMirror: Mirror {
        Mirror(self, children: ["url": description], displayStyle: .struct)
    }
}
