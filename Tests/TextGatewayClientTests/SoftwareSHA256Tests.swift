import Crypto
import Foundation
import Testing

@testable import TextGatewayClient

@Suite("The client's own SHA-256")
struct SoftwareSHA256Tests {
    static func hex(_ bytes: [UInt8]) -> String { Crypto.SHA256.hexString(bytes) }

    @Test(
        "FIPS 180-4 test vectors",
        arguments: [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
            ),
            (
                "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
                    + "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
                "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
            ),
        ])
    func vectors(input: String, digest: String) {
        #expect(Self.hex(SoftwareSHA256.hash(Array(input.utf8))) == digest)
    }

    @Test("a million times 'a'")
    func millionA() {
        #expect(
            Self.hex(SoftwareSHA256.hash([UInt8](repeating: 0x61, count: 1_000_000)))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("every length across the padding boundaries agrees with libcrypto")
    func agreesWithLibcrypto() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(SoftwareSHA256.hash(bytes) == Crypto.SHA256.hash(bytes), "length \(length)")
        }
    }

    @Test("a challenge's client data hash is SHA-256 of its UTF-8 bytes")
    func challengeHash() {
        let challenge = "q1w2-e3r4_t5y6u7i8o9p0aSdFgHjKlZxCvBnM"
        #expect(clientDataHash(of: challenge) == Data(Crypto.SHA256.hash(challenge.utf8)))
        #expect(clientDataHash(of: "") == Data(Crypto.SHA256.hash([UInt8]())))
    }
}
