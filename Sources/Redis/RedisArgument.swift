/// One argument of a command, as the bytes sent (binary-safe).
package struct RedisArgument: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    package let bytes: [UInt8]

    package init(_ bytes: [UInt8]) { self.bytes = bytes }
    package init(_ text: String) { bytes = Array(text.utf8) }
    package init<Integer: BinaryInteger>(_ value: Integer) { bytes = Array(String(value).utf8) }
    package init(stringLiteral value: String) { self.init(value) }
    package init(integerLiteral value: Int) { self.init(value) }
}
