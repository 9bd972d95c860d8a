import Crypto
import Testing

@Suite("Constant-time comparison")
struct ConstantTimeTests {
    static let cases: [(a: [UInt8], b: [UInt8], equal: Bool)] = [
        ([], [], true),
        ([1, 2, 3], [1, 2, 3], true),
        ([1, 2, 3], [9, 2, 3], false),
        ([1, 2, 3], [1, 2, 9], false),
        ([1, 2, 3], [1, 2], false),
        ([1, 2], [1, 2, 3], false),
        ([], [0], false),
        ([0x80], [0x00], false),
    ]

    @Test("equals exactly when both hold the same bytes", arguments: cases)
    func comparesBytes(testCase: (a: [UInt8], b: [UInt8], equal: Bool)) {
        #expect(ConstantTime.equals(testCase.a, testCase.b) == testCase.equal)
    }

    @Test("compares full digests")
    func comparesDigests() {
        let digest = SHA256.hash(Array("token".utf8))
        var other = digest
        other[31] ^= 1
        #expect(ConstantTime.equals(digest, digest))
        #expect(!ConstantTime.equals(digest, other))
        other = digest
        other[0] ^= 0x80
        #expect(!ConstantTime.equals(digest, other))
    }
}
