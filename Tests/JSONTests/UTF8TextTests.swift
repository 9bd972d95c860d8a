import Testing

@testable import JSON

@Suite("UTF-8 validation for JSON strings")
struct UTF8TextTests {
    private func check(_ bytes: [UInt8]) {
        let expected = String(validating: bytes, as: UTF8.self)
        let actual = bytes.withUnsafeBufferPointer(UTF8Text.string)
        #expect(actual == expected, "\(bytes.map { String($0, radix: 16) })")
    }

    @Test("agrees with the standard library on every one- and two-byte sequence")
    func shortSequences() {
        for first in 0...0xFF {
            check([UInt8(first)])
            for second in 0...0xFF { check([UInt8(first), UInt8(second)]) }
        }
    }

    @Test("agrees on the edges of three- and four-byte forms: overlongs, surrogates, above U+10FFFF")
    func edges() {
        let leads: [UInt8] = [0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5]
        let tails: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF]
        for lead in leads {
            for second in tails {
                for third in tails {
                    check([lead, second, third])
                    for fourth in tails { check([lead, second, third, fourth]) }
                }
            }
        }
        check([])
        check(Array("plain ascii of more than eight bytes".utf8))
        check(Array("فارسی با نیم‌فاصله و emoji 🙂 in one string".utf8))
    }

    @Test("agrees on random mixtures of ASCII runs and multi-byte pieces")
    func randomBytes() {
        var generator = SystemRandomNumberGenerator()
        let pieces: [[UInt8]] = [
            Array("abcdefghij".utf8), Array("ش".utf8), Array("‌".utf8), Array("🙂".utf8),
            [0x80], [0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x99], [0xED, 0xA0, 0x80], [0xFF],
        ]
        for _ in 0..<20_000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 0...12, using: &generator) {
                if Int.random(in: 0..<4, using: &generator) == 0 {
                    bytes.append(contentsOf: pieces.randomElement(using: &generator)!)
                } else {
                    bytes.append(contentsOf: pieces[Int.random(in: 0..<4, using: &generator)])
                }
            }
            check(bytes)
        }
    }
}
