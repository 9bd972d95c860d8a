/// An HTTP request method, such as `GET` or `POST`.
///
/// Methods are case-sensitive (RFC 9110 §9.1): `get` is a different method from `GET`.
/// The parser only produces methods whose bytes are all token characters.
public struct HTTPMethod: Hashable, Sendable, CustomStringConvertible {
    /// The method name exactly as sent, for example `"GET"`.
    public let rawValue: String

    /// Creates a method from its name.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// `GET`: transfer a current representation of the target resource.
    public static let GET = HTTPMethod("GET")
    /// `HEAD`: same as `GET`, but the response carries no content.
    public static let HEAD = HTTPMethod("HEAD")
    /// `POST`: process the enclosed representation.
    public static let POST = HTTPMethod("POST")
    /// `PUT`: replace the target resource with the enclosed representation.
    public static let PUT = HTTPMethod("PUT")
    /// `DELETE`: remove the target resource.
    public static let DELETE = HTTPMethod("DELETE")
    /// `PATCH`: apply partial modifications (RFC 5789).
    public static let PATCH = HTTPMethod("PATCH")
    /// `OPTIONS`: describe the communication options for the target.
    public static let OPTIONS = HTTPMethod("OPTIONS")
    /// `TRACE`: perform a message loop-back test.
    public static let TRACE = HTTPMethod("TRACE")
    /// `CONNECT`: establish a tunnel. The parser rejects it (this server never tunnels).
    public static let CONNECT = HTTPMethod("CONNECT")

    public var description: String { rawValue }
}

extension HTTPMethod {
    private static let known: [HTTPMethod] = [.GET, .HEAD, .POST, .PUT, .DELETE, .PATCH, .OPTIONS, .TRACE, .CONNECT]

    /// Returns the method for the given token bytes, reusing the standard static values.
    static func make(_ bytes: UnsafeBufferPointer<UInt8>) -> HTTPMethod {
        for method in known where method.rawValue.utf8.count == bytes.count {
            let equal = method.rawValue.utf8.withContiguousBytes { name in
                name.elementsEqual(UnsafeRawBufferPointer(bytes))
            }
            if equal { return method }
        }
        return HTTPMethod(String(decoding: bytes, as: UTF8.self))
    }
}
