import Foundation
import Testing

@testable import Gateway
@testable import Upstream

@Suite("Upstream settings: UPSTREAMS and UPSTREAM_<NAME>_*")
struct UpstreamSettingsTests {
    @Test("without UPSTREAMS the DARVAREH_* variables are the one upstream darvareh, as before")
    func darvareh() throws {
        let configuration = try GatewayConfiguration(environment: [
            "DARVAREH_API_KEY": "k", "DARVAREH_MODEL_ID": "m", "SUMMARY_MODEL_ID": "s",
            "DARVAREH_BASE_URL": "http://127.0.0.1:9/v1/",
            "GATEWAY_MODELS": "fast=f",
        ])
        #expect(configuration.upstreams.count == 1)
        let upstream = configuration.effectiveUpstreams[0]
        #expect(upstream.name == "darvareh")
        #expect(upstream.baseURL == "http://127.0.0.1:9/v1")
        #expect(upstream.apiKey == "k")
        #expect(upstream.model(for: .summarize) == "s")
        #expect(upstream.model(for: .rewrite) == "m")
        #expect(upstream.model(forAlias: "fast") == "f")
        #expect(upstream.structuredMode == .jsonSchema)
        #expect(configuration.apiKey == "k" && configuration.model(for: .summarize) == "s")
    }

    @Test(
        "UPSTREAMS lists upstreams in order, each with its own URL, key, models, per-task models, aliases and structured mode"
    )
    func several() throws {
        let configuration = try GatewayConfiguration(environment: [
            "UPSTREAMS": "Primary, backup",
            "UPSTREAM_PRIMARY_BASE_URL": "https://a.example/v1", "UPSTREAM_PRIMARY_API_KEY": "ka",
            "UPSTREAM_PRIMARY_MODEL_ID": "ma",
            "UPSTREAM_PRIMARY_SUMMARY_MODEL_ID": "sa",
            "UPSTREAM_BACKUP_BASE_URL": "http://127.0.0.1:9/v1", "UPSTREAM_BACKUP_API_KEY": "kb",
            "UPSTREAM_BACKUP_MODEL_ID": "mb",
            "UPSTREAM_BACKUP_MODELS": "fast=fb", "UPSTREAM_BACKUP_STRUCTURED": "prompt",
            "GATEWAY_MODELS": "fast=fa",
            "DARVAREH_API_KEY": "ignored",
        ])
        #expect(configuration.upstreams.map(\.name) == ["primary", "backup"])
        let (primary, backup) = (configuration.upstreams[0], configuration.upstreams[1])
        #expect(primary.model(for: .summarize) == "sa" && primary.model(for: .titles) == "ma")
        #expect(primary.model(forAlias: "fast") == "fa")
        #expect(backup.model(for: .summarize) == "mb")
        #expect(backup.model(forAlias: "fast") == "fb" && backup.model(forAlias: "default") == "mb")
        #expect(backup.structuredMode == .prompt)
        #expect(configuration.apiKey == "ka" && configuration.baseURL == "https://a.example/v1")
    }

    @Test("the pool's policy variables")
    func policy() throws {
        let configuration = try GatewayConfiguration(environment: [
            "UPSTREAM_RETRIES": "0", "UPSTREAM_BACKOFF_MS": "50", "UPSTREAM_RETRY_AFTER_MAX_SECONDS": "2",
            "UPSTREAM_TRY_TIMEOUT_SECONDS": "1.5",
            "UPSTREAM_BREAKER_FAILURES": "3", "UPSTREAM_COOLDOWN_SECONDS": "20",
        ])
        let policy = configuration.upstreamPolicy
        #expect(policy.retries == 0 && policy.backoff == .milliseconds(50) && policy.retryAfterLimit == .seconds(2))
        #expect(
            policy.tryTimeout == .milliseconds(1500) && policy.breakerFailures == 3 && policy.cooldown == .seconds(20))
        #expect(try GatewayConfiguration(environment: [:]).upstreamPolicy == UpstreamPolicy())
    }

    @Test("CA files: one for all upstreams, one of an upstream's own, and a missing or non-PEM file refused at start")
    func caFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tg-ca-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let shared = directory.appendingPathComponent("shared.pem").path
        let own = directory.appendingPathComponent("own.pem").path
        let notPEM = directory.appendingPathComponent("not.pem").path
        for path in [shared, own] {
            try "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n".write(
                toFile: path, atomically: true, encoding: .utf8)
        }
        try "hello".write(toFile: notPEM, atomically: true, encoding: .utf8)
        let configuration = try GatewayConfiguration(environment: [
            "UPSTREAMS": "a,b", "UPSTREAM_A_BASE_URL": "https://a/v1", "UPSTREAM_B_BASE_URL": "https://b/v1",
            "UPSTREAM_CA_FILE": shared, "UPSTREAM_B_CA_FILE": own,
        ])
        #expect(configuration.upstreams.map(\.caFile) == [shared, own])
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration(environment: ["UPSTREAM_CA_FILE": notPEM]) }
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration(environment: ["UPSTREAM_CA_FILE": directory.appendingPathComponent("none").path])
        }
    }

    @Test(
        "refuses what cannot work, naming the variable and never a value",
        arguments: [
            (["UPSTREAMS": "a,,b"], "UPSTREAMS"),
            (["UPSTREAMS": "a-b", "UPSTREAM_A-B_BASE_URL": "http://x"], "UPSTREAMS"),
            (["UPSTREAMS": "a,A", "UPSTREAM_A_BASE_URL": "http://x"], "UPSTREAMS"),
            (["UPSTREAMS": "a"], "UPSTREAM_A_BASE_URL"),
            (["UPSTREAMS": "a", "UPSTREAM_A_BASE_URL": "ftp://secret-host"], "UPSTREAM_A_BASE_URL"),
            (
                ["UPSTREAMS": "a", "UPSTREAM_A_BASE_URL": "http://x", "UPSTREAM_A_STRUCTURED": "xml"],
                "UPSTREAM_A_STRUCTURED"
            ),
            (["UPSTREAMS": "a", "UPSTREAM_A_BASE_URL": "http://x", "UPSTREAM_A_MODELS": "fast"], "UPSTREAM_A_MODELS"),
            (["UPSTREAM_RETRIES": "11"], "UPSTREAM_RETRIES"),
            (["UPSTREAM_BREAKER_FAILURES": "0"], "UPSTREAM_BREAKER_FAILURES"),
            (["UPSTREAM_COOLDOWN_SECONDS": "-1"], "UPSTREAM_COOLDOWN_SECONDS"),
        ])
    func refuses(environment: [String: String], variable: String) {
        do {
            _ = try GatewayConfiguration(environment: environment)
            Issue.record("accepted \(environment)")
        } catch {
            #expect(error.message.contains(variable), "\(error.message)")
            #expect(!error.message.contains("secret-host"))
        }
    }
}
