import Crypto
import Testing

@Suite("Secure random bytes")
struct SecureRandomTests {
    @Test("gives as many bytes as asked", arguments: [0, 1, 6, 32, 4096, 100_000])
    func givesTheCount(count: Int) {
        #expect(SecureRandom.bytes(count).count == count)
    }

    @Test("gives different bytes each time")
    func differs() {
        // Two equal draws of 32 bytes happen with probability 2^-256.
        #expect(SecureRandom.bytes(32) != SecureRandom.bytes(32))
        // Nor is a long draw one repeated byte.
        #expect(Set(SecureRandom.bytes(4096)).count > 1)
    }
}
