import Access
import Telemetry

/// The instants an admin call covers, `[from, to)`, from its `from` and `to` query
/// parameters (RFC 3339, any offset; `%`-escapes decoded). Without them: the last 24 hours.
struct AdminRange: Equatable {
    let fromMilliseconds: Int64
    let toMilliseconds: Int64

    /// The roll-ups' finest grain: 15 minutes, so that every time zone's midnight (those at
    /// `:30` and `:45` too) falls on a slot's edge.
    static let slotMilliseconds: Int64 = 900_000
    static let dayMilliseconds: Int64 = 86_400_000
    /// The longest range a call may ask for: a year and a bit, which the roll-ups answer quickly.
    static let maximumDays: Int64 = 400

    init(fromMilliseconds: Int64, toMilliseconds: Int64) {
        self.fromMilliseconds = fromMilliseconds
        self.toMilliseconds = toMilliseconds
    }

    init(_ query: QueryParameters, nowMilliseconds: Int64) throws(GatewayError) {
        let to = try query["to"].map { text throws(GatewayError) in
            guard let value = Self.instant(text) else { throw GatewayError.invalidParameter }
            return value
        }
        let from = try query["from"].map { text throws(GatewayError) in
            guard let value = Self.instant(text) else { throw GatewayError.invalidParameter }
            return value
        }
        let end = to ?? nowMilliseconds
        let start = from ?? end - Self.dayMilliseconds
        guard start < end, end - start <= Self.maximumDays * Self.dayMilliseconds else {
            throw GatewayError.invalidParameter
        }
        self.init(fromMilliseconds: start, toMilliseconds: end)
    }

    /// The slots `[fromSlot, toSlot)` that cover the range: its start rounded down, its end up.
    var fromSlot: Int64 { Self.floorDivide(fromMilliseconds, Self.slotMilliseconds) }
    var toSlot: Int64 { -Self.floorDivide(-toMilliseconds, Self.slotMilliseconds) }

    /// The UTC days `[fromDay, toDay]` the range touches (the quotas' days).
    var fromDay: Int64 { Self.floorDivide(fromMilliseconds, Self.dayMilliseconds) }
    var toDay: Int64 { Self.floorDivide(toMilliseconds - 1, Self.dayMilliseconds) }

    /// The local days (UTC shifted by `offsetMinutes`) the covering slots touch.
    func localDays(offsetMinutes: Int) -> ClosedRange<Int64> {
        let offset = Int64(offsetMinutes) * 60_000
        let first = Self.floorDivide(fromSlot * Self.slotMilliseconds + offset, Self.dayMilliseconds)
        let last = Self.floorDivide(toSlot * Self.slotMilliseconds - 1 + offset, Self.dayMilliseconds)
        return first...last
    }

    static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return value % divisor < 0 ? quotient - 1 : quotient
    }

    /// Milliseconds since the Unix epoch of an RFC 3339 date-time (`2026-12-03T10:15:00Z`,
    /// `…T10:15:00.250+03:30`), nil for anything else.
    static func instant(_ escaped: Substring) -> Int64? {
        guard let bytes = percentDecoded(escaped), bytes.count >= 20, bytes.count <= 40 else { return nil }
        func number(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[start..<start + count] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t"),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            let day = Timestamp.day(fromDate: String(decoding: bytes[0..<10], as: UTF8.self)),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
            hour < 24, minute < 60, second < 60
        else { return nil }
        var index = 19
        var milliseconds: Int64 = 0
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                if digits < 3 { milliseconds = milliseconds * 10 + Int64(bytes[index] - UInt8(ascii: "0")) }
                digits += 1
                index += 1
            }
            guard digits > 0, digits <= 9 else { return nil }
            if digits < 3 { for _ in digits..<3 { milliseconds *= 10 } }
        }
        var offsetMinutes: Int64 = 0
        switch bytes.count - index {
        case 1 where bytes[index] == UInt8(ascii: "Z") || bytes[index] == UInt8(ascii: "z"):
            break
        case 6
        where (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-"))
            && bytes[index + 3] == UInt8(ascii: ":"):
            guard let hours = number(index + 1, 2), let minutes = number(index + 4, 2), hours < 24, minutes < 60
            else { return nil }
            offsetMinutes = (hours * 60 + minutes) * (bytes[index] == UInt8(ascii: "-") ? -1 : 1)
        default:
            return nil
        }
        let seconds = day * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
        return seconds * 1000 + milliseconds
    }

    /// `%XX` escapes and `+` (a query's space, which RFC 3339 never holds: a `+` sent raw
    /// meant an offset, so it stays one).
    private static func percentDecoded(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(CallerToken.hexValue),
                let low = iterator.next().flatMap(CallerToken.hexValue)
            else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}
