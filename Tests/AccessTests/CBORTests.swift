import AccessTestSupport
import Testing

@testable import Access

@Suite("CBOR reader")
struct CBORTests {
    struct ValidCase: CustomTestStringConvertible, Sendable {
        var name: String
        var bytes: [UInt8]
        var value: CBORValue

        init(_ name: String, _ bytes: [UInt8], _ value: CBORValue) {
            self.name = name
            self.bytes = bytes
            self.value = value
        }

        var testDescription: String { name }
    }

    struct ErrorCase: CustomTestStringConvertible, Sendable {
        var name: String
        var bytes: [UInt8]
        var error: CBORError

        init(_ name: String, _ bytes: [UInt8], _ reason: CBORError.Reason, at offset: Int) {
            self.name = name
            self.bytes = bytes
            self.error = CBORError(reason, at: offset)
        }

        var testDescription: String { name }
    }

    static let valid: [ValidCase] = [
        ValidCase("0", [0x00], .unsigned(0)),
        ValidCase("23, the largest in the initial byte", [0x17], .unsigned(23)),
        ValidCase("24, the smallest in one more byte", [0x18, 0x18], .unsigned(24)),
        ValidCase("255", [0x18, 0xFF], .unsigned(255)),
        ValidCase("256", [0x19, 0x01, 0x00], .unsigned(256)),
        ValidCase("65535", [0x19, 0xFF, 0xFF], .unsigned(65_535)),
        ValidCase("65536", [0x1A, 0x00, 0x01, 0x00, 0x00], .unsigned(65_536)),
        ValidCase("2^32 - 1", [0x1A, 0xFF, 0xFF, 0xFF, 0xFF], .unsigned(4_294_967_295)),
        ValidCase("2^32", [0x1B, 0, 0, 0, 1, 0, 0, 0, 0], .unsigned(4_294_967_296)),
        ValidCase("2^64 - 1", [0x1B] + [UInt8](repeating: 0xFF, count: 8), .unsigned(UInt64.max)),
        ValidCase("-1", [0x20], .negative(0)),
        ValidCase("-24", [0x37], .negative(23)),
        ValidCase("-25", [0x38, 0x18], .negative(24)),
        ValidCase("-2^64", [0x3B] + [UInt8](repeating: 0xFF, count: 8), .negative(UInt64.max)),
        ValidCase("an empty byte string", [0x40], .bytes([])),
        ValidCase("a byte string", [0x43, 0x01, 0x02, 0x03], .bytes([1, 2, 3])),
        ValidCase("an empty text", [0x60], .text("")),
        ValidCase("a text", [0x63, 0x66, 0x6D, 0x74], .text("fmt")),
        ValidCase("a text beyond ASCII", [0x62, 0xC3, 0xA9], .text("é")),
        ValidCase("an empty array", [0x80], .array([])),
        ValidCase("an array", [0x83, 0x01, 0x20, 0x40], .array([.unsigned(1), .negative(0), .bytes([])])),
        ValidCase("an empty map", [0xA0], .map(CBORMap([]))),
        ValidCase(
            "a map with text and integer keys, in written order",
            [0xA3, 0x61, 0x62, 0x01, 0x01, 0x02, 0x20, 0xF6],
            .map(CBORMap([(.text("b"), .unsigned(1)), (.unsigned(1), .unsigned(2)), (.negative(0), .null)]))
        ),
        ValidCase("false", [0xF4], .bool(false)),
        ValidCase("true", [0xF5], .bool(true)),
        ValidCase("null", [0xF6], .null),
    ]

    @Test("decodes each kind of item", arguments: valid)
    func decodes(_ test: ValidCase) throws {
        #expect(try CBORReader.decode(test.bytes) == test.value)
    }

    static let refused: [ErrorCase] = [
        ErrorCase("no bytes", [], .truncated, at: 0),
        ErrorCase("a head missing its argument", [0x19, 0x01], .truncated, at: 0),
        ErrorCase("a byte string shorter than its length", [0x43, 0x01, 0x02], .truncated, at: 0),
        ErrorCase("an array claiming more items than bytes left", [0x82, 0x01], .truncated, at: 0),
        ErrorCase("an array missing an item", [0x82, 0x81, 0x00], .truncated, at: 3),
        ErrorCase("a map missing a value", [0xA1, 0x61, 0x61], .truncated, at: 3),
        ErrorCase("an indefinite byte string", [0x5F, 0x41, 0x00, 0xFF], .indefiniteLength, at: 0),
        ErrorCase("an indefinite text", [0x7F, 0x61, 0x61, 0xFF], .indefiniteLength, at: 0),
        ErrorCase("an indefinite array", [0x9F, 0x01, 0xFF], .indefiniteLength, at: 0),
        ErrorCase("an indefinite map", [0xBF, 0xFF], .indefiniteLength, at: 0),
        ErrorCase("a break outside an indefinite item", [0x81, 0xFF], .indefiniteLength, at: 1),
        ErrorCase("a tag", [0xC0, 0x60], .tag, at: 0),
        ErrorCase("a tag inside a map", [0xA1, 0x61, 0x61, 0xD8, 0x18, 0x40], .tag, at: 3),
        ErrorCase("undefined", [0xF7], .unsupportedSimple, at: 0),
        ErrorCase("a simple value in the initial byte", [0xE0], .unsupportedSimple, at: 0),
        ErrorCase("a simple value in one more byte", [0xF8, 0x20], .unsupportedSimple, at: 0),
        ErrorCase("a half-precision float", [0xF9, 0x3C, 0x00], .unsupportedSimple, at: 0),
        ErrorCase("a single-precision float", [0xFA, 0x3F, 0x80, 0x00, 0x00], .unsupportedSimple, at: 0),
        ErrorCase("a double-precision float", [0xFB, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0], .unsupportedSimple, at: 0),
        ErrorCase("a text with a byte that is never UTF-8", [0x61, 0xFF], .invalidUTF8, at: 0),
        ErrorCase("a text with an overlong form", [0x62, 0xC0, 0x80], .invalidUTF8, at: 0),
        ErrorCase("a text with a surrogate", [0x63, 0xED, 0xA0, 0x80], .invalidUTF8, at: 0),
        ErrorCase("a text cut inside a character", [0x81, 0x61, 0xC3], .invalidUTF8, at: 1),
        ErrorCase("a text key twice", [0xA2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02], .duplicateKey, at: 4),
        ErrorCase("an integer key twice", [0xA2, 0x20, 0x00, 0x20, 0x01], .duplicateKey, at: 3),
        ErrorCase("a byte-string key", [0xA1, 0x41, 0x00, 0x00], .badKey, at: 1),
        ErrorCase("an array key", [0xA1, 0x80, 0x00], .badKey, at: 1),
        ErrorCase("a null key", [0xA1, 0xF6, 0x00], .badKey, at: 1),
        ErrorCase("a second item", [0x00, 0x00], .trailingBytes, at: 1),
        ErrorCase("a byte after a map", [0xA0, 0xFF], .trailingBytes, at: 1),
        ErrorCase("info 28", [0x1C], .reservedInfo, at: 0),
        ErrorCase("info 29 in a length", [0x5D], .reservedInfo, at: 0),
        ErrorCase("info 30 in a simple value", [0xFE], .reservedInfo, at: 0),
        ErrorCase("23 in one more byte", [0x18, 0x17], .nonShortestForm, at: 0),
        ErrorCase("255 in two more bytes", [0x19, 0x00, 0xFF], .nonShortestForm, at: 0),
        ErrorCase("65535 in four more bytes", [0x1A, 0x00, 0x00, 0xFF, 0xFF], .nonShortestForm, at: 0),
        ErrorCase("2^32 - 1 in eight more bytes", [0x1B, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF], .nonShortestForm, at: 0),
        ErrorCase("-1 in one more byte", [0x38, 0x00], .nonShortestForm, at: 0),
        ErrorCase("a length in a wider form", [0x58, 0x01, 0x00], .nonShortestForm, at: 0),
        ErrorCase("an array count in a wider form", [0x98, 0x00], .nonShortestForm, at: 0),
    ]

    @Test("refuses what strict CBOR does not allow, saying where", arguments: refused)
    func refuses(_ test: ErrorCase) {
        #expect(throws: test.error) { try CBORReader.decode(test.bytes) }
    }

    /// Were the claimed count allocated first, each of these would ask for terabytes and trap.
    @Test(
        "a length or count larger than the bytes left is refused before anything is allocated",
        arguments: [
            [0x9B, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00] + [UInt8](repeating: 0x00, count: 64), // 2^40 items
            [0x9B] + [UInt8](repeating: 0xFF, count: 8), // 2^64 - 1 items
            [0xBB, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00], // 2^63 - 1 entries
            [0x5B] + [UInt8](repeating: 0xFF, count: 8), // a byte string of 2^64 - 1 bytes
            [0x7B, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x61], // a text of 2^40 bytes
            [0x81, 0x9A, 0x00, 0x01, 0x00, 0x00], // an array of 65536 items inside one
        ] as [[UInt8]]
    )
    func hugeClaims(bytes: [UInt8]) {
        let error = #expect(throws: CBORError.self) { try CBORReader.decode(bytes) }
        #expect(error?.reason == .truncated)
    }

    @Test("a map's count is checked against two bytes an entry")
    func mapCountNeedsTwoBytesEach() {
        // 2 entries claimed, 3 bytes left: enough for 3 items, not for 2 pairs.
        #expect(throws: CBORError(.truncated, at: 0)) { try CBORReader.decode([0xA2, 0x00, 0x00, 0x00]) }
    }

    /// `depth` arrays, one inside another, the innermost empty.
    static func nested(_ depth: Int) -> [UInt8] {
        [UInt8](repeating: 0x81, count: depth - 1) + [0x80]
    }

    @Test("16 nested arrays and maps are read, a 17th is refused")
    func nestingLimit() throws {
        var value = try CBORReader.decode(Self.nested(16))
        var depth = 0
        while let items = value.array {
            depth += 1
            guard let first = items.first else { break }
            value = first
        }
        #expect(depth == 16)
        #expect(throws: CBORError(.tooDeep, at: 16)) { try CBORReader.decode(Self.nested(17)) }
        // Maps count as arrays do: {0: {0: []}} is three deep.
        let maps = [UInt8]([0xA1, 0x00]) + [0xA1, 0x00] + [0x80]
        #expect(throws: CBORError(.tooDeep, at: 4)) { try CBORReader.decode(maps, limits: CBORLimits(maximumDepth: 2)) }
        #expect(throws: Never.self) { try CBORReader.decode(maps, limits: CBORLimits(maximumDepth: 3)) }
    }

    @Test("a deep input past any stack is refused at the limit, not by a crash")
    func deepInput() {
        #expect(throws: CBORError(.tooDeep, at: 16)) { try CBORReader.decode(Self.nested(60_000)) }
    }

    @Test("the items in all, keys and containers included, are bounded")
    func itemLimit() throws {
        let limits = CBORLimits(maximumItems: 4)
        // [1, [2]]: four items.
        #expect(
            try CBORReader.decode([0x82, 0x01, 0x81, 0x02], limits: limits)
                == .array([.unsigned(1), .array([.unsigned(2)])]))
        // [1, [2, 3]]: five; the inner count is refused when read.
        #expect(throws: CBORError(.tooManyItems, at: 2)) {
            try CBORReader.decode([0x82, 0x01, 0x82, 0x02, 0x03], limits: limits)
        }
        // {1: 2, 3: 4}: five with the map.
        #expect(throws: CBORError(.tooManyItems, at: 0)) {
            try CBORReader.decode([0xA2, 0x01, 0x02, 0x03, 0x04], limits: limits)
        }
        // The default: 4096. An array of 4095 zeros is 4096 items; one more is refused at once.
        #expect(try CBORReader.decode([0x99, 0x0F, 0xFF] + [UInt8](repeating: 0, count: 4_095)).array?.count == 4_095)
        #expect(throws: CBORError(.tooManyItems, at: 0)) {
            try CBORReader.decode([0x99, 0x10, 0x00] + [UInt8](repeating: 0, count: 4_096))
        }
    }

    @Test("an input longer than the size limit is refused before parsing")
    func sizeLimit() throws {
        // A byte string that fills 64 KiB exactly, then one byte more.
        let fits = [0x59, 0xFF, 0xFD] + [UInt8](repeating: 0x41, count: 65_533)
        #expect(try CBORReader.decode(fits).bytes?.count == 65_533)
        let over = [0x59, 0xFF, 0xFE] + [UInt8](repeating: 0x41, count: 65_534)
        #expect(throws: CBORError(.tooLarge, at: 0)) { try CBORReader.decode(over) }
        // Checked before the first byte is read: even a malformed input is "too large".
        #expect(throws: CBORError(.tooLarge, at: 0)) {
            try CBORReader.decode([0xFF, 0xFF], limits: CBORLimits(maximumBytes: 1))
        }
    }

    @Test("decodePrefix reads one item and says how many bytes it took")
    func prefix() throws {
        let bytes: [UInt8] = [0xFF, 0xA1, 0x01, 0x02, 0x63, 0x61, 0x62, 0x63]
        let (map, mapLength) = try CBORReader.decodePrefix(bytes, from: 1)
        #expect(map == .map(CBORMap([(.unsigned(1), .unsigned(2))])))
        #expect(mapLength == 3)
        let (text, textLength) = try CBORReader.decodePrefix(bytes, from: 4)
        #expect(text == .text("abc"))
        #expect(textLength == 4)
        // Offsets count from the start of the bytes, not from `start`.
        #expect(throws: CBORError(.truncated, at: 4)) { try CBORReader.decodePrefix(Array(bytes[0..<7]), from: 4) }
        #expect(throws: CBORError(.indefiniteLength, at: 0)) { try CBORReader.decodePrefix(bytes, from: 0) }
        #expect(throws: CBORError(.truncated, at: 8)) { try CBORReader.decodePrefix(bytes, from: 8) }
        #expect(throws: CBORError(.truncated, at: 8)) { try CBORReader.decodePrefix(bytes, from: 9) }
        #expect(throws: CBORError(.truncated, at: 0)) { try CBORReader.decodePrefix(bytes, from: -1) }
    }

    @Test("map lookups by text and by integer key, negative ones included")
    func mapLookups() throws {
        // A COSE key's shape: {1: 2, 3: -7, -1: 1, -2: h'01', -3: h'02', "x": true}
        let bytes: [UInt8] = [
            0xA6, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x41, 0x01, 0x22, 0x41, 0x02, 0x61, 0x78, 0xF5,
        ]
        let map = try #require(try CBORReader.decode(bytes).map)
        #expect(map[1] == .unsigned(2))
        #expect(map[3]?.integer == -7)
        #expect(map[-1] == .unsigned(1))
        #expect(map[-2]?.bytes == [0x01])
        #expect(map[-3]?.bytes == [0x02])
        #expect(map[2] == nil)
        #expect(map[-4] == nil)
        #expect(map[Int.min] == nil)
        #expect(map["x"] == .bool(true))
        #expect(map["y"] == nil)
        // A text key "1" is not the integer key 1.
        #expect(map["1"] == nil)
    }

    @Test("integer reads what fits an Int64, and nothing else")
    func integers() {
        #expect(CBORValue.unsigned(UInt64(Int64.max)).integer == Int64.max)
        #expect(CBORValue.unsigned(UInt64(Int64.max) + 1).integer == nil)
        #expect(CBORValue.negative(UInt64(Int64.max)).integer == Int64.min)
        #expect(CBORValue.negative(UInt64(Int64.max) + 1).integer == nil)
        #expect(CBORValue.text("1").integer == nil)
        #expect(CBORValue.bytes([1]).text == nil)
    }

    @Test("text keys that differ in bytes are different keys, even when canonically equivalent")
    func textKeysCompareBytes() throws {
        // "é" precomposed (C3 A9) and decomposed (65 CC 81): Swift's == calls them equal.
        let bytes: [UInt8] = [0xA2, 0x62, 0xC3, 0xA9, 0x01, 0x63, 0x65, 0xCC, 0x81, 0x02]
        let map = try #require(try CBORReader.decode(bytes).map)
        #expect(map["\u{E9}"] == .unsigned(1))
        #expect(map["e\u{301}"] == .unsigned(2))
        #expect(CBORValue.text("\u{E9}") != CBORValue.text("e\u{301}"))
    }

    @Test("an error says its reason and offset, and nothing of the input")
    func errorDescription() {
        #expect("\(CBORError(.duplicateKey, at: 4))" == "CBOR duplicateKey at byte 4")
    }

    @Test("the real attestation object decodes to fmt, attStmt and authData")
    func realAttestation() throws {
        let fixture = try AppAttestFixture.load()
        let object = try #require(try CBORReader.decode(fixture.attestation).map)
        #expect(object.entries.map { $0.key } == [.text("fmt"), .text("attStmt"), .text("authData")])
        #expect(object["fmt"] == .text("apple-appattest"))
        let statement = try #require(object["attStmt"]?.map)
        let chain = try #require(statement["x5c"]?.array)
        #expect(chain.map { $0.bytes?.count } == [761, 583])
        #expect(statement["receipt"]?.bytes?.count == 3_703)
        #expect(object["authData"]?.bytes?.count == 164)
    }

    @Test("the real assertion decodes to signature and authenticatorData")
    func realAssertion() throws {
        let fixture = try AppAttestFixture.load()
        let object = try #require(try CBORReader.decode(fixture.assertion).map)
        #expect(object.entries.count == 2)
        #expect(object["signature"]?.bytes?.count == 70)
        #expect(object["authenticatorData"]?.bytes?.count == 37)
    }

    @Test("every proper prefix of the real objects is refused as truncated")
    func realPrefixes() throws {
        let fixture = try AppAttestFixture.load()
        for object in [fixture.assertion, fixture.attestation] {
            for length in 0..<object.count {
                do {
                    _ = try CBORReader.decode(Array(object[0..<length]))
                    Issue.record("a prefix of \(length) bytes decoded")
                } catch {
                    #expect(error.reason == .truncated, "prefix of \(length) bytes")
                }
            }
        }
    }
}
