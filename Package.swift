// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    // Non-isolated async functions run on their caller's executor: a handler stays on the
    // loop that runs it without a hop (and its cost) at every call.
    .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
    // `import` is internal unless written `public import`: what a module shows of another is said.
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "TextGateway",
    // The floor is the client library's: it is the only target built on Apple platforms (the
    // server's event loop is epoll, Linux only), and an app on iOS 16 or macOS 13 adds it.
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        // What an app adds: Foundation and URLSession only, no other target of this package.
        .library(name: "TextGatewayClient", targets: ["TextGatewayClient"]),
    ],
    targets: [
        .target(name: "CEventLoop"),
        .target(name: "EventLoop", dependencies: ["CEventLoop"], swiftSettings: strict),
        .target(name: "HTTP1", swiftSettings: strict),
        .target(name: "HTTPServer", dependencies: ["EventLoop", "HTTP1"], swiftSettings: strict),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .target(name: "HTTPClient", dependencies: ["CCurl", "EventLoop"], swiftSettings: strict),
        .target(name: "JSON", swiftSettings: strict),
        .target(name: "Pricing", swiftSettings: strict),
        .target(name: "ChatAPI", dependencies: ["JSON"], swiftSettings: strict),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .target(name: "Store", dependencies: ["CSQLite", "Postgres", "EventLoop", "Telemetry"], swiftSettings: strict),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .target(name: "Postgres", dependencies: ["CPostgres", "EventLoop"], swiftSettings: strict),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .target(name: "Crypto", dependencies: ["CCrypto"], swiftSettings: strict),
        .systemLibrary(name: "CRedis", pkgConfig: "hiredis", providers: [.apt(["libhiredis-dev"])]),
        .target(name: "Redis", dependencies: ["CRedis", "EventLoop"], swiftSettings: strict),
        .target(name: "TextTasks", dependencies: ["JSON", "ChatAPI"], swiftSettings: strict),
        .target(
            name: "Upstream",
            dependencies: ["HTTPClient", "JSON", "ChatAPI", "TextTasks", "Telemetry", "Tracing", "EventLoop"],
            swiftSettings: strict),
        .target(
            name: "Access",
            dependencies: ["Crypto", "Redis", "Store", "HTTPClient", "JSON", "EventLoop", "Telemetry", "Pricing"],
            swiftSettings: strict),
        .target(
            name: "Jobs", dependencies: ["TextTasks", "Store", "JSON", "ChatAPI", "EventLoop", "Telemetry"],
            swiftSettings: strict),
        .target(name: "Telemetry", dependencies: ["EventLoop", "JSON"], swiftSettings: strict),
        .target(name: "Tracing", dependencies: ["HTTPClient", "EventLoop", "Telemetry"], swiftSettings: strict),
        .target(
            name: "Gateway",
            dependencies: [
                "HTTPServer", "HTTPClient", "JSON", "ChatAPI", "Store", "Postgres", "Crypto", "Redis", "Telemetry",
                "TextTasks", "Upstream", "Access", "Jobs", "AdminConsole", "EventLoop", "HTTP1", "Pricing", "Tracing",
            ],
            swiftSettings: strict),
        // The operator's console: its page, style and script, built into the binary.
        .target(
            name: "AdminConsole",
            resources: [.embedInCode("console.html"), .embedInCode("console.css"), .embedInCode("console.js")],
            swiftSettings: strict),
        // The command line's work, apart from the server: for text-gateway and the tests.
        .target(
            name: "GatewayCommandLine",
            dependencies: [
                "Gateway", "Access", "ChatAPI", "Crypto", "EventLoop", "HTTPClient", "JSON", "Postgres", "Store",
                "Telemetry", "TextTasks",
            ],
            swiftSettings: strict),
        .executableTarget(
            name: "text-gateway",
            dependencies: ["GatewayCommandLine", "Gateway", "Telemetry", "Access", "EventLoop", "HTTPClient"],
            swiftSettings: strict),
        .target(
            name: "MockUpstream", dependencies: ["HTTPServer", "ChatAPI", "EventLoop", "HTTP1", "JSON"],
            swiftSettings: strict),
        .target(name: "TextGatewayClient", swiftSettings: strict),
        .executableTarget(
            name: "mock-upstream", dependencies: ["MockUpstream", "EventLoop", "HTTPServer"], swiftSettings: strict),
        .executableTarget(
            name: "bench-server",
            dependencies: ["HTTPServer", "HTTP1"],
            path: "Benchmarks/bench-server",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "bench-client",
            dependencies: ["Upstream", "ChatAPI", "HTTPClient", "EventLoop", "CEventLoop", "JSON"],
            path: "Benchmarks/bench-client",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "bench-store",
            dependencies: ["Store", "EventLoop", "Postgres"],
            path: "Benchmarks/bench-store",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "bench-crypto",
            dependencies: ["Crypto", "Access", "Telemetry", "ChatAPI", "JSON"],
            path: "Benchmarks/bench-crypto",
            swiftSettings: strict
        ),
        .target(name: "CTestSupport", path: "Tests/CTestSupport"),
        .target(
            name: "TestSupport", dependencies: ["EventLoop", "Postgres", "CTestSupport"], path: "Tests/TestSupport",
            swiftSettings: strict),
        .target(
            name: "AccessTestSupport", dependencies: ["Access", "Crypto", "JSON", "Store", "TestSupport"],
            path: "Tests/AccessTestSupport", swiftSettings: strict),
        .target(
            name: "GatewayTestSupport", dependencies: ["Gateway", "MockUpstream"], path: "Tests/GatewayTestSupport",
            swiftSettings: strict),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "TestSupport", "AccessTestSupport", "GatewayTestSupport", "Gateway", "GatewayCommandLine",
                "MockUpstream", "Crypto",
                "Postgres", "Redis", "Store", "JSON", "ChatAPI", "Telemetry", "TextTasks", "Upstream", "Access", "Jobs",
                "AdminConsole", "EventLoop", "HTTP1", "HTTPClient", "HTTPServer", "Pricing", "Tracing",
            ],
            // Data the tests read by path (RepositoryFile), not bundled resources.
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "TextGatewayClientTests",
            dependencies: [
                "TextGatewayClient", "TestSupport", "AccessTestSupport", "GatewayTestSupport", "Gateway",
                "GatewayCommandLine",
                "MockUpstream", "HTTPServer", "HTTP1", "Crypto", "Telemetry", "Access", "Pricing",
            ], swiftSettings: strict),
        .testTarget(name: "EventLoopTests", dependencies: ["EventLoop", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1"], swiftSettings: strict),
        .testTarget(
            name: "HTTPServerTests", dependencies: ["TestSupport", "HTTPServer", "EventLoop", "HTTP1"],
            swiftSettings: strict),
        .testTarget(
            name: "HTTPClientTests", dependencies: ["TestSupport", "HTTPClient", "HTTPServer", "EventLoop", "HTTP1"],
            swiftSettings: strict),
        .testTarget(
            name: "StoreTests", dependencies: ["Store", "EventLoop", "Postgres", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "JSONTests", dependencies: ["JSON"], swiftSettings: strict),
        .testTarget(name: "PricingTests", dependencies: ["Pricing"], swiftSettings: strict),
        .testTarget(name: "ChatAPITests", dependencies: ["ChatAPI", "JSON", "MockUpstream"], swiftSettings: strict),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto"], exclude: ["Fixtures"], swiftSettings: strict),
        .testTarget(name: "RedisTests", dependencies: ["TestSupport", "Redis", "EventLoop"], swiftSettings: strict),
        .testTarget(
            name: "PostgresTests", dependencies: ["Postgres", "EventLoop", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "TextTasksTests", dependencies: ["TextTasks", "JSON", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "UpstreamTests",
            dependencies: [
                "Upstream", "ChatAPI", "JSON", "HTTPClient", "EventLoop", "Telemetry", "MockUpstream", "HTTPServer",
                "TestSupport",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "AccessTests",
            dependencies: [
                "Access", "Crypto", "Store", "Redis", "EventLoop", "Telemetry", "HTTP1", "TestSupport",
                "AccessTestSupport",
            ],
            swiftSettings: strict),
        .testTarget(name: "JobsTests", dependencies: ["Jobs", "TextTasks"], swiftSettings: strict),
        .testTarget(name: "TelemetryTests", dependencies: ["Telemetry", "JSON"], swiftSettings: strict),
        .testTarget(
            name: "TracingTests",
            dependencies: ["Tracing", "HTTPClient", "HTTPServer", "HTTP1", "Telemetry", "EventLoop", "TestSupport"],
            swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
