/// The numbers that make a public key, as a JWK (RFC 7518 §6) carries them.
package enum PublicKeyComponents: Sendable, Hashable {
    /// An RSA key: modulus `n` and public exponent `e`, big-endian, no leading zero bytes.
    case rsa(modulus: [UInt8], exponent: [UInt8])
    /// A P-256 key: the point's affine coordinates, 32 bytes each, big-endian.
    case p256(x: [UInt8], y: [UInt8])
}
