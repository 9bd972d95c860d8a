// libFuzzer target for the Android Key Attestation extension's reader: the bounded DER walker
// and the KeyDescription on top of it. Every invariant violation traps, which libFuzzer
// reports as a crash with the input saved.
//
// The seeds are the extensions of the real chains' leaves in
// Tests/GatewayTests/Fixtures/android-key-attestation (see the README there): what TEEs of
// attestation versions 2 to 400 write, BER booleans and unsorted sets included.
@testable import Access

/// Walks `input` as a flat run of elements, then into each constructed one, to `depth`: every
/// element's content lies inside its container and after its header, and the walk ends.
private func walk(_ reader: AttestationDER, depth: Int, budget: inout Int) {
    var reader = reader
    var previousEnd = -1
    while budget > 0 {
        budget -= 1
        let element: AttestationDER.Element?
        do {
            element = try reader.next()
        } catch {
            return
        }
        guard let element else { return }
        require(element.content.lowerBound > previousEnd, "an element that does not move forward")
        require(element.content.upperBound <= reader.bytes.count, "content past the bytes")
        previousEnd = element.content.upperBound - 1
        if element.constructed, depth > 0 { walk(reader.reader(of: element), depth: depth - 1, budget: &budget) }
    }
}

private func isSubsequence(_ needle: [UInt8], of haystack: [UInt8]) -> Bool {
    guard !needle.isEmpty else { return true }
    guard needle.count <= haystack.count else { return false }
    for start in 0...(haystack.count - needle.count) where haystack[start..<start + needle.count].elementsEqual(needle)
    {
        return true
    }
    return false
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    var budget = 10_000
    walk(AttestationDER(input), depth: 8, budget: &budget)

    let outcome = Result { () throws(AttestationDER.Malformed) in try KeyDescription.parse(input) }
    require(
        outcome == Result { () throws(AttestationDER.Malformed) in try KeyDescription.parse(input) },
        "parsing is not deterministic")
    guard case .success(let description) = outcome else { return 0 }
    require(input.first == 0x30, "accepted something other than a SEQUENCE")
    require(isSubsequence(description.challenge, of: input), "a challenge that is not in the input")
    for list in [description.softwareEnforced, description.hardwareEnforced] {
        if let application = list.applicationID {
            require(application.packages.count <= KeyDescription.maximumListed, "more packages than the limit")
            require(application.signatureDigests.count <= KeyDescription.maximumListed, "more digests than the limit")
            for digest in application.signatureDigests {
                require(isSubsequence(digest, of: input), "a digest that is not in the input")
            }
        }
    }
    // One structure and nothing else: a byte more, or one less, is refused.
    let longer = Result { () throws(AttestationDER.Malformed) in try KeyDescription.parse(input + [0]) }
    require(longer == .failure(AttestationDER.Malformed()), "accepted bytes after the structure")
    let shorter = Result { () throws(AttestationDER.Malformed) in try KeyDescription.parse(Array(input.dropLast())) }
    require(shorter == .failure(AttestationDER.Malformed()), "accepted a truncated structure")
    return 0
}
