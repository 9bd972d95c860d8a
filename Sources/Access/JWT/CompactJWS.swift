package import JSON

/// A JWT in the JWS compact serialization (RFC 7515 §7.1): `header.payload.signature`,
/// each part base64url without padding. Parsing reads the header only; the claims are
/// parsed as JSON only after the signature has been checked (``claims()``).
package struct CompactJWS {
    package let header: JWTHeader
    /// `header.payload`, the bytes the signature covers.
    let signingInput: ArraySlice<UInt8>
    /// The payload, decoded.
    let payload: [UInt8]
    let signature: [UInt8]

    /// Whether `token` is meant as a JWT — it starts `eyJ` (base64url of `{"`) and has a dot —
    /// so it is verified, and refused as malformed when it is not three parts, rather than
    /// looked up as a gateway token. (A `tgk_` store token has neither.)
    package static func looksLikeJWT(_ token: [UInt8]) -> Bool {
        token.count > 3 && token[0] == UInt8(ascii: "e") && token[1] == UInt8(ascii: "y")
            && token[2] == UInt8(ascii: "J")
            && token.contains(UInt8(ascii: "."))
    }

    /// The token's parts and header. Throws ``JWTFailure/malformed(_:)`` for anything but
    /// exactly three parts, canonical base64url and a header that is one strict JSON object.
    package static func parse(_ token: [UInt8]) throws(JWTFailure) -> CompactJWS {
        guard let first = token.firstIndex(of: UInt8(ascii: ".")) else { throw .malformed("not three parts") }
        guard let second = token[(first + 1)...].firstIndex(of: UInt8(ascii: ".")),
            !token[(second + 1)...].contains(UInt8(ascii: "."))
        else { throw .malformed("not three parts") }
        let headerPart = token[..<first]
        let payloadPart = token[(first + 1)..<second]
        guard !headerPart.isEmpty, !payloadPart.isEmpty else { throw .malformed("an empty header or payload") }
        guard let headerBytes = Base64URL.decode(headerPart) else { throw .malformed("the header is not base64url") }
        guard let signature = Base64URL.decode(token[(second + 1)...]) else {
            throw .malformed("the signature is not base64url")
        }
        guard let payload = Base64URL.decode(payloadPart) else { throw .malformed("the payload is not base64url") }
        return CompactJWS(
            header: try JWTHeader.parse(headerBytes), signingInput: token[..<second], payload: payload,
            signature: signature)
    }

    /// The claims set: the payload as one strict JSON object.
    package func claims() throws(JWTFailure) -> JWTClaims {
        try JWTClaims.parse(payload)
    }
}

/// The JOSE header of a JWS: what the verifier needs of it.
package struct JWTHeader: Equatable {
    /// `alg` as written.
    package let algorithmName: String
    /// `kid`, when present.
    package let keyID: String?
    /// `typ`, when present.
    package let type: String?
    /// Whether `crit` is present (the gateway implements no extension, so any is refused).
    package let hasCritical: Bool

    /// The algorithm, when it is one the gateway implements.
    package var algorithm: JWTAlgorithm? { JWTAlgorithm(rawValue: algorithmName) }

    /// Whether `typ` allows this token: absent, `JWT`, or an access token's `at+jwt`
    /// (RFC 9068), with or without `application/`, in any case (RFC 7515 §4.1.9).
    var hasAcceptableType: Bool {
        guard var type = type?.lowercased() else { return true }
        if type.hasPrefix("application/") { type.removeFirst("application/".count) }
        return type == "jwt" || type == "at+jwt"
    }

    static func parse(_ bytes: [UInt8]) throws(JWTFailure) -> JWTHeader {
        guard let value = try? JSONValue.parse(bytes, maximumDepth: 8), case .object(let members) = value else {
            throw .malformed("the header is not a JSON object")
        }
        guard case .string(let algorithm)? = members["alg"] else { throw .malformed("the header has no alg") }
        func optionalString(_ name: String) throws(JWTFailure) -> String? {
            switch members[name] {
            case nil: return nil
            case .string(let text)?: return text
            default: throw .malformed("the header's \(name) is not a string")
            }
        }
        return JWTHeader(
            algorithmName: algorithm, keyID: try optionalString("kid"), type: try optionalString("typ"),
            hasCritical: members["crit"] != nil
        )
    }
}

/// The claims set of a verified token (RFC 7519 §4).
package struct JWTClaims {
    let members: [String: JSONValue]

    static func parse(_ bytes: [UInt8]) throws(JWTFailure) -> JWTClaims {
        // JSONValue.parse is I-JSON: a claim named twice is an error, not "the last one wins"
        // (RFC 7519 §4 lets a parser do either; two readers must never disagree on a claim).
        guard let value = try? JSONValue.parse(bytes, maximumDepth: 32), case .object(let members) = value else {
            throw .malformed("the claims are not one JSON object")
        }
        return JWTClaims(members: members)
    }

    package subscript(name: String) -> JSONValue? { members[name] }

    /// A NumericDate claim (seconds since the epoch); nil when absent. Anything but a number
    /// is malformed.
    func date(_ name: String) throws(JWTFailure) -> Double? {
        switch members[name] {
        case nil: return nil
        case .number(let seconds)?: return seconds
        default: throw .malformed("\(name) is not a number")
        }
    }

    /// The value at a dotted path (`plan`, `app_metadata.plan`).
    func value(at path: [String]) -> JSONValue? {
        guard let first = path.first else { return nil }
        var value = members[first]
        for name in path.dropFirst() { value = value?[name] }
        return value
    }
}
