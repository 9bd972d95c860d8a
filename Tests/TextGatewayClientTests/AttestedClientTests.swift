import AccessTestSupport
import Crypto
import Foundation
import Gateway
import GatewayCommandLine
import Synchronization
import Testing
import TextGatewayClient

@testable import Access

/// A device whose Secure Enclave and Apple's CA are played by ``SyntheticAppAttest`` under a
/// test root: what it sends is a real attestation and real assertions, which the real gateway
/// verifies (with the test root trusted, as `APP_ATTEST_EXTRA_ROOT_CA_FILE` does).
final class SyntheticDeviceAttestor: DeviceAttestor {
    private struct State {
        var stored: DeviceKey?
        var devices: [String: SyntheticAppAttest.Device] = [:]
        var counters: [String: UInt32] = [:]
        var attestations = 0
    }

    let authority: SyntheticAppAttest
    private let state = Mutex(State())

    init(authority: SyntheticAppAttest) {
        self.authority = authority
    }

    var attestations: Int { state.withLock { $0.attestations } }

    func loadKey() async throws -> DeviceKey? { state.withLock { $0.stored } }

    func saveKey(_ key: DeviceKey?) async throws { state.withLock { $0.stored = key } }

    func generateKey() async throws -> String {
        let device = try SyntheticAppAttest.Device()
        let id = Data(device.keyID).base64EncodedString()
        state.withLock { $0.devices[id] = device }
        return id
    }

    func attest(keyId: String, clientDataHash: Data) async throws -> Data {
        guard let device = state.withLock({ $0.devices[keyId] }) else { throw DeviceAttestationError.invalidKey }
        state.withLock { $0.attestations += 1 }
        return Data(
            try authority.attestation(
                device, clientDataHash: Array(clientDataHash), now: Int64(Date().timeIntervalSince1970)))
    }

    func assert(keyId: String, clientDataHash: Data) async throws -> Data {
        guard let device = state.withLock({ $0.devices[keyId] }) else { throw DeviceAttestationError.invalidKey }
        let counter = state.withLock { state -> UInt32 in
            state.counters[keyId, default: 0] += 1
            return state.counters[keyId, default: 1]
        }
        return Data(try authority.assertion(device, clientDataHash: Array(clientDataHash), counter: counter))
    }
}

@Suite("TextGatewayClient with a device attestor against the real gateway", .serialized)
struct AttestedClientTests {
    @Test(
        "a client without a token registers, opens a session, is served; revoked, it comes back as a new device"
    )
    func attestedClient() async throws {
        let authority = try SyntheticAppAttest(notBefore: Int64(Date().timeIntervalSince1970) - 86_400)
        try await ClientHarness.with(configure: {
            var settings = AppAttestSettings(appIDs: [SyntheticAppAttest.appID])
            settings.environment = .development
            settings.requirement = .guests
            settings.extraRoot = ("synthetic-root.pem", authority.root.certificate.pem)
            $0.appAttest = settings
        }) { harness in
            // Without a credential the gateway refuses guests.
            await #expect(throws: TextGatewayError.self) {
                _ = try await harness.client(token: nil).process(.titles, text: sampleText())
            }
            let attestor = SyntheticDeviceAttestor(authority: authority)
            let client = TextGatewayClient(baseURL: harness.baseURL, deviceAttestor: attestor)
            let first = try await client.process(.titles, text: sampleText())
            #expect(!first.result.isEmpty)
            _ = try await client.process(.summarize, text: sampleText())
            let configuration = harness.gateway.gateway.configuration
            let devices = try await Self.devices(configuration)
            #expect(devices.count == 1)
            #expect(devices.first?["counter"] as? Int == 1, "one session served both calls")
            let firstDevice = try #require(await client.deviceSession?.deviceId)

            // The operator revokes the device: the next call is refused, the client opens a
            // session (refused: the key is revoked), makes a new key and registers it.
            #expect(await StoreCommand.revokeDevice(id: firstDevice).run(configuration: configuration).status == 0)
            // Polls (30 tries, 100 ms apart): the revocation reaches every instance in its own
            // time, and each try is a whole call of the client.
            var served = false
            for _ in 0..<30 where !served {
                let answered = (try? await client.process(.titles, text: sampleText())) != nil
                let device = await client.deviceSession?.deviceId
                served = answered && device != nil && device != firstDevice
                if !served { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(served)
            #expect(attestor.attestations == 2)
            #expect(try await Self.devices(configuration).count == 2)
        }
    }

    /// `text-gateway devices list --format json`'s devices.
    private static func devices(_ configuration: GatewayConfiguration) async throws -> [[String: Any]] {
        let listed = await StoreCommand.listDevices(format: .json).run(configuration: configuration)
        let object = try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [String: Any]
        return object?["devices"] as? [[String: Any]] ?? []
    }
}
