/// The signature algorithms a ``PublicKey`` verifies and a ``PrivateKey`` signs with (the
/// JWS names of RFC 7518 §3.1 beside those JWS has).
package enum SignatureAlgorithm: Sendable, Hashable {
    /// RSASSA-PKCS1-v1_5 with SHA-256: JWS `RS256`.
    case rsaPKCS1v15SHA256
    /// ECDSA on P-256 with SHA-256: JWS `ES256`; signatures are the 64 bytes r ‖ s.
    case ecdsaP256SHA256
    /// ECDSA on P-256 with SHA-256, signatures as a DER ECDSA-Sig-Value (SEQUENCE of the
    /// INTEGERs r and s): X.509's encoding and App Attest assertions'. Not a JWS algorithm.
    case ecdsaP256SHA256DER
}
