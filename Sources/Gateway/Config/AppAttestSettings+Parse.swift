import Access
import Crypto
import TextTasks

extension AppAttestSettings {
    /// The `APP_ATTEST_*` variables; nil when `APP_ATTEST_APP_IDS` is not set (and then no other may be).
    static func parse(
        value: (String) -> String?, integer: (String, ClosedRange<Int>) throws(ConfigurationError) -> Int?,
        readFile: (String) -> String?
    ) throws(ConfigurationError) -> AppAttestSettings? {
        let others = [
            "APP_ATTEST_ENVIRONMENT", "APP_ATTEST_REQUIRED", "APP_ATTEST_PLAN", "APP_ATTEST_SESSION_SECONDS",
            "APP_ATTEST_REQUESTS_PER_MINUTE", "APP_ATTEST_EXTRA_ROOT_CA_FILE",
        ]
        guard let list = value("APP_ATTEST_APP_IDS") else {
            // A device requirement with no app to attest would refuse every guest for nothing.
            for name in others where value(name) != nil {
                throw ConfigurationError(
                    "\(name) is set but APP_ATTEST_APP_IDS is not: name the apps (TEAMID.bundle.identifier) that may register"
                )
            }
            return nil
        }
        let ids = list.split(separator: ",").map { TextTrim.trimmed(String($0)) }.filter { !$0.isEmpty }
        guard !ids.isEmpty, ids.allSatisfy(isValidAppID) else {
            throw ConfigurationError(
                "APP_ATTEST_APP_IDS must list App IDs as TEAMID.bundle.identifier (a 10-character team id, a dot, a bundle id), separated by commas"
            )
        }
        var settings = AppAttestSettings(appIDs: Array(Set(ids)).sorted())
        if let name = value("APP_ATTEST_ENVIRONMENT") {
            guard let environment = Environment(rawValue: name.lowercased()) else {
                throw ConfigurationError("APP_ATTEST_ENVIRONMENT must be production, development or both")
            }
            settings.environment = environment
        }
        if let name = value("APP_ATTEST_REQUIRED") {
            guard let requirement = Requirement(rawValue: name.lowercased()) else {
                throw ConfigurationError("APP_ATTEST_REQUIRED must be off, guests or all")
            }
            settings.requirement = requirement
        }
        if let plan = value("APP_ATTEST_PLAN") {
            guard CallerToken.isValidUserID(plan) else {
                throw ConfigurationError("APP_ATTEST_PLAN must be a plan name")
            }
            settings.plan = plan
        }
        if let seconds = try integer("APP_ATTEST_SESSION_SECONDS", 60...86_400) {
            settings.sessionLifetime = .seconds(seconds)
        }
        settings.requestsPerMinute =
            try integer("APP_ATTEST_REQUESTS_PER_MINUTE", 1...1_000_000) ?? settings.requestsPerMinute
        if let path = value("APP_ATTEST_EXTRA_ROOT_CA_FILE") {
            guard let pem = readFile(path), (try? X509Certificate(pem: pem)) != nil else {
                throw ConfigurationError("APP_ATTEST_EXTRA_ROOT_CA_FILE cannot be read as a PEM certificate")
            }
            settings.extraRoot = (path, pem)
        }
        return settings
    }
}
