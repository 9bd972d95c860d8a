import Testing

@testable import JSON

@Suite("Word-at-a-time scan of JSON string bytes")
struct JSONStringScanTests {
    /// The byte-by-byte definition the scan must match.
    private func expected(_ bytes: [UInt8], from start: Int, delete: Bool) -> Int {
        bytes.indices.dropFirst(start).first {
            bytes[$0] == 0x22 || bytes[$0] == 0x5C || bytes[$0] < 0x20 || (delete && bytes[$0] == 0x7F)
        }
            ?? bytes.count
    }

    private func scan(_ bytes: [UInt8], from start: Int, delete: Bool) -> Int {
        bytes.withUnsafeBufferPointer { JSONStringScan.firstSpecial(in: $0, from: start, delete: delete) }
    }

    @Test("finds every kind of byte at every position of a word and past it; passes its neighbours")
    func everyByteAtEveryPosition() {
        // The bytes that stop the scan, and the bytes on either side of each range.
        let stops: [UInt8] = [0x00, 0x01, 0x0A, 0x1F, 0x22, 0x5C, 0x7F]
        let passes: [UInt8] = [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7E, 0x80, 0xA0, 0xDB, 0xFF]
        for length in 0...20 {
            for position in 0..<max(length, 1) where position < length {
                for special in stops + passes {
                    for filler in passes {
                        var bytes = [UInt8](repeating: filler, count: length)
                        bytes[position] = special
                        for delete in [false, true] {
                            for start in [0, min(position, 3)] {
                                #expect(
                                    scan(bytes, from: start, delete: delete)
                                        == expected(bytes, from: start, delete: delete),
                                    """
                                    length \(length), byte \(special) at \(position), \
                                    filler \(filler), delete \(delete)
                                    """
                                )
                            }
                        }
                    }
                }
            }
        }
    }

    @Test("matches the byte-by-byte definition on random bytes")
    func randomBytes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...40, using: &generator)
            // Mostly plain bytes, so runs are long enough for whole words.
            let bytes = (0..<length).map { _ in
                Int.random(in: 0..<10, using: &generator) == 0
                    ? UInt8.random(in: 0...0xFF, using: &generator) : UInt8.random(in: 0x23...0x5B, using: &generator)
            }
            let start = Int.random(in: 0...length, using: &generator)
            let delete = Bool.random(using: &generator)
            #expect(
                scan(bytes, from: start, delete: delete) == expected(bytes, from: start, delete: delete),
                "\(bytes) from \(start)")
        }
    }
}
