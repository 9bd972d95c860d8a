import Crypto
import Store
import Testing

@testable import Access
@testable import Gateway

@Suite("History cursors as clients see them: sealed for one caller with the store's key")
struct HistoryCursorSealTests {
    static let key = Array(0..<32).map { UInt8($0) }
    static let seal = HistoryCursorSeal(key: key)

    @Test(
        "a cursor opens for the caller it was sealed for, and hides its row number",
        arguments: [Int64(1), 2, 41, 4_711, 1 << 40, .max])
    func roundTrip(_ sequence: Int64) throws {
        let text = Self.seal.seal(HistoryCursor(sequence: sequence), userID: "alice")
        #expect(text.utf8.count == HistoryCursorSeal.textCount)
        #expect(Self.seal.open(text, userID: "alice") == HistoryCursor(sequence: sequence))
        // The same position seals the same way: a cursor is stable, page after page.
        #expect(Self.seal.seal(HistoryCursor(sequence: sequence), userID: "alice") == text)
        #expect(Int(text) == nil)
        // Nothing of the number shows through: neighbours share no prefix beyond chance.
        let next = Self.seal.seal(HistoryCursor(sequence: sequence &- 1 == 0 ? 2 : sequence - 1), userID: "alice")
        #expect(text.prefix(4) != next.prefix(4))
    }

    @Test("another caller's cursor, another store's, or a decimal row number does not open")
    func foreign() {
        let text = Self.seal.seal(HistoryCursor(sequence: 42), userID: "alice")
        #expect(Self.seal.open(text, userID: "bob") == nil)
        #expect(Self.seal.open(text, userID: "alice ") == nil)
        #expect(HistoryCursorSeal(key: Array(repeating: 7, count: 32)).open(text, userID: "alice") == nil)
        for made in [
            "", "42", "0", "-1", String(repeating: "A", count: 32), String(repeating: "A", count: 31), text + "A",
            String(text.dropLast()),
            "+" + text.dropFirst(), text + "=", " " + text.dropLast(),
        ] {
            #expect(Self.seal.open(made, userID: "alice") == nil, "\(made)")
        }
    }

    @Test("changing any bit of a cursor makes it refused")
    func tampered() throws {
        let text = Self.seal.seal(HistoryCursor(sequence: 123_456), userID: "alice")
        let bytes = try #require(Base64URL.decode(text.utf8))
        for index in bytes.indices {
            for bit in 0..<8 {
                var changed = bytes
                changed[index] ^= 1 << bit
                #expect(Self.seal.open(Base64URL.encode(changed), userID: "alice") == nil, "byte \(index) bit \(bit)")
            }
        }
    }
}
