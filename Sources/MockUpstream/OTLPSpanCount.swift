/// The spans in an OTLP `ExportTraceServiceRequest` (protobuf), for the mock's collector:
/// `resource_spans` (1) → `scope_spans` (2) → `spans` (2). Nil for a body that does not read.
enum OTLPSpanCount {
    static func count(_ body: [UInt8]) -> Int? {
        var total = 0
        guard
            each(
                body, field: 1,
                { resource in
                    each(
                        resource, field: 2,
                        { scope in
                            each(scope, field: 2, { _ in total += 1 })
                        })
                })
        else { return nil }
        return total
    }

    /// Calls `body` with every length-delimited field `field` of `message`; false when the
    /// message does not read (or a nested one does not).
    private static func each(_ message: ArraySlice<UInt8>, field: Int, _ body: (ArraySlice<UInt8>) -> Bool) -> Bool {
        var index = message.startIndex
        func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while index < message.endIndex, shift < 64 {
                let byte = message[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }
        while index < message.endIndex {
            guard let key = varint() else { return false }
            switch key & 7 {
            case 0: guard varint() != nil else { return false }
            case 1, 5:
                let width = key & 7 == 1 ? 8 : 4
                guard message.endIndex - index >= width else { return false }
                index += width
            case 2:
                guard let length = varint(), length <= UInt64(message.endIndex - index) else { return false }
                let inner = message[index..<index + Int(length)]
                index += Int(length)
                if Int(key >> 3) == field, !body(inner) { return false }
            default: return false
            }
        }
        return true
    }

    private static func each(_ message: [UInt8], field: Int, _ body: (ArraySlice<UInt8>) -> Bool) -> Bool {
        each(message[...], field: field, body)
    }

    private static func each(_ message: ArraySlice<UInt8>, field: Int, _ body: (ArraySlice<UInt8>) -> Void) -> Bool {
        each(message, field: field) { (inner: ArraySlice<UInt8>) -> Bool in
            body(inner)
            return true
        }
    }
}
