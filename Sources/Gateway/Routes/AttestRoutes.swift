import Access
import HTTP1
import HTTPServer
import JSON

/// `POST /api/attest/challenge`: a one-use challenge for a registration or a session
/// (docs/app-attest.md). The body, if any, is not read.
struct AttestChallengeRoute: ResponseHandler {
    let service: AppAttestService

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let (challenge, expiresAt) = try await service.challenge()
        var body = JSONWriter(capacity: 96)
        body.object {
            $0.field("challenge", challenge)
            $0.field("expiresAt", Int(expiresAt))
        }
        return AttestBody.response(.ok, body)
    }
}

/// `POST /api/attest/register` `{"keyId","attestation","challenge"}`: verifies the key's
/// attestation and registers its device: `201 {"deviceId"}`.
struct AttestRegisterRoute: ResponseHandler {
    let service: AppAttestService
    let clients: ClientAddressKey

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let fields = try AttestBody.parse(request, proof: "attestation")
        let deviceID = try await service.register(
            keyID: fields.keyID, attestation: fields.proof, challenge: fields.challenge,
            client: clients.key(for: request))
        var body = JSONWriter(capacity: 64)
        body.object { $0.field("deviceId", deviceID) }
        return AttestBody.response(.created, body)
    }
}

/// `POST /api/attest/session` `{"keyId","assertion","challenge"}`: verifies a registered
/// key's assertion and opens a device session: `200 {"token","expiresAt","deviceId"}`.
struct AttestSessionRoute: ResponseHandler {
    let service: AppAttestService

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let fields = try AttestBody.parse(request, proof: "assertion")
        let session = try await service.openSession(
            keyID: fields.keyID, assertion: fields.proof, challenge: fields.challenge)
        return AttestBody.session(session)
    }
}

/// `POST /api/attest/android/register` `{"chain","challenge"}`: verifies an Android key's
/// attestation chain (DER certificates in standard base64, leaf first) and registers its
/// device: `201 {"deviceId","keyId"}`.
struct AndroidRegisterRoute: ResponseHandler {
    let service: AndroidAttestService
    let clients: ClientAddressKey

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        try AttestBody.requireJSON(request)
        guard let members = try? JSONValue.parseMembers(of: request.body, named: ["chain", "challenge"]),
            case .array(let items)? = members[0], let challenge = members[1]?.stringValue
        else { throw .invalidJSON }
        guard (1...AndroidAttestationVerifier.maximumCertificates).contains(items.count) else {
            throw AttestBody.malformed()
        }
        var chain: [[UInt8]] = []
        for item in items {
            // 16 KiB of DER is at most 21,848 base64 characters.
            guard let text = item.stringValue, text.utf8.count <= 21_848,
                let der = Base64URL.decodeStandard(text.utf8)
            else { throw AttestBody.malformed() }
            chain.append(der)
        }
        let device = try await service.register(
            chain: chain, challenge: challenge, client: clients.key(for: request))
        var body = JSONWriter(capacity: 128)
        body.object {
            $0.field("deviceId", device.id)
            $0.field("keyId", Base64URL.encodeStandard(device.keyID))
        }
        return AttestBody.response(.created, body)
    }
}

/// `POST /api/attest/android/session` `{"keyId","signature","challenge"}`: verifies the
/// registered key's signature over the challenge and opens a device session:
/// `200 {"token","expiresAt","deviceId"}`.
struct AndroidSessionRoute: ResponseHandler {
    let service: AndroidAttestService

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let fields = try AttestBody.parse(request, proof: "signature")
        let session = try await service.openSession(
            keyID: fields.keyID, signature: fields.proof, challenge: fields.challenge)
        return AttestBody.session(session)
    }
}

/// The bodies of the registration and the session.
enum AttestBody {
    /// The most base64 an attestation or assertion may take: far above a real one (about 6 KB).
    static let maximumProofCharacters = 65_536

    struct Fields {
        /// The key id: standard base64 of 32 bytes.
        var keyID: [UInt8]
        /// The attestation or assertion: standard base64 of a bounded size.
        var proof: [UInt8]
        var challenge: String
    }

    /// The three string fields: `400 invalid_json` unless the body is a JSON object with them,
    /// `401` (`attest_error=malformed`) when the key id or the proof is not what App Attest sends.
    static func parse(_ request: HTTPRequest, proof name: StaticString) throws(GatewayError)
        -> Fields
    {
        try requireJSON(request)
        guard let members = try? JSONValue.parseMembers(of: request.body, named: ["keyId", name, "challenge"]),
            let keyID = members[0]?.stringValue, let proof = members[1]?.stringValue,
            let challenge = members[2]?.stringValue
        else { throw .invalidJSON }
        guard let key = Base64URL.decodeStandard(keyID.utf8), key.count == 32,
            proof.utf8.count <= maximumProofCharacters,
            let bytes = Base64URL.decodeStandard(proof.utf8)
        else { throw malformed() }
        return Fields(keyID: key, proof: bytes, challenge: challenge)
    }

    /// `415` unless the body, if typed, is JSON.
    static func requireJSON(_ request: HTTPRequest) throws(GatewayError) {
        if let contentType = request.headers["Content-Type"], !ProcessRequest.isJSON(contentType) {
            throw .unsupportedMediaType
        }
    }

    /// `401` with `attest_error=malformed`: not what a device sends.
    static func malformed() -> GatewayError {
        .deviceUnauthorized(reason: AppAttestFailure.Reason.malformed.rawValue)
    }

    static func session(_ session: AppAttestService.OpenedSession) -> HTTPResponse {
        var body = JSONWriter(capacity: 128)
        body.object {
            $0.field("token", session.token)
            $0.field("expiresAt", Int(session.expiresAtSeconds))
            $0.field("deviceId", session.deviceID)
        }
        return response(.ok, body)
    }

    static func response(_ status: HTTPStatus, _ body: JSONWriter) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"],
            body: .bytes(body.bytes))
    }
}
