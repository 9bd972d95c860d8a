import EventLoop
import Foundation
import Store
import Testing

@testable import Access
@testable import Gateway
@testable import Telemetry

/// docs/openapi.yaml kept true to the code: its paths and methods are the routes the gateway
/// declares (with a store and an upstream, so every route is there); its `ErrorCode` enum is
/// checked by ``ErrorCodeCatalogTests``. The YAML is read by ``OpenAPIOutline``, a line
/// reader for the document's own layout (two-space indentation, block style).
@Suite("docs/openapi.yaml matches the code")
struct OpenAPIDocumentTests {
    static func document() throws -> OpenAPIOutline {
        try OpenAPIOutline(try RepositoryFile.text("docs/openapi.yaml"))
    }

    /// The routes of a gateway with every optional part: a SQLite store and an upstream.
    static func routedMethods() async throws -> [String: Set<String>] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "openapi-routes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pool = try BlockingPool(threadCount: 1, name: "openapi-test")
        let sqlite = try await SQLiteStore.open(path: directory.appendingPathComponent("store.sqlite").path, pool: pool)
        var configuration = GatewayConfiguration()
        configuration.apiKey = "unused"
        configuration.defaultModel = "m"
        configuration.appAttest = AppAttestSettings(appIDs: ["ABCDE12345.example.app"])
        configuration.adminToken = "admin-0123456789abcdef0123456789"
        let logger = Logger(level: .info, sink: LogSink.memory())
        let registry = MetricsRegistry()
        let store = GatewayStore(
            backend: sqlite, configuration: configuration, registry: registry, logger: logger, clock: { .now })
        let gateway = Gateway(
            configuration: configuration,
            upstreams: [(configuration.effectiveUpstreams[0], InProcessGatewayTests.FakeUpstream())],
            logger: logger, registry: registry, store: store
        )
        var routes: [String: Set<String>] = [:]
        for route in gateway.routeList { routes[route.path, default: []].insert(route.method.rawValue) }
        await sqlite.close()
        await pool.shutdown()
        return routes
    }

    @Test("every routed path is in the document with its methods, and every documented path and method is routed")
    func routes() async throws {
        let document = try Self.document()
        let routed = try await Self.routedMethods()
        #expect(
            routed.count >= 14,
            "the gateway with a store, an upstream and App Attest declares every route: \(routed.keys.sorted())")
        #expect(
            Set(document.paths.keys) == Set(routed.keys),
            "documented \(document.paths.keys.sorted()), routed \(routed.keys.sorted())")
        for (path, methods) in routed {
            let documented = document.paths[path] ?? []
            // HEAD is answered wherever GET is; the document names it where a client uses it.
            #expect(
                documented.subtracting(["HEAD"]) == methods,
                "\(path): documented \(documented.sorted()), routed \(methods.sorted())")
            if documented.contains("HEAD") { #expect(methods.contains("GET"), "\(path): HEAD documented without GET") }
        }
        #expect(document.paths["/api/health"]?.contains("HEAD") == true)
    }

    @Test("every $ref names a component the document defines")
    func references() throws {
        let document = try Self.document()
        #expect(!document.references.isEmpty)
        for reference in document.references {
            #expect(document.components.contains(reference), "\(reference) is not defined")
        }
    }

    @Test("the outline reader reads paths, methods, the enum and components")
    func outlineReader() throws {
        let outline = try OpenAPIOutline(
            """
            openapi: 3.1.0
            paths:
              /a:
                parameters:
                  - $ref: '#/components/parameters/P'
                get:
                  description: |
                    post:
                head:
              /b/{id}:
                delete: {}
            components:
              parameters:
                P:
                  name: id
              schemas:
                ErrorCode:
                  type: string
                  enum:
                    - one
                    - two
                Other:
                  enum: [x]
            """)
        #expect(outline.paths == ["/a": ["GET", "HEAD"], "/b/{id}": ["DELETE"]])
        #expect(outline.errorCodes == ["one", "two"])
        #expect(outline.references == ["#/components/parameters/P"])
        #expect(
            outline.components == [
                "#/components/parameters/P", "#/components/schemas/ErrorCode", "#/components/schemas/Other",
            ])
    }
}

/// The parts of an OpenAPI document in block-style YAML with two-space indentation that the
/// tests compare with the code: each path's methods, `components.schemas.ErrorCode.enum`,
/// every `$ref` and every component's name. Not a YAML parser: a multi-line string's lines
/// are skipped by their indentation, and flow collections are read only as `[a, b]`.
struct OpenAPIOutline {
    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    private(set) var paths: [String: Set<String>] = [:]
    private(set) var errorCodes: [String] = []
    private(set) var references: Set<String> = []
    private(set) var components: Set<String> = []

    init(_ text: String) throws {
        // Lines with their indentation, block scalars (`|`, `>`) and blank lines left out.
        var lines: [(indent: Int, text: String)] = []
        var scalarIndent: Int?
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            let body = line.drop { $0 == " " }
            let indent = line.count - body.count
            if body.isEmpty || body.hasPrefix("#") { continue }
            if let limit = scalarIndent {
                if indent > limit { continue }
                scalarIndent = nil
            }
            if body.hasPrefix("\t") { throw Malformed(description: "a tab indents: \(line)") }
            lines.append((indent, String(body)))
            if body.hasSuffix(": |") || body.hasSuffix(": >") || body.hasSuffix(": |-") || body.hasSuffix(": >-") {
                scalarIndent = indent
            }
        }

        var section = "" // the top-level key
        var path: String?
        var componentKind: String?
        var schemaName: String?
        var inEnum: Int? // the indentation of `enum:` while its items are read
        for (indent, body) in lines {
            if let start = body.range(of: "$ref: ") {
                references.insert(Self.unquoted(String(body[start.upperBound...])))
            }
            if let enumIndent = inEnum {
                if indent > enumIndent, body.hasPrefix("- ") {
                    errorCodes.append(Self.unquoted(String(body.dropFirst(2))))
                    continue
                }
                inEnum = nil
            }
            let key = Self.key(body)
            switch indent {
            case 0:
                section = key ?? ""
                path = nil
            case 2 where section == "paths":
                guard let key, key.hasPrefix("/") else {
                    throw Malformed(description: "not a path under paths: \(body)")
                }
                path = key
                paths[key] = []
            case 2 where section == "components":
                componentKind = key
            case 4 where section == "paths":
                if let path, let key, Self.methods.contains(key) { paths[path]?.insert(key.uppercased()) }
            case 4 where section == "components":
                if let componentKind, let key {
                    components.insert("#/components/\(componentKind)/\(key)")
                    schemaName = componentKind == "schemas" ? key : nil
                }
            case 6 where section == "components" && schemaName == "ErrorCode" && key == "enum":
                let value = body.dropFirst("enum:".count).trimmingCharacters(in: .whitespaces)
                if value.isEmpty {
                    inEnum = indent
                } else if value.hasPrefix("["), value.hasSuffix("]") {
                    errorCodes += value.dropFirst().dropLast().split(separator: ",").map { Self.unquoted(String($0)) }
                } else {
                    throw Malformed(description: "ErrorCode's enum: \(body)")
                }
            default:
                break
            }
        }
    }

    /// The key of a `key:` or `key: value` line (quotes taken off), nil for a list item.
    private static func key(_ body: String) -> String? {
        if body.hasPrefix("- ") { return nil }
        var candidate = body
        if let quote = candidate.first, quote == "'" || quote == "\"",
            let end = candidate.dropFirst().firstIndex(of: quote)
        {
            return String(candidate[candidate.index(after: candidate.startIndex)..<end])
        }
        if candidate.hasSuffix(":") {
            candidate.removeLast()
            return candidate
        }
        guard let colon = candidate.range(of: ": ") else { return nil }
        return String(candidate[..<colon.lowerBound])
    }

    private static func unquoted(_ value: String) -> String {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if trimmed.count >= 2, let first = trimmed.first, first == "'" || first == "\"", trimmed.last == first {
            return String(trimmed.dropFirst().dropLast())
        }
        return trimmed
    }
}
