// libFuzzer target for App Attest's strict CBOR reader and the authenticator-data parser.
// Every invariant violation traps, which libFuzzer reports as a crash with the input saved.
//
// The input is read three ways: as one CBOR item, as an attestation's authenticator data and
// as an assertion's. When it decodes to a map with `authData` or `authenticatorData` bytes
// (the seeds `attestation` and `assertion` are the real iOS 14.4 objects of
// Tests/GatewayTests/Fixtures/app-attest, see the README there), those bytes are read as
// authenticator data too, so mutations of the objects reach the second parser.
@testable import Access

private let limits = CBORLimits.default

/// The shortest-form encoding of `value`: what the strict reader accepts is exactly this.
private func encode(_ value: CBORValue, into out: inout [UInt8]) {
    func head(_ major: UInt8, _ argument: UInt64) {
        let type = major << 5
        switch argument {
        case ..<24: out.append(type | UInt8(argument))
        case ...0xFF: out += [type | 24, UInt8(argument)]
        case ...0xFFFF: out += [type | 25] + (0..<2).reversed().map { UInt8(truncatingIfNeeded: argument >> ($0 * 8)) }
        case ...0xFFFF_FFFF:
            out += [type | 26] + (0..<4).reversed().map { UInt8(truncatingIfNeeded: argument >> ($0 * 8)) }
        default: out += [type | 27] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: argument >> ($0 * 8)) }
        }
    }
    switch value {
    case .unsigned(let n): head(0, n)
    case .negative(let n): head(1, n)
    case .bytes(let bytes):
        head(2, UInt64(bytes.count))
        out += bytes
    case .text(let text):
        head(3, UInt64(text.utf8.count))
        out += Array(text.utf8)
    case .array(let items):
        head(4, UInt64(items.count))
        for item in items { encode(item, into: &out) }
    case .map(let map):
        head(5, UInt64(map.entries.count))
        for entry in map.entries {
            encode(entry.key, into: &out)
            encode(entry.value, into: &out)
        }
    case .bool(let flag): out.append(flag ? 0xF5 : 0xF4)
    case .null: out.append(0xF6)
    }
}

private func encoded(_ value: CBORValue) -> [UInt8] {
    var out: [UInt8] = []
    encode(value, into: &out)
    return out
}

/// How deep arrays and maps nest in `value`, and how many items it has in all.
private func shape(_ value: CBORValue) -> (depth: Int, items: Int) {
    switch value {
    case .array(let items):
        let inner = items.map(shape)
        return (1 + (inner.map(\.depth).max() ?? 0), 1 + inner.reduce(0) { $0 + $1.items })
    case .map(let map):
        let inner = map.entries.flatMap { [shape($0.key), shape($0.value)] }
        return (1 + (inner.map(\.depth).max() ?? 0), 1 + inner.reduce(0) { $0 + $1.items })
    default:
        return (0, 1)
    }
}

private func checkCBOR(_ input: [UInt8]) -> CBORValue? {
    let outcome = Result { () throws(CBORError) in try CBORReader.decode(input, limits: limits) }
    require(
        outcome == Result { () throws(CBORError) in try CBORReader.decode(input, limits: limits) },
        "decoding is not deterministic")
    let prefix = Result { () throws(CBORError) in try CBORReader.decodePrefix(input, from: 0, limits: limits) }
    switch outcome {
    case .success(let value):
        // One spelling per value: the input is the shortest-form encoding of what it decoded to.
        require(encoded(value) == input, "accepted an encoding that is not the shortest form")
        let (depth, items) = shape(value)
        require(depth <= limits.maximumDepth, "accepted nesting past the limit")
        require(items <= limits.maximumItems, "accepted more items than the limit")
        require(input.count <= limits.maximumBytes, "accepted an input past the size limit")
        guard case .success(let (prefixValue, count)) = prefix else {
            require(false, "decodePrefix refused what decode accepted")
            return value
        }
        require(prefixValue == value && count == input.count, "decodePrefix disagrees with decode")
        // The keys are distinct text or integers, and each is found by lookup.
        if case .map(let map) = value {
            for entry in map.entries {
                switch entry.key {
                case .text(let key): require(map[key] == entry.value, "a text key is not found")
                case .unsigned, .negative:
                    if let key = entry.key.integer, let int = Int(exactly: key) {
                        require(map[int] == entry.value, "an integer key is not found")
                    }
                default: require(false, "accepted a key that is neither text nor an integer")
                }
            }
        }
        return value
    case .failure(let error):
        require(error.offset >= 0 && error.offset <= input.count, "an error offset outside the input")
        switch (error.reason, prefix) {
        case (.trailingBytes, .success(let (_, count))):
            require(count == error.offset && count < input.count, "trailing bytes not where the first item ends")
        case (.trailingBytes, .failure):
            require(false, "trailing bytes after an item decodePrefix refuses")
        case (_, .failure(let prefixError)):
            require(prefixError == error, "decodePrefix refuses for another reason")
        case (_, .success):
            require(false, "decodePrefix accepted what decode refused for a reason other than trailing bytes")
        }
        return nil
    }
}

private func checkAuthenticatorData(_ input: [UInt8], as kind: AuthenticatorData.Kind) {
    let outcome = Result { () throws(AuthenticatorDataError) in
        try AuthenticatorData.parse(input, as: kind, limits: limits)
    }
    switch outcome {
    case .success(let data):
        require(data.raw == input, "raw bytes are not the input")
        require(input.count >= AuthenticatorData.fixedByteCount, "accepted data shorter than its fixed fields")
        require(data.rpIdHash == Array(input[0..<32]) && data.flags == input[32], "fixed fields misread")
        require(data.signCount == input[33..<37].reduce(0) { $0 << 8 | UInt32($1) }, "counter misread")
        // Written back from its parts, the data is the input.
        var rebuilt = data.rpIdHash + [data.flags] + Array(input[33..<37])
        switch (kind, data.attestedCredential) {
        case (.attestation, let credential?):
            require(data.flags & AuthenticatorData.attestedCredentialFlag != 0, "accepted an attestation without AT")
            require(credential.aaguid.count == 16, "an AAGUID that is not 16 bytes")
            rebuilt +=
                credential.aaguid + [
                    UInt8(credential.credentialId.count >> 8), UInt8(credential.credentialId.count & 0xFF),
                ]
            rebuilt += credential.credentialId + encoded(.map(credential.publicKey))
        case (.assertion, nil):
            break
        default:
            require(false, "credential data present in an assertion or absent from an attestation")
        }
        if let extensions = data.extensions {
            rebuilt += encoded(.map(extensions))
        } else {
            require(data.flags & AuthenticatorData.extensionDataFlag == 0, "accepted ED without extensions")
        }
        require(rebuilt == input, "the parts do not make up the data")
    case .failure(let error):
        require(error.offset >= 0 && error.offset <= input.count, "an error offset outside the input")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let value = checkCBOR(input)
    checkAuthenticatorData(input, as: .attestation)
    checkAuthenticatorData(input, as: .assertion)
    if let map = value?.map {
        if let authData = map["authData"]?.bytes { checkAuthenticatorData(authData, as: .attestation) }
        if let authData = map["authenticatorData"]?.bytes { checkAuthenticatorData(authData, as: .assertion) }
    }
    return 0
}
