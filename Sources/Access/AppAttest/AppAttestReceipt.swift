package import Crypto

/// An App Attest receipt: the CMS SignedData Apple returns with an attestation (type
/// `ATTEST`) and, exchanged with Apple's server, with the device's risk metric (type
/// `RECEIPT`): how many keys this app attested on that device in the last 30 days, roughly.
///
/// Its content is a SET of `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`:
/// 2 the App ID, 3 the attested key's certificate, 4 the client data hash, 5 a token, 6 the
/// type, 7 the environment, 12 the creation time, 17 the risk metric (ASCII digits), 19 not
/// before, 21 the expiry. Signed under Apple Root CA - G3, which the receipt carries and the
/// gateway pins.
package struct AppAttestReceipt: Sendable, Equatable {
    package var appID: String
    /// The attested key's certificate (DER), whose key must be the device's.
    package var attestedCertificate: [UInt8]
    /// `ATTEST` or `RECEIPT`.
    package var type: String
    /// The risk metric, on a `RECEIPT`.
    package var riskMetric: Int?

    /// Why a receipt was not taken; never holds its bytes.
    package struct Failure: Error, Equatable, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// The receipt `der` when it is signed under one of `roots` at `unixSeconds`, names
    /// `appID`, and attests the device key `point` (65-byte uncompressed P-256).
    package static func verified(
        _ der: [UInt8], roots: [X509Certificate], at unixSeconds: Int64, appID: String, point: [UInt8]
    ) throws(Failure) -> AppAttestReceipt {
        let content: [UInt8]
        do {
            content = try CMSSignedData.verifiedContent(der, roots: roots, at: unixSeconds)
        } catch {
            throw Failure("the receipt's signature does not verify under Apple's root")
        }
        guard let receipt = try? parse(content: content) else { throw Failure("the receipt's content is malformed") }
        guard receipt.appID == appID else { throw Failure("the receipt names another App ID") }
        guard let certificate = try? X509Certificate(der: receipt.attestedCertificate),
            certificate.p256PublicPoint == point
        else { throw Failure("the receipt attests another key") }
        return receipt
    }

    /// The fields of a receipt's content.
    static func parse(content: [UInt8]) throws(AttestationDER.Malformed) -> AppAttestReceipt {
        var outer = AttestationDER(content)
        let set = try outer.required(universal: AttestationDER.Universal.set, constructed: true)
        try outer.finish()
        var fields = outer.reader(of: set)
        var values: [Int64: [UInt8]] = [:]
        while let field = try fields.next() {
            guard field.isUniversal(AttestationDER.Universal.sequence, constructed: true) else {
                throw AttestationDER.Malformed()
            }
            var parts = fields.reader(of: field)
            let typeElement = try parts.required(universal: AttestationDER.Universal.integer)
            _ = try parts.required(universal: AttestationDER.Universal.integer)
            let valueElement = try parts.required(universal: AttestationDER.Universal.octetString)
            try parts.finish()
            let type = try parts.integer(typeElement)
            guard values[type] == nil else { throw AttestationDER.Malformed() }
            values[type] = parts.content(valueElement)
        }
        guard let appID = values[2], let certificate = values[3], let type = values[6] else {
            throw AttestationDER.Malformed()
        }
        var risk: Int?
        if let digits = values[17] {
            guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ (0x30...0x39).contains($0) }) else {
                throw AttestationDER.Malformed()
            }
            risk = Int(String(decoding: digits, as: UTF8.self))
        }
        return AppAttestReceipt(
            appID: String(decoding: appID, as: UTF8.self), attestedCertificate: certificate,
            type: String(decoding: type, as: UTF8.self), riskMetric: risk)
    }

    /// Apple Root CA - G3, which signs App Attest receipts (through Apple Application
    /// Integration CA 5 - G1). From Apple's PKI page; SHA-256 of its DER
    /// `63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179`; valid 2014-04-30
    /// to 2039-04-30.
    package static let appleRootG3PEM = """
        -----BEGIN CERTIFICATE-----
        MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwS
        QXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9u
        IEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcN
        MTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBS
        b290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9y
        aXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49
        AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtf
        TjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517
        IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySr
        MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gA
        MGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4
        at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM
        6BgD56KyKA==
        -----END CERTIFICATE-----
        """
}
