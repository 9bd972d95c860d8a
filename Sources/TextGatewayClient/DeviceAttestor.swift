public import Foundation

/// What a ``DeviceSession`` needs from the device: a hardware key that proves, through the
/// platform's attestation service, that requests come from a genuine copy of the app, and a
/// small store for that key's id.
///
/// On iOS ``AppAttestDeviceAttestor`` is this over `DCAppAttestService`; tests use a fake.
/// The session calls it in this order: ``loadKey()``; when there is none, ``generateKey()``
/// and ``saveKey(_:)`` (not yet registered); ``attest(keyId:clientDataHash:)`` once to
/// register the key, then ``saveKey(_:)`` again marked registered; and
/// ``assert(keyId:clientDataHash:)`` each time it opens a session.
///
/// A key the device no longer accepts (`DCError.invalidKey`: the app was restored onto
/// another device, or the key was lost) is reported by throwing
/// ``DeviceAttestationError/invalidKey`` from ``attest(keyId:clientDataHash:)`` or
/// ``assert(keyId:clientDataHash:)``: the session then forgets it (``saveKey(_:)`` with
/// `nil`), makes a new one and registers it. Any other error is passed on to the caller.
public protocol DeviceAttestor: Sendable {
    /// The key this install made before, or `nil` when it has none.
    func loadKey() async throws -> DeviceKey?

    /// Keeps `key` for the next launches (`nil` forgets the stored key). It outlives the
    /// process but should not leave the device: a key id restored onto another device
    /// names a key that is not there.
    func saveKey(_ key: DeviceKey?) async throws

    /// Makes a new key pair in the device's secure hardware; its id (standard base64).
    func generateKey() async throws -> String

    /// The attestation object (CBOR) of key `keyId` over `clientDataHash`, made once per key to
    /// register it.
    /// - Throws: ``DeviceAttestationError/invalidKey`` when the device no longer has the key,
    ///   or has attested it already.
    func attest(keyId: String, clientDataHash: Data) async throws -> Data

    /// The assertion (CBOR: `signature`, `authenticatorData`) of key `keyId` over `clientDataHash`.
    /// - Throws: ``DeviceAttestationError/invalidKey`` when the device no longer has the key.
    func assert(keyId: String, clientDataHash: Data) async throws -> Data
}

/// A device key's id and whether the gateway has registered it.
public struct DeviceKey: Sendable, Hashable, Codable {
    /// The key's id as the attestation service gave it (standard base64).
    public var id: String
    /// Whether `POST /api/attest/register` took the key (or said it had it already).
    public var isRegistered: Bool

    /// A key of the given id and state.
    public init(id: String, isRegistered: Bool) {
        self.id = id
        self.isRegistered = isRegistered
    }
}

/// What a ``DeviceAttestor`` reports about the device itself.
public enum DeviceAttestationError: Error, Sendable, Hashable {
    /// The device no longer accepts the key (`DCError.invalidKey`): make a new one.
    case invalidKey
    /// The device cannot attest (`DCAppAttestService.isSupported` is false, as on the simulator).
    case unsupported
}
