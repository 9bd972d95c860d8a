import Crypto
import Foundation
import HTTP1
import HTTPServer
import Synchronization
import TextGatewayClient

/// A device that records what it was asked and signs with fixed bytes: an attestation or an
/// assertion is a label, the key's id and the client data hash, so the gateway can check
/// which key signed which hash. As a real device, it attests a key once.
final class FakeAttestor: DeviceAttestor {
    struct Signature: Sendable, Hashable {
        var keyId: String
        var clientDataHash: Data
    }

    struct State: Sendable {
        var stored: DeviceKey?
        var generated: [String] = []
        var attested: [Signature] = []
        var asserted: [Signature] = []
        var saved: [DeviceKey?] = []
        /// Keys the device says it no longer has.
        var invalidKeys: Set<String> = []
        /// Keys attested already.
        var attestedKeys: Set<String> = []
    }

    private let state: Mutex<State>

    init(stored: DeviceKey? = nil, invalidKeys: Set<String> = [], attestedKeys: Set<String> = []) {
        state = Mutex(State(stored: stored, invalidKeys: invalidKeys, attestedKeys: attestedKeys))
    }

    var recorded: State { state.withLock { $0 } }

    static func attestation(keyId: String, clientDataHash: Data) -> Data {
        Data("attestation:\(keyId):".utf8) + clientDataHash
    }
    static func assertion(keyId: String, clientDataHash: Data) -> Data {
        Data("assertion:\(keyId):".utf8) + clientDataHash
    }

    func loadKey() async throws -> DeviceKey? { state.withLock { $0.stored } }

    func saveKey(_ key: DeviceKey?) async throws {
        state.withLock {
            $0.stored = key
            $0.saved.append(key)
        }
    }

    func generateKey() async throws -> String {
        state.withLock {
            let id = Data("device-key-\($0.generated.count + 1)".utf8).base64EncodedString()
            $0.generated.append(id)
            return id
        }
    }

    func attest(keyId: String, clientDataHash: Data) async throws -> Data {
        try state.withLock { state throws(DeviceAttestationError) in
            state.attested.append(Signature(keyId: keyId, clientDataHash: clientDataHash))
            if state.invalidKeys.contains(keyId) { throw .invalidKey }
            guard state.attestedKeys.insert(keyId).inserted else { throw .invalidKey }
            return Self.attestation(keyId: keyId, clientDataHash: clientDataHash)
        }
    }

    func assert(keyId: String, clientDataHash: Data) async throws -> Data {
        try state.withLock { state throws(DeviceAttestationError) in
            state.asserted.append(Signature(keyId: keyId, clientDataHash: clientDataHash))
            if state.invalidKeys.contains(keyId) { throw .invalidKey }
            return Self.assertion(keyId: keyId, clientDataHash: clientDataHash)
        }
    }
}

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let instant: Mutex<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_900_000_000)) { instant = Mutex(start) }

    var now: Date { instant.withLock { $0 } }

    func advance(seconds: TimeInterval) { instant.withLock { $0 += seconds } }
}

/// The gateway's three attest routes and one protected route (`POST /api/process`, JSON or a
/// stream), on loopback, checking what a real gateway checks: challenges issued once and used
/// once, attestations and assertions over SHA-256 of the challenge, session tokens it issued.
final class FakeAttestGateway: Sendable {
    struct State: Sendable {
        /// Challenges issued, in order, and those not used yet.
        var issued: [String] = []
        var unused: Set<String> = []
        /// Registered key ids and their device ids.
        var devices: [String: String] = [:]
        var registerCalls = 0
        var sessionCalls = 0
        /// Live session tokens and their key ids.
        var tokens: [String: String] = [:]
        /// The `Authorization` of each protected call.
        var bearers: [String?] = []
        /// What a session lasts.
        var sessionSeconds = 3600
        /// How long `/api/attest/session` takes, so concurrent callers overlap.
        var sessionDelay: Duration = .zero
        /// Protected calls still to refuse with `401 invalid_token` whatever token they carry.
        var refuseCalls = 0
        /// Whether `/api/attest/register` refuses every attestation.
        var refuseAttestations = false
        /// Sessions still to refuse as if their challenge had expired on the way (`attestError` `challenge`).
        var expireChallenges = 0
        /// Sessions still to refuse for a reason the device cannot change (`attestError` `app_id`).
        var refuseApp = 0
    }

    /// The state the routes share, in a box they can capture.
    final class Ledger: Sendable {
        let state = Mutex(State())
    }

    private let ledger: Ledger
    let baseURL: URL

    private init(ledger: Ledger, port: Int) {
        self.ledger = ledger
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
    }

    var recorded: State { ledger.state.withLock { $0 } }

    func update(_ body: (inout State) -> Void) { ledger.state.withLock { body(&$0) } }

    /// Runs `body` against a fresh fake, then stops it whether or not `body` threw.
    static func with(_ body: (FakeAttestGateway) async throws -> Void) async throws {
        let ledger = Ledger()
        var router = Router()
        routes(&router, ledger)
        let responder = router.buildResponder()
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.loopCount = 1
        let server = try HTTPServer(configuration: configuration) { try await responder.respond(to: $0) }
        let address = try await server.start()
        let gateway = FakeAttestGateway(ledger: ledger, port: address.port)
        do {
            try await body(gateway)
        } catch {
            await server.shutdown(gracePeriod: .zero)
            throw error
        }
        await server.shutdown(gracePeriod: .seconds(1))
    }

    private struct RegisterBody: Decodable {
        var keyId: String
        var attestation: String
        var challenge: String
    }
    private struct SessionBody: Decodable {
        var keyId: String
        var assertion: String
        var challenge: String
    }
    private struct ProcessBody: Decodable { var stream: Bool? }

    private static func routes(_ router: inout Router, _ ledger: Ledger) {
        router.post("/api/attest/challenge") { _ in
            let challenge = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
                    of: "=", with: "")
            ledger.state.withLock {
                $0.issued.append(challenge)
                $0.unused.insert(challenge)
            }
            return json(["challenge": challenge, "expiresAt": Int(Date().timeIntervalSince1970) + 300])
        }

        router.post("/api/attest/register") { request in
            guard let body = try? JSONDecoder().decode(RegisterBody.self, from: Data(request.body)) else {
                return error(400, "invalid_json")
            }
            return ledger.state.withLock { state in
                state.registerCalls += 1
                guard state.unused.remove(body.challenge) != nil else { return error(401, "unauthorized") }
                guard !state.refuseAttestations,
                    Data(base64Encoded: body.attestation)
                        == FakeAttestor.attestation(keyId: body.keyId, clientDataHash: hash(body.challenge))
                else { return error(401, "unauthorized") }
                guard state.devices[body.keyId] == nil else { return error(409, "conflict") }
                let deviceId = "dev-\(state.devices.count + 1)"
                state.devices[body.keyId] = deviceId
                return json(["deviceId": deviceId], status: .created)
            }
        }

        router.post("/api/attest/session") { request in
            guard let body = try? JSONDecoder().decode(SessionBody.self, from: Data(request.body)) else {
                return error(400, "invalid_json")
            }
            let delay = ledger.state.withLock { $0.sessionDelay }
            // A slow server: the session answer takes that long.
            if delay > .zero { try await Task.sleep(for: delay) }
            return ledger.state.withLock { state in
                state.sessionCalls += 1
                guard state.unused.remove(body.challenge) != nil else { return refusal("challenge") }
                if state.expireChallenges > 0 {
                    state.expireChallenges -= 1
                    return refusal("challenge")
                }
                guard let deviceId = state.devices[body.keyId] else { return refusal("unknown_device") }
                if state.refuseApp > 0 {
                    state.refuseApp -= 1
                    return refusal("app_id")
                }
                guard
                    Data(base64Encoded: body.assertion)
                        == FakeAttestor.assertion(keyId: body.keyId, clientDataHash: hash(body.challenge))
                else { return refusal("signature") }
                let token = "tgd_\(state.sessionCalls)"
                state.tokens[token] = body.keyId
                return json([
                    "token": token, "expiresAt": Int(Date().timeIntervalSince1970) + state.sessionSeconds,
                    "deviceId": deviceId,
                ])
            }
        }

        router.post("/api/process") { request in
            let stream = (try? JSONDecoder().decode(ProcessBody.self, from: Data(request.body)))?.stream == true
            let authorization = request.headers["Authorization"]
            let accepted = ledger.state.withLock { state in
                state.bearers.append(authorization)
                if state.refuseCalls > 0 {
                    state.refuseCalls -= 1
                    return false
                }
                guard let authorization, authorization.hasPrefix("Bearer ") else { return false }
                return state.tokens[String(authorization.dropFirst("Bearer ".count))] != nil
            }
            guard accepted else {
                return error(401, "unauthorized", headers: ["WWW-Authenticate": "Bearer error=\"invalid_token\""])
            }
            let answer = "answered for \(authorization ?? "")"
            guard stream else { return json(["success": true, "result": answer, "requestId": "req-1"]) }
            let events = [
                ("start", ["requestId": "req-1"]),
                ("delta", ["delta": answer, "text": answer]),
                ("done", ["result": answer, "requestId": "req-1"]),
            ].map { name, data in
                "event: \(name)\ndata: \(String(decoding: encoded(data), as: UTF8.self))\n\n"
            }.joined()
            return HTTPResponse(
                status: .ok, headers: ["Content-Type": "text/event-stream"], body: .bytes(Array(events.utf8)))
        }
    }

    /// The client data hash a challenge is signed over, by libcrypto.
    static func hash(_ challenge: String) -> Data { Data(Crypto.SHA256.hash(challenge.utf8)) }

    private static func encoded(_ object: [String: Any]) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }

    private static func json(_ object: [String: Any], status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "application/json"], body: .bytes(Array(encoded(object))))
    }

    /// A device refusal as the gateway sends it: `401 unauthorized` with its `attestError`.
    private static func refusal(_ attestError: String) -> HTTPResponse {
        json(
            [
                "error": true, "reason": "refused", "message": "refused", "code": "unauthorized",
                "attestError": attestError,
            ], status: HTTPStatus(code: 401))
    }

    private static func error(_ status: Int, _ code: String, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var response = json(
            ["error": true, "reason": "refused: \(code)", "message": "refused: \(code)", "code": code],
            status: HTTPStatus(code: status))
        for (name, value) in headers { response.headers.add(name: name, value: value) }
        return response
    }
}
