import CCurl

#if canImport(Glibc)
    import Glibc
#endif

/// One transfer's `CURLOPT_HTTPHEADER` list, built in a single allocation: the list nodes
/// first, then the `name: value` lines they point to. curl only reads the list while the
/// transfer runs, so the owner frees it with ``free()`` when the transfer ends, never with
/// `curl_slist_free_all`.
///
/// Each line is cleaned as it is copied (``HeaderLine``): CR and LF are dropped from the name
/// and the value, and `:` from the name, so a field can never start another line. A field whose value is
/// empty becomes `name:`, which removes curl's own default for it (e.g. `Content-Type`).
/// `Expect:` always ends the list: no 100-continue round trip.
struct CurlHeaderList {
    /// The first node, for `CURLOPT_HTTPHEADER`.
    private(set) var head: UnsafeMutablePointer<curl_slist>?

    private static let trailer: StaticString = "Expect:"

    init(_ fields: [(name: String, value: String)]) {
        let nodes = fields.count + 1
        var textBytes = Self.trailer.utf8CodeUnitCount + 1
        for field in fields { textBytes += field.name.utf8.count + 2 + field.value.utf8.count + 1 }
        let nodeBytes = nodes * MemoryLayout<curl_slist>.stride
        guard let block = malloc(nodeBytes + textBytes) else { return }
        let list = block.bindMemory(to: curl_slist.self, capacity: nodes)
        var text = (block + nodeBytes).bindMemory(to: UInt8.self, capacity: textBytes)
        for (index, field) in fields.enumerated() {
            list[index] = curl_slist(
                data: UnsafeMutableRawPointer(text).assumingMemoryBound(to: CChar.self), next: list + index + 1)
            text = Self.writeLine(name: field.name, value: field.value, to: text)
        }
        UnsafeMutableRawPointer(text).copyMemory(
            from: Self.trailer.utf8Start, byteCount: Self.trailer.utf8CodeUnitCount)
        text[Self.trailer.utf8CodeUnitCount] = 0
        list[nodes - 1] = curl_slist(data: UnsafeMutableRawPointer(text).assumingMemoryBound(to: CChar.self), next: nil)
        head = list
    }

    /// Releases the block; the list must no longer be set on a running transfer.
    mutating func free() {
        Glibc.free(head)
        head = nil
    }

    /// Writes `name: value` (or `name:`) and a NUL at `out`; returns where the next line starts.
    private static func writeLine(name: String, value: String, to out: UnsafeMutablePointer<UInt8>)
        -> UnsafeMutablePointer<UInt8>
    {
        let end = HeaderLine.write((name, value), to: out, emptyValue: .bare) ?? out
        end.pointee = 0
        return end + 1
    }
}
