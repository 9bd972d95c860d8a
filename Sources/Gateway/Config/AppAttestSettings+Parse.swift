import Access
import Crypto
import TextTasks

extension AppAttestSettings {
    /// The `APP_ATTEST_*` and `ANDROID_ATTEST_*` variables; nil when neither
    /// `APP_ATTEST_APP_IDS` nor `ANDROID_ATTEST_APPS` is set (and then no other may be).
    static func parse(
        value: (String) -> String?, integer: (String, ClosedRange<Int>) throws(ConfigurationError) -> Int?,
        flag: (String) throws(ConfigurationError) -> Bool?, readFile: (String) -> String?
    ) throws(ConfigurationError) -> AppAttestSettings? {
        let shared = [
            "APP_ATTEST_REQUIRED", "APP_ATTEST_PLAN", "APP_ATTEST_SESSION_SECONDS", "APP_ATTEST_REQUESTS_PER_MINUTE",
            "APP_ATTEST_REGISTRATIONS_PER_ADDRESS_PER_DAY", "APP_ATTEST_REGISTRATIONS_PER_DAY",
        ]
        let iosOnly = [
            "APP_ATTEST_ENVIRONMENT", "APP_ATTEST_EXTRA_ROOT_CA_FILE", "APP_ATTEST_RISK_KEY_ID",
            "APP_ATTEST_RISK_PRIVATE_KEY_FILE", "APP_ATTEST_RISK_URL", "APP_ATTEST_RISK_MAXIMUM",
        ]
        let android = try AndroidAttestSettings.parse(value: value, integer: integer, flag: flag, readFile: readFile)
        guard let list = value("APP_ATTEST_APP_IDS") else {
            // A device requirement with no app to attest would refuse every guest for nothing.
            for name in iosOnly + (android == nil ? shared : []) where value(name) != nil {
                throw ConfigurationError(
                    "\(name) is set but APP_ATTEST_APP_IDS is not: name the apps (TEAMID.bundle.identifier) that may "
                        + "register" + (iosOnly.contains(name) ? "" : ", or ANDROID_ATTEST_APPS the Android apps")
                )
            }
            guard let android else { return nil }
            var settings = AppAttestSettings(appIDs: [])
            settings.android = android
            try settings.parseShared(value: value, integer: integer)
            return settings
        }
        let ids = list.split(separator: ",").map { TextTrim.trimmed(String($0)) }.filter { !$0.isEmpty }
        guard !ids.isEmpty, ids.allSatisfy(isValidAppID) else {
            throw ConfigurationError(
                "APP_ATTEST_APP_IDS must list App IDs as TEAMID.bundle.identifier (a 10-character team id, a dot, a "
                    + "bundle id), separated by commas"
            )
        }
        var settings = AppAttestSettings(appIDs: Array(Set(ids)).sorted())
        settings.android = android
        if let name = value("APP_ATTEST_ENVIRONMENT") {
            guard let environment = Environment(rawValue: name.lowercased()) else {
                throw ConfigurationError("APP_ATTEST_ENVIRONMENT must be production, development or both")
            }
            settings.environment = environment
        }
        if let path = value("APP_ATTEST_EXTRA_ROOT_CA_FILE") {
            guard let pem = readFile(path), (try? X509Certificate(pem: pem)) != nil else {
                throw ConfigurationError("APP_ATTEST_EXTRA_ROOT_CA_FILE cannot be read as a PEM certificate")
            }
            settings.extraRoot = (path, pem)
        }
        settings.risk = try RiskCheck.parse(value: value, integer: integer, readFile: readFile)
        try settings.parseShared(value: value, integer: integer)
        return settings
    }

    /// The settings both platforms share.
    private mutating func parseShared(
        value: (String) -> String?, integer: (String, ClosedRange<Int>) throws(ConfigurationError) -> Int?
    ) throws(ConfigurationError) {
        if let name = value("APP_ATTEST_REQUIRED") {
            guard let requirement = Requirement(rawValue: name.lowercased()) else {
                throw ConfigurationError("APP_ATTEST_REQUIRED must be off, guests or all")
            }
            self.requirement = requirement
        }
        if let plan = value("APP_ATTEST_PLAN") {
            guard CallerToken.isValidUserID(plan) else {
                throw ConfigurationError("APP_ATTEST_PLAN must be a plan name")
            }
            self.plan = plan
        }
        if let seconds = try integer("APP_ATTEST_SESSION_SECONDS", 60...86_400) {
            self.sessionLifetime = .seconds(seconds)
        }
        self.requestsPerMinute =
            try integer("APP_ATTEST_REQUESTS_PER_MINUTE", 1...1_000_000) ?? self.requestsPerMinute
        // 0 turns a limit off.
        if let limit = try integer("APP_ATTEST_REGISTRATIONS_PER_ADDRESS_PER_DAY", 0...10_000_000) {
            self.registrationsPerAddressPerDay = limit == 0 ? nil : limit
        }
        if let limit = try integer("APP_ATTEST_REGISTRATIONS_PER_DAY", 0...100_000_000) {
            self.registrationsPerDay = limit == 0 ? nil : limit
        }
    }
}

extension AppAttestSettings.RiskCheck {
    /// `APP_ATTEST_RISK_*`: nil unless the key id and the key file are both set (and then the
    /// URL and the maximum may be).
    static func parse(
        value: (String) -> String?, integer: (String, ClosedRange<Int>) throws(ConfigurationError) -> Int?,
        readFile: (String) -> String?
    ) throws(ConfigurationError) -> AppAttestSettings.RiskCheck? {
        let keyID = value("APP_ATTEST_RISK_KEY_ID")
        let path = value("APP_ATTEST_RISK_PRIVATE_KEY_FILE")
        guard let keyID, let path else {
            for name in [
                "APP_ATTEST_RISK_KEY_ID", "APP_ATTEST_RISK_PRIVATE_KEY_FILE", "APP_ATTEST_RISK_URL",
                "APP_ATTEST_RISK_MAXIMUM",
            ] where value(name) != nil {
                throw ConfigurationError(
                    "\(name) is set but APP_ATTEST_RISK_KEY_ID and APP_ATTEST_RISK_PRIVATE_KEY_FILE are not both: "
                        + "Apple's risk metric needs the App Attest key's id and its .p8 file")
            }
            return nil
        }
        guard keyID.utf8.count == 10, keyID.utf8.allSatisfy({ $0 >= 0x30 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C })
        else { throw ConfigurationError("APP_ATTEST_RISK_KEY_ID must be the key's 10-character id") }
        guard let pem = readFile(path), (try? PrivateKey(pem: pem)) != nil else {
            throw ConfigurationError("APP_ATTEST_RISK_PRIVATE_KEY_FILE cannot be read as an unencrypted P-256 .p8 key")
        }
        var risk = AppAttestSettings.RiskCheck(keyID: keyID, privateKeyPath: path, privateKeyPEM: pem)
        if let url = value("APP_ATTEST_RISK_URL") {
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
                throw ConfigurationError("APP_ATTEST_RISK_URL must be an http:// or https:// URL")
            }
            risk.url = url
        }
        risk.maximum = try integer("APP_ATTEST_RISK_MAXIMUM", 1...1_000) ?? risk.maximum
        return risk
    }
}

extension AndroidAttestSettings {
    /// The `ANDROID_ATTEST_*` variables; nil when `ANDROID_ATTEST_APPS` is not set (and then no other may be).
    static func parse(
        value: (String) -> String?, integer: (String, ClosedRange<Int>) throws(ConfigurationError) -> Int?,
        flag: (String) throws(ConfigurationError) -> Bool?, readFile: (String) -> String?
    ) throws(ConfigurationError) -> AndroidAttestSettings? {
        let others = [
            "ANDROID_ATTEST_ALLOW_UNLOCKED", "ANDROID_ATTEST_REQUIRE_STRONGBOX", "ANDROID_ATTEST_MIN_PATCH_LEVEL",
            "ANDROID_ATTEST_REVOCATION_FILE", "ANDROID_ATTEST_REVOCATION_URL",
            "ANDROID_ATTEST_REVOCATION_REFRESH_SECONDS", "ANDROID_ATTEST_EXTRA_ROOT_CA_FILE",
        ]
        guard let list = value("ANDROID_ATTEST_APPS") else {
            for name in others where value(name) != nil {
                throw ConfigurationError(
                    "\(name) is set but ANDROID_ATTEST_APPS is not: name the packages and signing-certificate "
                        + "digests that may register")
            }
            return nil
        }
        let format =
            "ANDROID_ATTEST_APPS must list package=SHA-256 pairs (the package name, '=', the signing certificate's "
            + "SHA-256 in hex, colons allowed), separated by commas; repeat a package for each of its digests"
        var apps: [String: [[UInt8]]] = [:]
        for entry in list.split(separator: ",").map({ TextTrim.trimmed(String($0)) }) where !entry.isEmpty {
            let parts = entry.split(separator: "=", maxSplits: 1).map { TextTrim.trimmed(String($0)) }
            guard parts.count == 2, isValidPackage(parts[0]), let digest = digest(parts[1]) else {
                throw ConfigurationError(format)
            }
            if apps[parts[0], default: []].contains(digest) == false { apps[parts[0], default: []].append(digest) }
        }
        guard !apps.isEmpty else { throw ConfigurationError(format) }
        var settings = AndroidAttestSettings(policy: AndroidAttestationPolicy(apps: apps))
        if let allowed = try flag("ANDROID_ATTEST_ALLOW_UNLOCKED") {
            settings.policy.requireLockedBootloader = !allowed
        }
        settings.policy.requireStrongBox = try flag("ANDROID_ATTEST_REQUIRE_STRONGBOX") ?? false
        if let text = value("ANDROID_ATTEST_MIN_PATCH_LEVEL") {
            // YYYYMM, as the phone's osPatchLevel says it.
            guard text.utf8.count == 6, let level = Int64(text), (2016_01...2099_12).contains(level),
                (1...12).contains(level % 100)
            else { throw ConfigurationError("ANDROID_ATTEST_MIN_PATCH_LEVEL must be a year and month as YYYYMM") }
            settings.policy.minimumPatchLevel = level
        }
        settings.revocationFile = value("ANDROID_ATTEST_REVOCATION_FILE")
        if let url = value("ANDROID_ATTEST_REVOCATION_URL") {
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
                throw ConfigurationError("ANDROID_ATTEST_REVOCATION_URL must be an http:// or https:// URL")
            }
            settings.revocationURL = url
        }
        if let seconds = try integer("ANDROID_ATTEST_REVOCATION_REFRESH_SECONDS", 60...86_400) {
            settings.revocationRefresh = .seconds(seconds)
        }
        if let file = settings.revocationFile, settings.revocationURL == nil {
            // A list that never refreshes must at least be one.
            guard let text = readFile(file), (try? AndroidRevocationList(json: Array(text.utf8))) != nil else {
                throw ConfigurationError(
                    "ANDROID_ATTEST_REVOCATION_FILE cannot be read as a revocation list (Google's JSON format)")
            }
        }
        if let path = value("ANDROID_ATTEST_EXTRA_ROOT_CA_FILE") {
            guard let pem = readFile(path), (try? X509Certificate(pem: pem)) != nil else {
                throw ConfigurationError("ANDROID_ATTEST_EXTRA_ROOT_CA_FILE cannot be read as a PEM certificate")
            }
            settings.extraRoot = (path, pem)
        }
        return settings
    }
}
