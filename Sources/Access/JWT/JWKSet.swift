import Crypto
import JSON

/// A JWK Set (RFC 7517 §5), as read from `JWT_JWKS_FILE` or `JWT_JWKS_URL`: the signing
/// keys the gateway can use, by `kid`.
///
/// Identity services publish more than signing keys of our algorithms (encryption keys,
/// RSA-PSS or EdDSA keys, certificates); such entries are skipped and counted, not an
/// error, so a provider adding one does not take sign-in down. An entry of a supported
/// type that is broken (a bad modulus, a point off the curve, a `kid` used twice) makes
/// the whole set invalid: a set that is half read would refuse tokens it should accept.
package struct JWKSet: Sendable {
    /// The usable keys, in document order.
    package let keys: [JWTKey]
    /// Entries that are not RSA or P-256 signing keys for RS256 / ES256.
    package let skipped: Int
    private let byID: [String: Int]

    /// The most bytes a key set may have (a provider's set is a few KiB).
    package static let maximumBytes = 1 << 20
    /// The most keys a set may hold.
    package static let maximumKeys = 100

    package init(keys: [JWTKey], skipped: Int = 0) {
        self.keys = keys
        self.skipped = skipped
        var byID: [String: Int] = [:]
        for (index, key) in keys.enumerated() { if let id = key.id, byID[id] == nil { byID[id] = index } }
        self.byID = byID
    }

    /// The key for a token signed with `algorithm` naming `kid`.
    ///
    /// With a `kid`, only the key with that id can verify, and only when it is a key for
    /// `algorithm`. Without one, the set's only key for `algorithm` does, if it has exactly one.
    func key(id kid: String?, algorithm: JWTAlgorithm) -> Result<JWTKey, JWTFailure> {
        if let kid {
            guard let index = byID[kid] else { return .failure(.unknownKey) }
            let key = keys[index]
            return key.algorithm == algorithm ? .success(key) : .failure(.keyMismatch)
        }
        let candidates = keys.filter { $0.algorithm == algorithm }
        guard candidates.count == 1 else { return .failure(.unknownKey) }
        return .success(candidates[0])
    }

    /// Whether a key has `kid`.
    package func contains(id kid: String) -> Bool { byID[kid] != nil }

    /// Parses a JWK Set document: strict JSON, an object with a `keys` array.
    package static func parse(_ bytes: [UInt8]) throws(JWKSetError) -> JWKSet {
        guard bytes.count <= maximumBytes else { throw JWKSetError("the key set is larger than \(maximumBytes) bytes") }
        let document: JSONValue
        do {
            document = try JSONValue.parse(bytes, maximumDepth: 8)
        } catch {
            throw JWKSetError("not JSON (\(error))")
        }
        guard case .array(let entries)? = document["keys"] else { throw JWKSetError("no \"keys\" array") }
        guard entries.count <= maximumKeys else { throw JWKSetError("more than \(maximumKeys) keys") }
        var keys: [JWTKey] = []
        var skipped = 0
        var ids: Set<String> = []
        for (index, entry) in entries.enumerated() {
            guard case .object = entry else { throw JWKSetError("key \(index + 1) is not an object") }
            guard let key = try parseKey(entry, position: index + 1) else {
                skipped += 1
                continue
            }
            if let id = key.id {
                guard ids.insert(id).inserted else { throw JWKSetError("key \(index + 1): kid is used twice") }
            }
            keys.append(key)
        }
        return JWKSet(keys: keys, skipped: skipped)
    }

    /// The key an entry describes; nil for an entry of another type or purpose.
    private static func parseKey(_ entry: JSONValue, position: Int) throws(JWKSetError) -> JWTKey? {
        func string(_ name: String) throws(JWKSetError) -> String? {
            switch entry[name] {
            case nil: return nil
            case .string(let value)?: return value
            default: throw JWKSetError("key \(position): \(name) is not a string")
            }
        }
        func bytes(_ name: String) throws(JWKSetError) -> [UInt8] {
            guard let text = try string(name), let decoded = Base64URL.decode(text.utf8), !decoded.isEmpty else {
                throw JWKSetError("key \(position): \(name) is missing or not base64url")
            }
            return decoded
        }
        if let use = try string("use"), use != "sig" { return nil }
        if case .array(let operations)? = entry["key_ops"], !operations.contains(.string("verify")) { return nil }
        let kid = try string("kid")
        let declared = try string("alg")
        let algorithm: JWTAlgorithm
        let components: PublicKeyComponents
        switch try string("kty") {
        case "RSA":
            guard declared == nil || declared == JWTAlgorithm.rs256.rawValue else { return nil }
            algorithm = .rs256
            components = .rsa(modulus: try bytes("n"), exponent: try bytes("e"))
        case "EC":
            guard try string("crv") == "P-256", declared == nil || declared == JWTAlgorithm.es256.rawValue else {
                return nil
            }
            algorithm = .es256
            components = .p256(x: try bytes("x"), y: try bytes("y"))
        case nil:
            throw JWKSetError("key \(position) has no kty")
        default:
            // "oct" among them: a shared secret never comes from a key set.
            return nil
        }
        do {
            let key = try JWTKey(id: kid, components: components)
            assert(key.algorithm == algorithm)
            return key
        } catch {
            throw JWKSetError("key \(position)\(kid.map { " (kid \($0))" } ?? ""): \(error.reason)")
        }
    }
}

/// Why a key set cannot be used. Says where, never a key's bytes.
package struct JWKSetError: Error, Sendable, Hashable, CustomStringConvertible {
    package let message: String
    init(_ message: String) { self.message = message }
    package var description: String { message }
}
