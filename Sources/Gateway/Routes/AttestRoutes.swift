import Access
import ChatAPI
import HTTP1
import HTTPServer

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

    func handle(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let fields = try AttestBody.parse(request, proof: "attestation", context: context)
        let deviceID = try await service.register(
            keyID: fields.keyID, attestation: fields.proof, challenge: fields.challenge, context: context)
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
        let fields = try AttestBody.parse(request, proof: "assertion", context: context)
        let session = try await service.openSession(
            keyID: fields.keyID, assertion: fields.proof, challenge: fields.challenge, context: context)
        var body = JSONWriter(capacity: 128)
        body.object {
            $0.field("token", session.token)
            $0.field("expiresAt", Int(session.expiresAtSeconds))
            $0.field("deviceId", session.deviceID)
        }
        return AttestBody.response(.ok, body)
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
    static func parse(_ request: HTTPRequest, proof name: StaticString, context: RequestContext) throws(GatewayError)
        -> Fields
    {
        if let contentType = request.headers["Content-Type"], !ProcessRequest.isJSON(contentType) {
            throw .unsupportedMediaType
        }
        guard let members = try? JSONValue.parseMembers(of: request.body, named: ["keyId", name, "challenge"]),
            let keyID = members[0]?.stringValue, let proof = members[1]?.stringValue,
            let challenge = members[2]?.stringValue
        else { throw .invalidJSON }
        guard let key = Base64URL.decodeStandard(keyID.utf8), key.count == 32,
            proof.utf8.count <= maximumProofCharacters,
            let bytes = Base64URL.decodeStandard(proof.utf8)
        else {
            context.update { $0.attestFailure = .malformed }
            throw .unauthorized
        }
        return Fields(keyID: key, proof: bytes, challenge: challenge)
    }

    static func response(_ status: HTTPStatus, _ body: JSONWriter) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"],
            body: .bytes(body.bytes))
    }
}
