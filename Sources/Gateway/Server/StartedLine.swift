import EventLoop
import Telemetry

/// The `started` line's fields: what this instance serves, where, and with what.
enum StartedLine {
    static func fields(
        configuration: GatewayConfiguration, environmentName: String, address: SocketAddress, loops: ServerLoops
    ) -> [(String, Logger.Value?)] {
        [
            ("version", .string(TextGatewayVersion.current)),
            ("environment", .string(environmentName)),
            ("address", .string(address.description)),
            ("access", .string(configuration.access)),
            ("loops", .int(loops.count)),
            ("loop_poll_us", .int(Int(loops.pollLimit / .microseconds(1)))),
            ("upstream", .string(configuration.baseURL)),
            ("store", .string(configuration.database.logDescription)),
            ("ledger_durability", .string(configuration.ledgerDurability.rawValue)),
            ("jwt", .string(configuration.jwt?.logDescription ?? "off")),
            ("redis", .string(configuration.redis?.description ?? "off")),
            ("cache", .string(configuration.cacheTimeToLive == nil ? "off" : configuration.cacheBackend.rawValue)),
            (
                "app_attest",
                .string(
                    configuration.appAttest.flatMap { settings in
                        settings.appIDs.isEmpty
                            ? nil : "\(settings.environment.rawValue),required=\(settings.requirement.rawValue)"
                    } ?? "off")
            ),
            (
                "android_attest",
                .string(
                    configuration.appAttest.flatMap { settings in
                        settings.android.map { android in
                            "apps=\(android.policy.apps.count),required=\(settings.requirement.rawValue)"
                                + ",unlocked=\(android.policy.requireLockedBootloader ? "refused" : "allowed")"
                        }
                    } ?? "off")
            ),
        ]
    }
}
