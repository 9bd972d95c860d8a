// libFuzzer entry for JSONValue.parse: arbitrary bytes must parse or throw, never crash,
// hang or grow without bound; a document that parses must parse the same way again. The
// readings built on the parser must agree with it: the validation without a tree
// (JSONValue.validate), the chosen members of an object (JSONValue.parseMembers), the lenient
// reading (which accepts all the strict one does, and reads it the same), and a chat
// completion read straight from the bytes (ChatCompletionReader) against its reading
// through a JSONValue tree; a stream's chunk read straight from the bytes only from JSON (the
// lenient parse accepts it: keys it does not read may repeat), the same way twice.
@testable import ChatAPI
@testable import JSON

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let first = try? JSONValue.parse(bytes)
    let second = try? JSONValue.parse(bytes)
    require(first == second, "parsing is not deterministic")
    if let first {
        // Walk the tree; depth is bounded by the parser.
        func count(_ value: JSONValue) -> Int {
            switch value {
            case .array(let items): return items.reduce(1) { $0 + count($1) }
            case .object(let members): return members.values.reduce(1) { $0 + count($1) }
            default: return 1
            }
        }
        require(count(first) <= size + 1, "more values than input bytes")
    }
    let shallow = try? JSONValue.parse(bytes, maximumDepth: 2)
    if shallow != nil { require(first != nil, "a depth limit accepted what no limit refused") }
    require(((try? JSONValue.validate(bytes)) != nil) == (first != nil), "validation and the whole parse disagree")
    let lenient = try? JSONValue.parse(bytes, strictness: .lenient)
    if let first { require(lenient == first, "the lenient reading differs on an I-JSON document") }

    let names: [StaticString] = ["id", "choices", "message", "content", "usage"]
    switch (first, Result { () throws(JSONParseError) in try JSONValue.parseMembers(of: bytes, named: names) }) {
    case (nil, .failure): break
    case (.object(let object)?, .success(let found?)):
        require(
            found == [object["id"], object["choices"], object["message"], object["content"], object["usage"]],
            "members differ")
    case (let value?, .success(nil)):
        if case .object = value { require(false, "an object read as not one") }
    default: require(false, "the members reading and the whole parse disagree on validity")
    }

    let fast = try? ChatCompletion(jsonBytes: bytes)
    let general = try? ChatCompletion(jsonValueBytes: bytes)
    require(fast == general, "the two readings of a chat completion disagree")

    let chunk = bytes.withUnsafeBufferPointer { try? ChatCompletionReader.readChunk($0) }
    if chunk != nil { require(lenient != nil, "a chunk read from bytes that are not JSON") }
    require(
        chunk == bytes.withUnsafeBufferPointer { try? ChatCompletionReader.readChunk($0) },
        "chunk reading is not deterministic")
    return 0
}
