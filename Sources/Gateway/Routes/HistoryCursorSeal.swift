import Access
import Crypto
import Store

/// `/api/history`'s cursors as clients see them. A page ends at a row number of the whole
/// store (``HistoryCursor``), which would tell a caller how many requests everyone made, so
/// it goes out encrypted and authenticated for the one caller it was made for: 32 base64url
/// characters, deterministic authenticated encryption in the shape of SIV (RFC 5297) built
/// from HMAC-SHA-256 alone. The tag is a MAC of the caller's id and the position; the
/// position is XORed with a keystream drawn from the tag.
///
/// The key is the store's (``HistoryStore/historyCursorKey``), so a cursor stays good across
/// restarts and on every gateway of a shared store; one altered, made up, from another store
/// or handed out to another caller does not open.
struct HistoryCursorSeal: Sendable {
    private let encryptionKey: [UInt8]
    private let authenticationKey: [UInt8]

    static let tagCount = 16
    private static let positionCount = 8
    /// base64url of the tag and the position, unpadded.
    static let textCount = 32

    /// Two keys from the store's one, each for one use.
    init(key: [UInt8]) {
        encryptionKey = HMAC.sha256(key: key, message: Array("textgateway history cursor: encryption".utf8))
        authenticationKey = HMAC.sha256(key: key, message: Array("textgateway history cursor: authentication".utf8))
    }

    /// The text a client gets for `cursor`.
    func seal(_ cursor: HistoryCursor, userID: String) -> String {
        let position = (0..<Self.positionCount).map {
            UInt8(truncatingIfNeeded: cursor.sequence >> (8 * (Self.positionCount - 1 - $0)))
        }
        let tag = tag(userID: userID, position: position)
        return Base64URL.encode(tag + zip(position, keystream(tag)).map { $0 ^ $1 })
    }

    /// The cursor `text` holds, or nil when it is not one this store sealed for `userID`.
    func open(_ text: some StringProtocol, userID: String) -> HistoryCursor? {
        guard text.utf8.count == Self.textCount, let sealed = Base64URL.decode(text.utf8),
            sealed.count == Self.tagCount + Self.positionCount
        else { return nil }
        let tag = Array(sealed[..<Self.tagCount])
        let position = zip(sealed[Self.tagCount...], keystream(tag)).map { $0 ^ $1 }
        guard ConstantTime.equals(self.tag(userID: userID, position: position), tag) else { return nil }
        let sequence = position.reduce(Int64(0)) { $0 << 8 | Int64($1) }
        return sequence > 0 ? HistoryCursor(sequence: sequence) : nil
    }

    /// The caller's id, a byte no id holds, then the position (of a fixed length).
    private func tag(userID: String, position: [UInt8]) -> [UInt8] {
        Array(HMAC.sha256(key: authenticationKey, message: Array(userID.utf8) + [0] + position).prefix(Self.tagCount))
    }

    private func keystream(_ tag: [UInt8]) -> [UInt8] {
        Array(HMAC.sha256(key: encryptionKey, message: tag).prefix(Self.positionCount))
    }
}
