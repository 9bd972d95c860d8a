import Crypto
import Testing

@Suite("SHA-256")
struct SHA256Tests {
    /// `(i * 7 + 3) % 256` for i in 0..<n: lengths around the padding boundaries.
    static func pattern(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(($0 * 7 + 3) % 256) }
    }

    // FIPS 180-4's examples (NIST's SHA-256 example vectors) first, then digests computed
    // with Python's hashlib.
    static let vectors: [(name: String, input: [UInt8], digest: String)] = [
        ("empty", [], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", Array("abc".utf8), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "448 bits", Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
        ("55 bytes", pattern(55), "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"),
        ("56 bytes", pattern(56), "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"),
        ("63 bytes", pattern(63), "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"),
        ("64 bytes", pattern(64), "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"),
        ("65 bytes", pattern(65), "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"),
        ("119 bytes", pattern(119), "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"),
        ("120 bytes", pattern(120), "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"),
        ("128 bytes", pattern(128), "d2742f1f4ac6bb7ca2b239ee18402ba8b3f9f8e652d2a72973c2b9ba11c08cf6"),
        ("1000 bytes", pattern(1000), "1e9bc38cbf860b9ec31918b065f9b52476c549a782e0e7990bed8ce3868d2371"),
        ("UTF-8", Array("سلام".utf8), "bda1fa48345336618741fd2c4bc02809eb099c49a9b02fb5056401ab6d4dc3e6"),
    ]

    @Test("matches the FIPS 180-4 and hashlib digests", arguments: vectors)
    func matchesKnownDigests(vector: (name: String, input: [UInt8], digest: String)) {
        #expect(SHA256.hexDigest(vector.input) == vector.digest, "\(vector.name)")
        #expect(SHA256.hash(vector.input).count == SHA256.digestByteCount)
    }

    @Test("hashes one million 'a'")
    func hashesOneMillionA() {
        let input = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hexDigest(input) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("hashes any sequence of bytes, not only arrays")
    func hashesNonContiguousSequences() {
        let lazy = (0..<65).lazy.map { UInt8(($0 * 7 + 3) % 256) }
        #expect(SHA256.hexDigest(lazy) == "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e")
        #expect(SHA256.hexDigest("abc".utf8) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest(Array("abc".utf8)[1...]) == SHA256.hexDigest("bc".utf8))
        #expect(
            SHA256.hexDigest(EmptyCollection()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("writes the digest as lower-case hex")
    func writesLowerCaseHex() {
        let digest = SHA256.hexDigest([0xFF])
        #expect(digest.count == 64)
        #expect(digest == digest.lowercased())
    }

    @Test("writes bytes as two lower-case hex digits each")
    func writesHexString() {
        #expect(SHA256.hexString([]) == "")
        #expect(SHA256.hexString([0x00, 0x0F, 0xA0, 0xFF]) == "000fa0ff")
    }
}
