// libFuzzer entry for JSONValue.parse: arbitrary bytes must parse or throw, never crash,
// hang or grow without bound; a document that parses must parse the same way again.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let first = try? JSONValue.parse(bytes)
    let second = try? JSONValue.parse(bytes)
    precondition(first == second, "parsing is not deterministic")
    if let first {
        // Walk the tree; depth is bounded by the parser.
        func count(_ value: JSONValue) -> Int {
            switch value {
            case .array(let items): return items.reduce(1) { $0 + count($1) }
            case .object(let members): return members.values.reduce(1) { $0 + count($1) }
            default: return 1
            }
        }
        precondition(count(first) <= size + 1, "more values than input bytes")
    }
    let shallow = try? JSONValue.parse(bytes, maximumDepth: 2)
    if shallow != nil { precondition(first != nil, "a depth limit accepted what no limit refused") }
    return 0
}
