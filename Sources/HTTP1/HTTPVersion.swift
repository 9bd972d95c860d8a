/// An HTTP protocol version, such as `HTTP/1.1`.
public struct HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    /// The major version number (the `1` of `HTTP/1.1`).
    public var major: Int
    /// The minor version number (the second `1` of `HTTP/1.1`).
    public var minor: Int

    /// Creates a version from its two numbers.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// `HTTP/1.0`.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// `HTTP/1.1`.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    /// The version as it appears on the wire, for example `"HTTP/1.1"`.
    public var description: String { "HTTP/\(major).\(minor)" }
}
