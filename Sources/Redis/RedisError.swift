/// Every error the Redis client throws. Its text never carries the URL's password.
package struct RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, to switch on.
    package enum Code: Sendable, Hashable {
        /// No connection could be made, or none is up right now (the command was not sent).
        case connectionFailed
        /// The connection closed while the command was pending: it may or may not have run.
        case connectionClosed
        /// No reply within the timeout; the connection is closed and made again.
        case timeout
        /// The server answered with an error (`-ERR …`, `-NOSCRIPT …`); see ``message``.
        case server
        /// A reply the client could not understand, or a command it could not encode.
        case `protocol`
        /// The calling task was cancelled; the command's reply, if any, is read and dropped.
        case cancelled
        /// A bad `REDIS_URL` or setting.
        case invalidConfiguration
        /// The client is stopped.
        case shutdown
    }

    package let code: Code
    /// The server's message for ``Code/server``; otherwise a short reason, possibly empty.
    package let message: String

    package init(_ code: Code, _ message: String = "") {
        self.code = code
        self.message = message
    }

    /// The server error's first word (`ERR`, `NOSCRIPT`, `WRONGPASS`); nil for other codes.
    package var serverErrorPrefix: Substring? {
        guard code == .server else { return nil }
        return message.split(separator: " ", maxSplits: 1).first
    }

    package var description: String {
        message.isEmpty ? "redis: \(code)" : "redis: \(code): \(message)"
    }
}
