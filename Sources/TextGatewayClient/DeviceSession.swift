public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// A device's session with the gateway under App Attest: the short-lived `tgd_…` token an
/// app without sign-in sends as its bearer.
///
/// The first time, it makes a device key and registers it (`POST /api/attest/challenge`,
/// then ``DeviceAttestor/attest(keyId:clientDataHash:)`` and `POST /api/attest/register`);
/// that happens once per install. Then each session is a fresh challenge, an
/// ``DeviceAttestor/assert(keyId:clientDataHash:)`` and `POST /api/attest/session`. The token
/// is kept until little of its life is left (five minutes, or a tenth of it for shorter
/// sessions) and renewed by the next caller; callers that need it at the same time share one
/// renewal.
///
/// A key the device lost (``DeviceAttestationError/invalidKey``) or the gateway no longer
/// knows (`401` from `/api/attest/session` with `attestError` `unknown_device`, or without
/// one from a gateway that sends none) is replaced by a new, newly registered key, once per
/// renewal; a second refusal is thrown. A challenge that expired on the way (`challenge`) is
/// fetched again, once; any other refusal is thrown and the key kept: a new key would not
/// change the app, the phone or the configuration the gateway refused.
///
/// ``TextGatewayClient/init(baseURL:deviceAttestor:session:retry:)`` makes one; make one
/// yourself to share it between clients or to give it a clock.
public actor DeviceSession {
    /// The gateway whose `/api/attest` routes it calls.
    public nonisolated let baseURL: URL
    /// The device key's maker and keeper.
    public nonisolated let attestor: any DeviceAttestor
    private let session: URLSession
    private let now: @Sendable () -> Date
    private var current: Grant?
    private var renewal: Task<Grant, any Error>?

    /// A session with the gateway at `baseURL`, for the device `attestor` speaks for.
    /// - Parameters:
    ///   - baseURL: The gateway's root URL.
    ///   - attestor: The device's key; ``AppAttestDeviceAttestor`` on iOS.
    ///   - session: The `URLSession` of the attest calls.
    ///   - now: The clock that says when a token is due for renewal.
    public init(
        baseURL: URL, attestor: any DeviceAttestor, session: URLSession = .shared,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.baseURL = baseURL
        self.attestor = attestor
        self.session = session
        self.now = now
    }

    /// The gateway's id of this device, once a session is open.
    public var deviceId: String? { current?.deviceId }

    /// A token to send as `Authorization: Bearer`: the one held while it is fresh, else a new one.
    /// - Throws: ``TextGatewayError`` when the gateway refuses, ``DeviceAttestationError`` or
    ///   the attestor's own errors when the device does, `URLError` for transport failures.
    public func token() async throws -> String {
        if let current, now() < current.renewAt { return current.token }
        return try await renewed().token
    }

    /// A new token in place of `refused`, which the gateway answered with `401 invalid_token`
    /// (the session expired early, the device was revoked). When another caller renewed it
    /// meanwhile, that caller's token.
    public func renew(replacing refused: String) async throws -> String {
        if let current {
            if current.token != refused, now() < current.renewAt { return current.token }
            if current.token == refused { self.current = nil }
        }
        return try await renewed().token
    }

    /// The renewal under way, or a new one.
    private func renewed() async throws -> Grant {
        if let renewal { return try await renewal.value }
        let task = Task { try await self.open() }
        renewal = task
        defer { renewal = nil }
        let grant = try await task.value
        current = grant
        return grant
    }

    /// A session on the stored key, or on a new key when that one is lost.
    private func open() async throws -> Grant {
        do {
            return try await openOnce()
        } catch is KeyLost {
            try await attestor.saveKey(nil)
            do {
                return try await openOnce()
            } catch let again as KeyLost {
                throw again.cause
            }
        }
    }

    private func openOnce() async throws -> Grant {
        do {
            return try await openOnKey()
        } catch is ChallengeRefused {
            // Expired or used on the way (a slow network, a paused app): one more, fresh.
            do {
                return try await openOnKey()
            } catch let again as ChallengeRefused {
                throw again.cause
            }
        }
    }

    private func openOnKey() async throws -> Grant {
        var key = try await registeredKey()
        let challenge = try await challenge()
        let assertion: Data
        do {
            assertion = try await attestor.assert(keyId: key.id, clientDataHash: clientDataHash(of: challenge))
        } catch DeviceAttestationError.invalidKey {
            throw KeyLost(cause: DeviceAttestationError.invalidKey)
        }
        let (data, response): (Data, HTTPURLResponse)
        do {
            (data, response) = try await post(
                "api/attest/session",
                SessionBody(keyId: key.id, assertion: assertion.base64EncodedString(), challenge: challenge))
        } catch let error as TextGatewayError where error.status == 401 {
            switch error.attestError {
            case "unknown_device", nil: throw KeyLost(cause: error)
            case "challenge": throw ChallengeRefused(cause: error)
            default: throw error
            }
        }
        let wire = try JSONDecoder().decode(SessionWire.self, from: data)
        if !key.isRegistered {
            // The gateway knows a key whose registration never answered: it did arrive.
            key.isRegistered = true
            try await attestor.saveKey(key)
        }
        return Grant(
            token: wire.token,
            deviceId: wire.deviceId,
            renewAt: Self.renewalDate(
                expiresAt: Date(timeIntervalSince1970: wire.expiresAt),
                serverDate: response.value(forHTTPHeaderField: "Date").flatMap(TextGatewayClient.httpDate),
                receivedAt: now()
            )
        )
    }

    /// The stored key, registered first when it is not; made first when there is none.
    ///
    /// A stored key the device refuses to attest again (it attests a key once) was sent to
    /// the gateway before, whose answer never came: it is returned unregistered, and the
    /// session it opens, or the gateway's refusal of it, says whether it was registered.
    private func registeredKey() async throws -> DeviceKey {
        var key: DeviceKey
        let stored = try await attestor.loadKey()
        if let stored {
            key = stored
        } else {
            // Kept before it is registered, so that a registration that fails does not make a
            // new key each time.
            key = DeviceKey(id: try await attestor.generateKey(), isRegistered: false)
            try await attestor.saveKey(key)
        }
        if key.isRegistered { return key }

        let challenge = try await challenge()
        let attestation: Data
        do {
            attestation = try await attestor.attest(keyId: key.id, clientDataHash: clientDataHash(of: challenge))
        } catch DeviceAttestationError.invalidKey {
            guard stored != nil else { throw KeyLost(cause: DeviceAttestationError.invalidKey) }
            return key
        }
        do {
            _ = try await post(
                "api/attest/register",
                RegisterBody(keyId: key.id, attestation: attestation.base64EncodedString(), challenge: challenge))
        } catch let error as TextGatewayError where error.status == 409 {
            // Registered already: an earlier registration whose answer never arrived.
        }
        key.isRegistered = true
        try await attestor.saveKey(key)
        return key
    }

    private func challenge() async throws -> String {
        try JSONDecoder().decode(ChallengeWire.self, from: try await post("api/attest/challenge", NoBody()).0).challenge
    }

    /// POSTs `body` as JSON; a non-2xx answer is thrown as ``TextGatewayError``.
    private func post(_ path: String, _ body: some Encodable) async throws -> (Data, HTTPURLResponse) {
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONEncoder().encode(body)
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        guard (200..<300).contains(http.statusCode) else {
            throw TextGatewayClient.error(status: http.statusCode, body: Array(data), headers: http)
        }
        return (data, http)
    }

    /// When to renew a session the gateway says ends at `expiresAt`, by the device's clock.
    ///
    /// Its length is counted from the gateway's `Date`, when it sent one: a device whose clock
    /// is off by an hour would otherwise hold a token it thinks expired, or one that has.
    static func renewalDate(expiresAt: Date, serverDate: Date?, receivedAt: Date) -> Date {
        let lifetime = max(0, expiresAt.timeIntervalSince(serverDate ?? receivedAt))
        return receivedAt.addingTimeInterval(lifetime - min(300, lifetime / 10))
    }
}

extension DeviceSession {
    /// An open session: its token and when to renew it.
    struct Grant: Sendable {
        var token: String
        var deviceId: String
        var renewAt: Date
    }

    /// The key was lost or refused; `cause` is what said so.
    private struct KeyLost: Error {
        var cause: any Error
    }

    private struct ChallengeRefused: Error {
        var cause: TextGatewayError
    }

    private struct NoBody: Encodable {}

    private struct RegisterBody: Encodable {
        var keyId: String
        var attestation: String
        var challenge: String
    }

    private struct SessionBody: Encodable {
        var keyId: String
        var assertion: String
        var challenge: String
    }

    private struct ChallengeWire: Decodable {
        var challenge: String
    }

    private struct SessionWire: Decodable {
        var token: String
        var expiresAt: Double
        var deviceId: String
    }
}
