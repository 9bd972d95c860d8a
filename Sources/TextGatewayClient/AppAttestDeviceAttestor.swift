#if canImport(DeviceCheck) && canImport(Security)
    import DeviceCheck
    public import Foundation
    import Security

    /// ``DeviceAttestor`` over App Attest (`DCAppAttestService.shared`), keeping the key's id in
    /// the keychain (this device only, readable after the first unlock, so a session can be
    /// renewed while the app works in the background).
    ///
    /// ```swift
    /// let client = AppAttestDeviceAttestor.isSupported
    ///     ? TextGatewayClient(baseURL: gatewayURL, deviceAttestor: AppAttestDeviceAttestor())
    ///     : TextGatewayClient(baseURL: gatewayURL)   // simulator: as a guest, if the gateway allows it
    /// ```
    ///
    /// The app needs the App Attest capability (`com.apple.developer.devicecheck.appattest-environment`
    /// in its entitlements). The key itself never leaves the Secure Enclave; a reinstall or a
    /// restore onto another device loses it, and the next session makes and registers a new one.
    @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
    public struct AppAttestDeviceAttestor: DeviceAttestor {
        /// The keychain service the key's id is kept under.
        public let keychainService: String

        /// An attestor that keeps its key's id under `keychainService` (one key per service).
        public init(keychainService: String = "TextGatewayClient.AppAttest") {
            self.keychainService = keychainService
        }

        /// Whether this device can attest: false on the simulator and on devices without a
        /// Secure Enclave.
        public static var isSupported: Bool { DCAppAttestService.shared.isSupported }

        public func loadKey() async throws -> DeviceKey? {
            var query = baseQuery
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var item: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &item)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = item as? Data else { throw KeychainError(status: status) }
            return try JSONDecoder().decode(DeviceKey.self, from: data)
        }

        public func saveKey(_ key: DeviceKey?) async throws {
            let deleted = SecItemDelete(baseQuery as CFDictionary)
            guard deleted == errSecSuccess || deleted == errSecItemNotFound else {
                throw KeychainError(status: deleted)
            }
            guard let key else { return }
            var item = baseQuery
            item[kSecValueData as String] = try JSONEncoder().encode(key)
            item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            let added = SecItemAdd(item as CFDictionary, nil)
            guard added == errSecSuccess else { throw KeychainError(status: added) }
        }

        public func generateKey() async throws -> String {
            let service = DCAppAttestService.shared
            guard service.isSupported else { throw DeviceAttestationError.unsupported }
            do {
                return try await service.generateKey()
            } catch {
                throw Self.translated(error)
            }
        }

        public func attest(keyId: String, clientDataHash: Data) async throws -> Data {
            do {
                return try await DCAppAttestService.shared.attestKey(keyId, clientDataHash: clientDataHash)
            } catch {
                throw Self.translated(error)
            }
        }

        public func assert(keyId: String, clientDataHash: Data) async throws -> Data {
            do {
                return try await DCAppAttestService.shared.generateAssertion(keyId, clientDataHash: clientDataHash)
            } catch {
                throw Self.translated(error)
            }
        }

        /// A keychain call failed with `status` (an `OSStatus`, see `SecCopyErrorMessageString`).
        public struct KeychainError: Error, Sendable, Hashable {
            /// The `OSStatus` the keychain answered.
            public var status: Int32
        }

        private var baseQuery: [String: Any] {
            [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: keychainService,
                kSecAttrAccount as String: "device-key",
                // On macOS, the iOS-style keychain, where the accessibility above is honoured.
                kSecUseDataProtectionKeychain as String: true,
            ]
        }

        /// The device's errors that the session acts on, as ``DeviceAttestationError``; others as they came.
        private static func translated(_ error: any Error) -> any Error {
            guard let error = error as? DCError else { return error }
            switch error.code {
            case .invalidKey: return DeviceAttestationError.invalidKey
            case .featureUnsupported: return DeviceAttestationError.unsupported
            default: return error
            }
        }
    }
#endif
