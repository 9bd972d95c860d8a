import Foundation
import TestSupport
import Testing

@testable import Gateway

/// Settings that are read, or refused: the one list of names against what the configuration
/// reads and documents, the refusal of names that look like settings and are not, and how
/// callers are admitted.
@Suite("Configuration: setting names, refused unknown settings and access")
struct SettingNamesTests {
    /// .env.example as a dictionary, with `changes` applied.
    static func example(_ changes: [String: String] = [:]) throws -> [String: String] {
        try DotEnv.parseDictionary(RepositoryFile.text(".env.example")).merging(changes) { $1 }
    }

    /// The environments that between them take every branch of the reading: the example as it
    /// is (`DARVAREH_*`, `GATEWAY_TOKENS_FILE`), with a JWT key (the other `JWT_*`), and with
    /// two upstreams (`UPSTREAM_<NAME>_*`), and with App Attest (the other `APP_ATTEST_*`).
    static func branches() throws -> [[String: String]] {
        [
            try example(),
            try example(["JWT_HS256_SECRET": String(repeating: "s", count: 32)]),
            try example(["APP_ATTEST_APP_IDS": "ABCDE12345.example.app"]),
            try example([
                "UPSTREAMS": "a,b", "UPSTREAM_A_BASE_URL": "http://127.0.0.1:9/v1",
                "UPSTREAM_B_BASE_URL": "http://127.0.0.1:9/v1",
            ]),
        ]
    }

    @Test("the list of settings is exactly what the configuration reads, over every branch of the reading")
    func listMatchesReads() throws {
        var asked: Set<String> = []
        for environment in try Self.branches() {
            let reads = SettingReads()
            _ = try GatewayConfiguration(environment: environment, reads: reads)
            asked.formUnion(reads.names)
        }
        let known = SettingNames.known(upstreams: ["A", "B"])
        let unlisted = asked.subtracting(known).sorted()
        #expect(unlisted.isEmpty, "read but not in SettingNames (add them there): \(unlisted)")
        let unread = known.subtracting(asked).sorted()
        #expect(unread.isEmpty, "in SettingNames but never read: \(unread)")
    }

    @Test("the configuration looks a variable up only through the helper that records it")
    func readsGoThroughTheRecorder() throws {
        let folder = RepositoryFile.root.appendingPathComponent("Sources/Gateway/Config")
        var lookups: [String] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n")
            where line.contains("environment[") && !line.contains("environment[key] =") {
                lookups.append("\(file): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        // The one in `value(_:)`; a second would read a name the list test never sees.
        #expect(
            lookups == ["GatewayConfiguration.swift: guard let raw = environment[name] else { return nil }"],
            "\(lookups)")
    }

    @Test("every setting is in .env.example or docs/configuration.md, and .env.example names only settings")
    func listMatchesDocuments() throws {
        let documents = try RepositoryFile.text(".env.example") + RepositoryFile.text("docs/configuration.md")
        func mentioned(_ name: String) -> Bool {
            // A whole name: `JWT_JWKS_URL` is not found inside `JWT_JWKS_URL_X`.
            var rest = documents[...]
            while let range = rest.range(of: name) {
                let before =
                    range.lowerBound == documents.startIndex
                    ? nil : documents[documents.index(before: range.lowerBound)]
                let after = range.upperBound == documents.endIndex ? nil : documents[range.upperBound]
                let word: (Character?) -> Bool = { $0.map { $0.isLetter || $0.isNumber || $0 == "_" } ?? false }
                if !word(before), !word(after) { return true }
                rest = documents[range.upperBound...]
            }
            return false
        }
        let missing = SettingNames.fixed.filter { !mentioned($0) }.sorted()
        #expect(missing.isEmpty, "not documented: \(missing)")
        let suffixes = SettingNames.upstreamSuffixes.filter { !documents.contains("_" + $0) }
        #expect(suffixes.isEmpty, "per-upstream suffixes not documented: \(suffixes)")
        let strangers = try Self.example().keys.filter { !SettingNames.fixed.contains($0) }.sorted()
        #expect(strangers.isEmpty, ".env.example names what is not a setting: \(strangers)")
    }

    @Test("docs/configuration.md's \"Unknown settings\" names exactly the families the check refuses")
    func prefixesMatchDocument() throws {
        let document = try RepositoryFile.text("docs/configuration.md")
        let start = try #require(document.range(of: "- any name starting with "), "the list of families")
        let end = try #require(
            document[start.upperBound...].range(of: "that is not a setting below"), "the end of the list")
        // Each family as code: `DARVAREH_`, … `CREATIVE_`.
        let spans = document[start.upperBound..<end.lowerBound].split(separator: "`", omittingEmptySubsequences: false)
        let documented = Set(stride(from: 1, to: spans.count, by: 2).map { String(spans[$0]) })
        #expect(
            documented == Set(SettingNames.prefixes),
            "documented \(documented.sorted()), checked \(SettingNames.prefixes.sorted())")
    }

    @Test(
        "refuses a name that looks like a setting, naming it and the setting meant, never the value",
        arguments: [
            (["GATEWAY_TOKEN": "sk-secret-value"], ["GATEWAY_TOKEN", "did you mean GATEWAY_TOKENS?"]),
            (["GATEWAY_TOKEN_FILE": "sk-secret-value"], ["GATEWAY_TOKEN_FILE", "did you mean GATEWAY_TOKENS_FILE?"]),
            (["darvareh_base_url": "sk-secret-value"], ["darvareh_base_url", "DARVAREH_BASE_URL"]),
            (["Port": "8080"], ["Port", "PORT"]),
            (["log_level": "info"], ["log_level", "LOG_LEVEL"]),
            (["REDIS_TIMEOUT": "50"], ["REDIS_TIMEOUT", "did you mean REDIS_TIMEOUT_MS?"]),
            (["UPSTREAM_TIMEOUT": "5"], ["UPSTREAM_TIMEOUT", "did you mean UPSTREAM_TIMEOUT_SECONDS?"]),
            (["JOB_WORKER": "2"], ["JOB_WORKER", "did you mean JOB_WORKERS?"]),
            (["METRICS_TOKN": "sk-secret-value"], ["METRICS_TOKN", "did you mean METRICS_TOKEN?"]),
            (["AUTH_REQUIRE": "on"], ["AUTH_REQUIRE", "did you mean AUTH_REQUIRED?"]),
            (["jwt_hs256_secret": "sk-secret-value"], ["jwt_hs256_secret", "JWT_HS256_SECRET"]),
            (
                ["UPSTREAMS": "a", "UPSTREAM_A_BASEURL": "http://x"],
                ["UPSTREAM_A_BASEURL", "did you mean UPSTREAM_A_BASE_URL?"]
            ),
            (
                ["UPSTREAMS": "a", "upstream_a_api_key": "sk-secret-value"],
                ["upstream_a_api_key", "UPSTREAM_A_API_KEY"]
            ),
            (
                ["UPSTREAMS": "a", "UPSTREAM_A_SUMARY_MODEL_ID": "m"],
                ["UPSTREAM_A_SUMARY_MODEL_ID", "did you mean UPSTREAM_A_SUMMARY_MODEL_ID?"]
            ),
            (
                ["UPSTREAMS": "a", "UPSTREAM_C_BASE_URL": "http://x"],
                ["UPSTREAM_C_BASE_URL", "upstream c", "UPSTREAMS lists a"]
            ),
            (["UPSTREAM_BACKUP_API_KEY": "sk-secret-value"], ["UPSTREAM_BACKUP_API_KEY", "UPSTREAMS is not set"]),
            (["MAX_TOKEN": "99"], ["unknown setting MAX_TOKEN", "did you mean MAX_TOKENS?"]),
            (["MAX_TOKENS_PER_CALL": "99"], ["unknown setting MAX_TOKENS_PER_CALL", "did you mean MAX_TOKENS?"]),
            (["MAX_CHOICE": "2"], ["unknown setting MAX_CHOICE", "did you mean MAX_CHOICES?"]),
            (["ADMIN_TOKN": "sk-secret-value"], ["unknown setting ADMIN_TOKN", "did you mean ADMIN_TOKEN?"]),
            (["ADMIN_TOKENS": "sk-secret-value"], ["unknown setting ADMIN_TOKENS", "did you mean ADMIN_TOKEN?"]),
            (
                ["ADMIN_FAILURES": "3"],
                ["unknown setting ADMIN_FAILURES", "did you mean ADMIN_FAILURES_PER_MINUTE?"]
            ),
            (
                ["IDEMPOTENCY_TTL": "600"],
                ["unknown setting IDEMPOTENCY_TTL", "did you mean IDEMPOTENCY_TTL_SECONDS?"]
            ),
            (["IPV6_CLIENT_PREFIXES": "56"], ["IPV6_CLIENT_PREFIXES", "did you mean IPV6_CLIENT_PREFIX?"]),
            (["admin_token": "sk-secret-value"], ["admin_token", "ADMIN_TOKEN"]),
        ] as [([String: String], [String])]
    )
    func refusesUnknownNames(environment: [String: String], mentions: [String]) {
        do {
            _ = try GatewayConfiguration(environment: environment)
            Issue.record("accepted \(environment.keys.sorted())")
        } catch {
            for text in mentions { #expect(error.message.contains(text), "\(error.message)") }
            #expect(!error.message.contains("sk-secret-value"))
        }
    }

    @Test("a name under a reserved prefix that is near no setting is refused without a guess; all are named at once")
    func refusesWithoutGuess() {
        do {
            _ = try GatewayConfiguration(environment: [
                "APP_ATTEST_MODE_FLAGS": "T", "STREAM_DELTAS": "50", "GATEWAY_URL": "http://x",
            ])
            Issue.record("accepted")
        } catch {
            for name in ["APP_ATTEST_MODE_FLAGS", "STREAM_DELTAS", "GATEWAY_URL"] {
                #expect(error.message.contains("unknown setting \(name)"))
            }
            #expect(!error.message.contains("APP_ATTEST_MODE_FLAGS: did you mean"), "\(error.message)")
            #expect(error.message.contains("APP_ATTEST_"))
        }
    }

    @Test(
        "accepts what is not the gateway's: other tools' names, CI's, Kubernetes' service links",
        arguments: [
            "PATH", "HOME", "HOSTNAME", "LOG_DIR", "CACHE_DIR", "MAX_JOBS", "DATABASE_PASSWORD", "ERROR_REPORTING",
            "JOB_NAME",
            "JOB_BASE_NAME", "JOB_URL", "REDIS_PORT", "REDIS_SERVICE_HOST", "REDIS_SERVICE_PORT",
            "REDIS_SERVICE_PORT_REDIS",
            "REDIS_PORT_6379_TCP", "REDIS_PORT_6379_TCP_ADDR", "GATEWAY_PORT_8080_TCP_PROTO", "GATEWAY_SERVICE_HOST",
            "UPSTREAM_MOCK_PORT_80_TCP_PORT",
            // A Kubernetes service named `admin` or `idempotency`, and other tools' names.
            "ADMIN_SERVICE_HOST", "ADMIN_SERVICE_PORT", "ADMIN_SERVICE_PORT_HTTP", "ADMIN_PORT", "ADMIN_PORT_8080_TCP",
            "ADMIN_PORT_8080_TCP_ADDR", "ADMIN_PORT_8080_TCP_PORT", "ADMIN_PORT_8080_TCP_PROTO",
            "IDEMPOTENCY_SERVICE_HOST", "IDEMPOTENCY_PORT_6379_TCP_ADDR", "ADMIN_USER", "ADMIN_PASSWORD",
            "ADMIN_EMAIL", "MAX_MEMORY", "MAX_CONNECTIONS",
        ]
    )
    func acceptsOthers(name: String) throws {
        _ = try GatewayConfiguration(environment: [name: "x"])
    }

    @Test("accepts every upstream's own names for the upstreams UPSTREAMS lists, in any case of the list")
    func acceptsListedUpstreams() throws {
        var environment = ["UPSTREAMS": "Main, backup_2"]
        for name in ["MAIN", "BACKUP_2"] {
            for suffix in SettingNames.upstreamSuffixes { environment["UPSTREAM_\(name)_\(suffix)"] = "" }
            environment["UPSTREAM_\(name)_BASE_URL"] = "http://127.0.0.1:9/v1"
        }
        #expect(try GatewayConfiguration(environment: environment).upstreams.map(\.name) == ["main", "backup_2"])
    }

    @Test("edit distance, and a guess only when it is close")
    func closeness() {
        #expect(SettingNames.editDistance(Array("kitten".utf8), Array("sitting".utf8)) == 3)
        #expect(SettingNames.editDistance([], Array("abc".utf8)) == 3)
        #expect(SettingNames.closest(to: "JWT_ISUER", in: SettingNames.fixed) == "JWT_ISSUER")
        #expect(SettingNames.closest(to: "JOB_LEASE", in: SettingNames.fixed) == "JOB_LEASE_SECONDS")
        #expect(
            SettingNames.closest(to: "HISTORY_RETENTION_DAYS_MAX", in: SettingNames.fixed) == "HISTORY_RETENTION_DAYS")
        #expect(SettingNames.closest(to: "STREAM_DELTAS", in: SettingNames.fixed) == nil)
        #expect(SettingNames.closest(to: "GATEWAY_URL", in: SettingNames.fixed) == nil)
    }

    @Test(
        "AUTH_REQUIRED=on with no way to authenticate stops the start, saying what to set",
        arguments: [
            ["AUTH_REQUIRED": "on", "DATABASE_URL": "off"],
            ["AUTH_REQUIRED": "on", "DATABASE_URL": "off", "GATEWAY_TOKENS": ""],
        ]
    )
    func requiredWithoutCredentials(environment: [String: String]) {
        do {
            _ = try GatewayConfiguration(environment: environment)
            Issue.record("accepted")
        } catch {
            for name in ["AUTH_REQUIRED", "GATEWAY_TOKENS", "JWT_HS256_SECRET", "DATABASE_URL", "tokens create"] {
                #expect(error.message.contains(name), "\(error.message)")
            }
        }
    }

    @Test(
        "says how callers are admitted: open, tokens, jwt or tokens+jwt",
        arguments: [
            ([:], "open"),
            (["DATABASE_URL": "off"], "open"),
            (["AUTH_REQUIRED": "off", "GATEWAY_TOKENS": String(repeating: "a", count: 64) + ":alice:default"], "open"),
            (["AUTH_REQUIRED": "on"], "tokens"),
            (
                ["GATEWAY_TOKENS": String(repeating: "a", count: 64) + ":alice:default", "DATABASE_URL": "off"],
                "tokens"
            ),
            (["GATEWAY_TOKENS": String(repeating: "a", count: 64) + ":alice:default"], "tokens"),
            (["JWT_HS256_SECRET": String(repeating: "s", count: 32), "DATABASE_URL": "off"], "jwt"),
            (
                ["JWT_HS256_SECRET": String(repeating: "s", count: 32), "AUTH_REQUIRED": "on", "DATABASE_URL": "off"],
                "jwt"
            ),
            (["JWT_HS256_SECRET": String(repeating: "s", count: 32)], "tokens+jwt"),
            (
                [
                    "JWT_HS256_SECRET": String(repeating: "s", count: 32),
                    "GATEWAY_TOKENS": String(repeating: "a", count: 64) + ":alice:default",
                    "DATABASE_URL": "off",
                ], "tokens+jwt"
            ),
            (["JWT_HS256_SECRET": String(repeating: "s", count: 32), "AUTH_REQUIRED": "off"], "open"),
        ] as [([String: String], String)]
    )
    func access(environment: [String: String], expected: String) throws {
        #expect(try GatewayConfiguration(environment: environment).access == expected)
    }

    @Test("a configuration built in code without any way in says none")
    func accessNone() {
        var configuration = GatewayConfiguration()
        configuration.authRequired = true
        configuration.database = .off
        #expect(configuration.access == "none")
    }
}
