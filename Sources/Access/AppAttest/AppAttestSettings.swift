import Crypto

/// The device settings (docs/app-attest.md, docs/android.md): which iPhone apps may register
/// devices (`APP_ATTEST_APP_IDS`, in which App Attest environment), which Android apps
/// (`ANDROID_ATTEST_*`), and, for both platforms, whether callers must be such devices, the
/// sessions' plan and life, and how many devices may register.
package struct AppAttestSettings: Sendable, Equatable {
    /// Which App Attest environment a device's key may come from (its attestation's AAGUID).
    package enum Environment: String, Sendable, CaseIterable {
        /// AAGUID `appattest` followed by seven zero bytes: App Store, TestFlight, enterprise builds.
        case production
        /// AAGUID `appattestdevelop`: builds run from Xcode with the development entitlement.
        case development
        case both

        /// Whether a key attested in `environment` may register.
        package func allows(_ environment: AppAttestEnvironment) -> Bool {
            switch self {
            case .both: return true
            case .production: return environment == .production
            case .development: return environment == .development
            }
        }
    }

    /// Who must come as an attested device.
    package enum Requirement: String, Sendable, CaseIterable {
        /// Nobody: devices are one more way in.
        case off
        /// A caller without a gateway token, a JWT or a device session is refused; tokens and JWTs work as before.
        case guests
        /// Only device sessions are served on the caller routes.
        case all
    }

    /// `APP_ATTEST_APP_IDS`: `TEAMID.bundle.identifier` values, each a device's rpId; empty:
    /// no iPhone registers.
    package var appIDs: [String]
    /// `ANDROID_ATTEST_*`; nil: no Android phone registers.
    package var android: AndroidAttestSettings?
    /// `APP_ATTEST_REGISTRATIONS_PER_ADDRESS_PER_DAY`: devices one client address (an IPv6
    /// prefix) may register in 24 hours; nil: no limit.
    package var registrationsPerAddressPerDay: Int? = 50
    /// `APP_ATTEST_REGISTRATIONS_PER_DAY`: devices the gateway registers in 24 hours; nil: no limit.
    package var registrationsPerDay: Int? = 10_000
    /// `APP_ATTEST_RISK_*`: Apple's risk metric asked for each new iPhone; nil: never asked.
    package var risk: RiskCheck?

    /// Apple's fraud-risk exchange (docs/app-attest.md, "One phone, one device").
    package struct RiskCheck: Sendable, Equatable {
        /// `APP_ATTEST_RISK_KEY_ID`: the App Attest (DeviceCheck) key's id in Apple's developer account.
        package var keyID: String
        /// `APP_ATTEST_RISK_PRIVATE_KEY_FILE` and its PEM (`AuthKey_<key id>.p8`).
        package var privateKeyPath: String
        package var privateKeyPEM: String
        /// `APP_ATTEST_RISK_URL`: nil asks Apple's server of the device's environment.
        package var url: String?
        /// `APP_ATTEST_RISK_MAXIMUM`: a device whose metric is above it is revoked.
        package var maximum = 10

        package init(keyID: String, privateKeyPath: String, privateKeyPEM: String) {
            self.keyID = keyID
            self.privateKeyPath = privateKeyPath
            self.privateKeyPEM = privateKeyPEM
        }

        /// Apple's servers, by the environment the key was attested in.
        package static func appleURL(_ environment: AppAttestEnvironment) -> String {
            switch environment {
            case .production: return "https://data.appattest.apple.com/v1/attestationData"
            case .development: return "https://data-development.appattest.apple.com/v1/attestationData"
            }
        }
    }
    /// `APP_ATTEST_ENVIRONMENT`.
    package var environment = Environment.production
    /// `APP_ATTEST_REQUIRED`.
    package var requirement = Requirement.off
    /// `APP_ATTEST_PLAN`: the plan a device's session gets.
    package var plan = "device"
    /// `APP_ATTEST_SESSION_SECONDS`: how long a session token lives.
    package var sessionLifetime: Duration = .seconds(3600)
    /// `APP_ATTEST_REQUESTS_PER_MINUTE`: challenges, registrations and sessions a client address may ask for.
    package var requestsPerMinute = 60
    /// `APP_ATTEST_EXTRA_ROOT_CA_FILE` and its PEM: a root trusted beside Apple's, for chains
    /// made in tests. The server refuses to start with it outside `--env testing`.
    package var extraRoot: (path: String, pem: String)?

    /// How long a challenge may wait for its registration or session.
    package static let challengeLifetime: Duration = .seconds(300)

    package init(appIDs: [String]) {
        self.appIDs = appIDs
    }

    package static func == (lhs: AppAttestSettings, rhs: AppAttestSettings) -> Bool {
        lhs.appIDs == rhs.appIDs && lhs.environment == rhs.environment && lhs.requirement == rhs.requirement
            && lhs.plan == rhs.plan
            && lhs.sessionLifetime == rhs.sessionLifetime && lhs.requestsPerMinute == rhs.requestsPerMinute
            && lhs.extraRoot?.path == rhs.extraRoot?.path && lhs.extraRoot?.pem == rhs.extraRoot?.pem
            && lhs.android == rhs.android && lhs.registrationsPerAddressPerDay == rhs.registrationsPerAddressPerDay
            && lhs.registrationsPerDay == rhs.registrationsPerDay && lhs.risk == rhs.risk
    }

    /// Whether `text` is an App ID: a ten-character team identifier of capital letters and
    /// digits, a dot, and a bundle identifier of letters, digits, `-` and `.`.
    package static func isValidAppID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count > 11, bytes.count <= 255, bytes[10] == UInt8(ascii: ".") else { return false }
        let team = bytes[..<10]
        let bundle = bytes[11...]
        let teamOK = team.allSatisfy {
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
        }
        let bundleOK = bundle.allSatisfy {
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "-")
                || $0 == UInt8(ascii: ".")
        }
        return teamOK && bundleOK && bundle.first != UInt8(ascii: ".") && bundle.last != UInt8(ascii: ".")
    }

}

/// The App Attest environment a key was attested in, from its AAGUID.
package enum AppAttestEnvironment: String, Sendable {
    case production
    case development
}
