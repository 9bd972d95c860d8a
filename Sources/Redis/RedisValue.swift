import CRedis

/// A reply from Redis (RESP2), as a value.
package enum RedisValue: Sendable, Hashable {
    /// `+OK`
    case simpleString(String)
    /// `-ERR …` inside an array (a top-level error is thrown as ``RedisError``).
    case error(String)
    /// `:42`
    case integer(Int64)
    /// `$…`; nil for the null bulk string (and the null array, which hiredis does not tell apart).
    case bulkString([UInt8]?)
    /// `*…`; nil is never produced by hiredis 0.14 (a null array arrives as a null bulk string).
    case array([RedisValue]?)

    /// The text of a simple or bulk string (bulk bytes decoded as UTF-8); nil otherwise.
    package var string: String? {
        switch self {
        case .simpleString(let text): return text
        case .bulkString(let bytes?): return String(decoding: bytes, as: UTF8.self)
        default: return nil
        }
    }

    /// The integer, or a bulk or simple string holding one; nil otherwise.
    package var integer: Int64? {
        switch self {
        case .integer(let value): return value
        case .simpleString, .bulkString: return string.flatMap { Int64($0) }
        default: return nil
        }
    }

    /// The elements of an array; nil otherwise.
    package var array: [RedisValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// True for the null bulk string (and null array).
    package var isNull: Bool {
        switch self {
        case .bulkString(nil), .array(nil): return true
        default: return false
        }
    }

    /// Converts a hiredis reply (which hiredis frees after the callback: copied here).
    init(reply: UnsafePointer<redisReply>) throws(RedisError) {
        func text() -> String {
            guard let str = CRedis_reply_str(reply) else { return "" }
            let bytes = UnsafeRawBufferPointer(start: str, count: CRedis_reply_len(reply))
            return String(decoding: bytes, as: UTF8.self)
        }
        switch CRedis_reply_type(reply) {
        case CRedis_REPLY_STATUS:
            self = .simpleString(text())
        case CRedis_REPLY_ERROR:
            self = .error(text())
        case CRedis_REPLY_INTEGER:
            self = .integer(Int64(CRedis_reply_integer(reply)))
        case CRedis_REPLY_NIL:
            self = .bulkString(nil)
        case CRedis_REPLY_STRING:
            guard let str = CRedis_reply_str(reply) else {
                self = .bulkString([])
                return
            }
            self = .bulkString(Array(UnsafeRawBufferPointer(start: str, count: CRedis_reply_len(reply))))
        case CRedis_REPLY_ARRAY:
            var elements: [RedisValue] = []
            let count = CRedis_reply_elements(reply)
            elements.reserveCapacity(count)
            for index in 0..<count {
                guard let element = CRedis_reply_element(reply, index) else {
                    throw RedisError(.protocol, "missing array element")
                }
                elements.append(try RedisValue(reply: element))
            }
            self = .array(elements)
        default:
            throw RedisError(.protocol, "unknown reply type")
        }
    }
}
