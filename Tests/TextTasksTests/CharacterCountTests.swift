import Testing

@testable import TextTasks

@Suite("Character count")
struct CharacterCountTests {
    /// Scalars from every class the fast path knows, the edges of its ranges, and scalars it
    /// must hand to `String.count` (Prepend, ZWJ, emoji, regional indicators, Hangul, a virama).
    static let pool: [Unicode.Scalar] = [
        0x20, 0x41, 0x7E, 0x0A, 0x0D, 0x09, 0x00, 0x1F, 0x7F, 0x9F, 0xA0, 0xAD, 0xAB, 0xBB, 0xE9, 0x2FF,
        0x300, 0x301, 0x36F, 0x370, 0x600, 0x605, 0x606, 0x60C, 0x610, 0x61A, 0x61B, 0x61C, 0x61F, 0x627,
        0x628, 0x64B, 0x650, 0x65F, 0x660, 0x670, 0x67E, 0x686, 0x698, 0x6A9, 0x6AF, 0x6CC, 0x6D5, 0x6D6,
        0x6DC, 0x6DD, 0x6DE, 0x6DF, 0x6E4, 0x6E5, 0x6E7, 0x6E9, 0x6EA, 0x6ED, 0x6F0, 0x6F9, 0x6FF, 0x750,
        0x77F, 0x780, 0x94D, 0x915, 0x200B, 0x200C, 0x200D, 0x200E, 0x2010, 0x2026, 0x2028, 0x202E, 0x2030,
        0x203C, 0x205E, 0x1F1EE, 0x1F1F7, 0x1F600, 0x1F3FD, 0xAC00, 0x1100, 0x1161, 0xFE0F, 0xFEFF,
    ].map { Unicode.Scalar($0)! }

    @Test("agrees with String.count on random mixes of every class")
    func agreesWithStringCount() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(truncatingIfNeeded: state >> 33)
        }
        for round in 0..<20_000 {
            var scalars = String.UnicodeScalarView()
            // Mostly fast-path scalars, sometimes one from the whole pool.
            let fastOnly = round % 2 == 0
            for _ in 0..<(1 + next() % 24) {
                var scalar = Self.pool[next() % Self.pool.count]
                while fastOnly && Self.needsFullRules(scalar) { scalar = Self.pool[next() % Self.pool.count] }
                scalars.append(scalar)
            }
            let text = String(scalars)
            #expect(
                CharacterCount.of(text) == text.count,
                "scalars \(text.unicodeScalars.map { String($0.value, radix: 16) })")
            // With a limit: exact up to it, one more than it past it, on both paths.
            let limit = next() % 26
            #expect(
                CharacterCount.of(text, limit: limit) == min(text.count, limit + 1),
                "limit \(limit), scalars \(text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    @Test("stops past the limit: a count of 12,001 for any longer text, on both paths")
    func limit() {
        let persian = String(repeating: "متن فارسی. ", count: 50_000)
        let emoji = String(repeating: "👩‍💻 و 🇮🇷 ", count: 50_000)
        #expect(CharacterCount.of(persian, limit: 12_000) == 12_001)
        #expect(CharacterCount.of(emoji, limit: 12_000) == 12_001)
        #expect(CharacterCount.of(String(persian.prefix(12_000)), limit: 12_000) == 12_000)
        #expect(CharacterCount.of(String(emoji.prefix(12_000)), limit: 12_000) == 12_000)
        #expect(CharacterCount.of("", limit: 0) == 0)
        #expect(CharacterCount.of("ab", limit: 0) == 1)
    }

    @Test("counts Persian with ZWNJ and harakat, CRLF and lone controls")
    func examples() {
        #expect(CharacterCount.of("می‌شود") == "می‌شود".count)
        #expect(CharacterCount.of("می‌شود") == 5)
        #expect(CharacterCount.of("بِسْمِ") == 3)
        #expect(CharacterCount.of("a\r\nb") == 3)
        #expect(CharacterCount.of("\r\r\n\n") == 3)
        #expect(CharacterCount.of("\u{300}a\u{300}\n\u{300}") == 4)
        #expect(CharacterCount.of("") == 0)
        #expect(CharacterCount.of("👩‍💻 و 🇮🇷") == "👩‍💻 و 🇮🇷".count)
    }

    static func needsFullRules(_ scalar: Unicode.Scalar) -> Bool {
        [
            0x600, 0x605, 0x6DD, 0x370, 0x780, 0x94D, 0x915, 0x200D, 0x1F1EE, 0x1F1F7, 0x1F600, 0x1F3FD, 0xAC00,
            0x1100, 0x1161, 0xFE0F, 0xFEFF,
        ].contains(scalar.value)
    }
}
