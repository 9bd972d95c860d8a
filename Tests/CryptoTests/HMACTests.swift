import Crypto
import Testing

@Suite("HMAC-SHA-256")
struct HMACTests {
    /// RFC 4231 §4's test cases for HMAC-SHA-256 (case 5 checks a truncated tag, which is not offered).
    static let rfc4231: [(name: String, key: [UInt8], data: [UInt8], tag: String)] = [
        (
            "1", [UInt8](repeating: 0x0B, count: 20), Array("Hi There".utf8),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        ),
        (
            "2", Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ),
        (
            "3", [UInt8](repeating: 0xAA, count: 20), [UInt8](repeating: 0xDD, count: 50),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
        ),
        (
            "4", Array(1...25), [UInt8](repeating: 0xCD, count: 50),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
        ),
        (
            "6", [UInt8](repeating: 0xAA, count: 131),
            Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        ),
        (
            "7", [UInt8](repeating: 0xAA, count: 131),
            Array(
                ("This is a test using a larger than block-size key and a larger than block-size data. "
                    + "The key needs to be hashed before being used by the HMAC algorithm.").utf8),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
        ),
    ]

    @Test("matches RFC 4231's test cases", arguments: rfc4231)
    func matchesRFC4231(vector: (name: String, key: [UInt8], data: [UInt8], tag: String)) {
        let tag = HMAC.sha256(key: vector.key, message: vector.data)
        #expect(tag.count == 32)
        #expect(SHA256.hexString(tag) == vector.tag, "test case \(vector.name)")
    }

    @Test("takes an empty key and message (Python's hmac gives the same tag)")
    func takesEmptyKey() {
        #expect(
            SHA256.hexString(HMAC.sha256(key: [], message: [UInt8]()))
                == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    @Test("takes any sequence as the message")
    func takesAnySequence() {
        let expected = HMAC.sha256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(HMAC.sha256(key: Array("Jefe".utf8), message: "what do ya want for nothing?".utf8) == expected)
        #expect(
            HMAC.sha256(key: Array("Jefe".utf8), message: "what do ya want for nothing?".utf8.lazy.map { $0 })
                == expected)
    }
}
