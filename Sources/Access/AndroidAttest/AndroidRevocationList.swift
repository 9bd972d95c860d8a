import JSON

/// Google's attestation revocation list (the JSON at
/// `https://android.googleapis.com/attestation/status`): certificates by serial number, each
/// `REVOKED` or `SUSPENDED`.
///
/// ```json
/// {"entries": {"2c8cdddfd5e03bfc": {"status": "REVOKED", "reason": "KEY_COMPROMISE"}}}
/// ```
///
/// Serials are lowercase hexadecimal without leading zeros, as ``Crypto/X509Certificate/serialHex``
/// writes them. Both statuses refuse a chain, and so does a status this reader does not know:
/// an entry is on the list for a reason.
package struct AndroidRevocationList: Sendable, Equatable {
    /// The listed serials.
    package let serials: Set<String>

    /// The most a list may weigh: Google's holds a few thousand entries in well under this.
    package static let maximumBytes = 16 << 20

    /// No certificate revoked.
    package static let empty = AndroidRevocationList(serials: [])

    package init(serials: Set<String>) {
        self.serials = serials
    }

    /// The list of the JSON `bytes`; throws unless it is an object whose `entries` is an
    /// object of objects, each with a string `status`, and no larger than ``maximumBytes``.
    package init(json bytes: [UInt8]) throws(RevocationListError) {
        guard bytes.count <= Self.maximumBytes else { throw RevocationListError("the list is larger than 16 MiB") }
        guard let document = try? JSONValue.parse(bytes) else { throw RevocationListError("the list is not JSON") }
        guard case .object(let entries)? = document["entries"] else {
            throw RevocationListError("the list has no \"entries\" object")
        }
        var serials = Set<String>()
        serials.reserveCapacity(entries.count)
        for (serial, entry) in entries {
            guard entry["status"]?.stringValue != nil else {
                throw RevocationListError("an entry has no \"status\" string")
            }
            serials.insert(Self.normalized(serial))
        }
        self.serials = serials
    }

    /// Google writes lowercase without leading zeros; a list edited by hand may not.
    static func normalized(_ serial: String) -> String {
        let lower = serial.lowercased()
        let trimmed = lower.drop { $0 == "0" }
        return trimmed.isEmpty && !lower.isEmpty ? "0" : String(trimmed)
    }

    /// Whether a certificate with this serial is refused.
    package func refuses(serialHex: String) -> Bool { serials.contains(serialHex) }
}

/// Why a revocation list was not taken; never holds the list's content.
package struct RevocationListError: Error, Equatable, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
