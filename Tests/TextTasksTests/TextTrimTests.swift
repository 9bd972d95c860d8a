import TestSupport
import Testing

@testable import TextTasks

@Suite("Trimming the text")
struct TextTrimTests {
    /// The definition: whitespace `Character`s off both ends, walking `Character`s.
    static func trimmedByCharacters(_ text: String) -> String {
        guard let first = text.firstIndex(where: { !$0.isWhitespace }),
            let last = text.lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return String(text[first...last])
    }

    private static func scalars(_ text: String) -> String {
        text.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " ")
    }

    @Test("agrees with trimming by Characters on random mixes, and the shortcut on its own")
    func agreesWithDefinition() {
        // Whitespace of every kind, ASCII edges, marks that join a space into one Character
        // (Extend, SpacingMark, ZWJ, emoji modifiers), Prepend, controls, emoji, regional
        // indicators, Hangul, and the lead bytes at the edges of the shortcut's range.
        let pool: [Unicode.Scalar] = [
            0x20, 0x09, 0x0A, 0x0D, 0x0B, 0x0C, 0x85, 0xA0, 0x1680, 0x2000, 0x200A, 0x2028, 0x2029, 0x202F,
            0x205F, 0x3000, 0x21, 0x41, 0x7E, 0x7F, 0x00, 0x2E, 0xFF, 0x100, 0x301, 0x36F, 0x600, 0x605, 0x627,
            0x64B, 0x6CC, 0x7FF, 0x800, 0x903, 0x93F, 0xE33, 0x102B, 0x200C, 0x200D, 0xFE0F, 0x1F600, 0x1F3FD,
            0x1F1EE, 0x1F1F7, 0x1100, 0x1161, 0xAC00, 0x11A8,
        ].map { Unicode.Scalar($0)! }
        var generator = SeededGenerator(state: 0x2545_F491_4F6C_DD1D)
        var shortcuts = 0
        for _ in 0..<40_000 {
            var scalars = String.UnicodeScalarView()
            for _ in 0..<(1 + generator.next() % 10) { scalars.append(pool[generator.next() % pool.count]) }
            let text = String(scalars)
            if TextTrim.startsAndEndsVisibly(text) {
                shortcuts += 1
                #expect(Self.trimmedByCharacters(text) == text, "scalars \(Self.scalars(text))")
            }
            #expect(TextTrim.trimmed(text) == Self.trimmedByCharacters(text), "scalars \(Self.scalars(text))")
        }
        #expect(shortcuts > 500) // the shortcut was exercised, not only the scalar walk
    }

    @Test("whitespace runs and clusters of any length are trimmed as the Characters walk trims them")
    func longRuns() {
        // Whitespace clusters (a space with marks after it, CR LF, controls followed by marks)
        // repeated 2–40 times at both ends, next to the scalars that may share a cluster with
        // their neighbours.
        let clusters = [
            " ", "\t", "\n", "\r\n", "\r", "\u{3000}", "\u{A0}", "\u{2029}", " \u{301}", " \u{903}\u{301}",
            "\u{A0}\u{200D}",
            "\u{3000}\u{1F3FD}", "\n\u{301}", " \u{E33}",
        ]
        let neighbours = [
            "a", "\u{301}", "\u{903}", "\u{600}", "\u{600}\u{600}", "\u{200D}", "\u{1F600}", "\u{1F1EE}", "ش",
            "\u{FE0F}", "",
            "x\u{301}", "\r", "\u{0}", "\u{1100}",
        ]
        var generator = SeededGenerator(state: 0xD1B5_4A32_D192_ED03)
        func run() -> String {
            (0..<(2 + generator.next() % 39)).map { _ in clusters[generator.next() % clusters.count] }.joined()
        }
        func neighbour() -> String { neighbours[generator.next() % neighbours.count] }
        for _ in 0..<5_000 {
            let text = run() + neighbour() + "متن" + neighbour() + run()
            #expect(TextTrim.trimmed(text) == Self.trimmedByCharacters(text), "scalars \(Self.scalars(text))")
            let inner = neighbour() + run() + neighbour()
            #expect(TextTrim.trimmed(inner) == Self.trimmedByCharacters(inner), "scalars \(Self.scalars(inner))")
        }
    }

    @Test("a body's worth of whitespace or of one cluster is trimmed")
    func largeBodies() {
        let whitespace = String(repeating: " \n\u{3000}", count: 300_000)
        let marked = String(repeating: " \u{301}", count: 300_000)
        #expect(TextTrim.trimmed(whitespace + "متن" + whitespace) == "متن")
        #expect(TextTrim.trimmed(marked + "متن" + marked) == "متن")
        #expect(TextTrim.trimmed(whitespace).isEmpty)
        #expect(TextTrim.trimmed(marked).isEmpty)
        let oneCharacter = "a" + String(repeating: "\u{301}", count: 300_000)
        #expect(TextTrim.trimmed(" " + oneCharacter + "\n") == oneCharacter)
        let spaceWithMarks = " " + String(repeating: "\u{903}", count: 300_000)
        #expect(TextTrim.trimmed("متن" + spaceWithMarks) == "متن")
    }

    @Test("clusters at the edges: marks join a space, a Prepend keeps one, marks after a control stay")
    func clusterEdges() {
        #expect(TextTrim.trimmed("abc \u{301}") == "abc")
        #expect(TextTrim.trimmed(" \u{301}abc") == "abc")
        #expect(TextTrim.trimmed("\u{600}a") == "\u{600}a")
        #expect(TextTrim.trimmed("a\u{600} ") == "a\u{600} ")
        #expect(TextTrim.trimmed("a\u{600}  ") == "a\u{600} ")
        #expect(TextTrim.trimmed("\n\u{301}abc") == "\u{301}abc")
        #expect(TextTrim.trimmed("abc\n\u{301}") == "abc\n\u{301}")
        #expect(TextTrim.trimmed("abc\r\n") == "abc")
        #expect(TextTrim.trimmed("\u{A0}سلام.") == "سلام.")
        #expect(TextTrim.trimmed("سلام.\u{2029}") == "سلام.")
        #expect(TextTrim.trimmed(" \t\n") == "")
        #expect(TextTrim.trimmed("") == "")
    }

    @Test("the whitespace scalars are Unicode's, as Character.isWhitespace sees them")
    func whitespaceSet() {
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            if TextTrim.isWhitespace(value) != scalar.properties.isWhitespace {
                Issue.record(
                    """
                    U+\(String(value, radix: 16)): \(TextTrim.isWhitespace(value)) \
                    against \(scalar.properties.isWhitespace)
                    """
                )
            }
        }
    }

    @Test("the scalars that join a space are the ones the standard library joins, every one")
    func joiners() {
        var joiners = 0
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            var pair = String.UnicodeScalarView()
            pair.append(" ")
            pair.append(scalar)
            let joins = String(pair).count == 1
            if joins { joiners += 1 }
            if TextTrim.joinsPreceding(value) != joins {
                Issue.record(
                    """
                    U+\(String(value, radix: 16)): \(TextTrim.joinsPreceding(value)) \
                    against the standard library's \(joins)
                    """
                )
            }
        }
        #expect(joiners > 2_000) // the grapheme rules were exercised, not a string without them
    }
}
