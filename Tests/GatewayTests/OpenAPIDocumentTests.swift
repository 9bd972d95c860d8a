import EventLoop
import Foundation
import HTTPClient
import JSON
import Store
import TestSupport
import Testing

@testable import Access
@testable import Gateway
@testable import Telemetry

/// docs/openapi.yaml kept true to the code: its paths and methods are the routes the gateway
/// declares (with a store and an upstream, so every route is there); the routes only
/// `ADMIN_TOKEN` or App Attest add document the `404` a gateway without them answers; the
/// routes that take `Idempotency-Key` document its answers. Its `ErrorCode` enum is checked
/// by ``ErrorCodeCatalogTests``. The YAML is read by ``OpenAPIOutline``, a line reader for
/// the document's own layout (two-space indentation, block style).
@Suite("docs/openapi.yaml matches the code")
struct OpenAPIDocumentTests {
    static func document() throws -> OpenAPIOutline {
        try OpenAPIOutline(try RepositoryFile.text("docs/openapi.yaml"))
    }

    /// What the document calls a gateway's answer when the route is not configured.
    static let notConfigured = "#/components/responses/NotConfigured"

    /// The routes of a gateway with a SQLite store and an upstream, and with `optional`, App
    /// Attest, Android devices and the console too (so every route is there): "METHOD /path" and whether the
    /// route takes `Idempotency-Key`.
    static func routes(optional: Bool = true) async throws -> [(operation: String, idempotent: Bool)] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "openapi-routes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pool = try BlockingPool(threadCount: 1, name: "openapi-test")
        let sqlite = try await SQLiteStore.open(path: directory.appendingPathComponent("store.sqlite").path, pool: pool)
        var configuration = GatewayConfiguration()
        configuration.apiKey = "unused"
        configuration.defaultModel = "m"
        if optional {
            var devices = AppAttestSettings(appIDs: ["ABCDE12345.example.app"])
            devices.android = AndroidAttestSettings(
                policy: AndroidAttestationPolicy(apps: ["com.example.app": [[UInt8](repeating: 1, count: 32)]]))
            configuration.appAttest = devices
            configuration.adminToken = "admin-0123456789abcdef0123456789"
        }
        let logger = Logger(level: .info, sink: LogSink.memory())
        let registry = MetricsRegistry()
        let store = GatewayStore(
            backend: sqlite, configuration: configuration, registry: registry, logger: logger, clock: { .now })
        let gateway = Gateway(
            configuration: configuration,
            upstreams: [(configuration.effectiveUpstreams[0], InProcessGatewayTests.FakeUpstream())],
            logger: logger, registry: registry, store: store
        )
        let routes = gateway.routeList.map { ("\($0.method.rawValue) \($0.path)", $0.idempotent) }
        await sqlite.close()
        await pool.shutdown()
        return routes
    }

    /// The paths of a gateway with every optional part, each with its methods.
    static func routedMethods() async throws -> [String: Set<String>] {
        var routes: [String: Set<String>] = [:]
        for route in try await Self.routes() {
            let (method, path) = OpenAPIOutline.split(route.operation)
            routes[path, default: []].insert(method)
        }
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

    @Test(
        "each operation ADMIN_TOKEN or App Attest adds is tagged admin or attest and documents the 404 without them"
    )
    func notConfiguredDocumented() async throws {
        let document = try Self.document()
        let plain = Set(try await Self.routes(optional: false).map(\.operation))
        let optional = Set(try await Self.routes().map(\.operation)).subtracting(plain)
        #expect(optional.count >= 16, "the console's and App Attest's routes: \(optional.sorted())")
        // scripts/openapi-check.sh picks these operations by their tags.
        let tagged = Set(document.tags.filter { !$0.value.isDisjoint(with: ["admin", "attest"]) }.keys)
        #expect(tagged == optional, "tagged admin or attest: \(tagged.sorted()); optional: \(optional.sorted())")
        for operation in optional.sorted() {
            let answer = document.responses[operation]?["404"] ?? "nothing"
            #expect(
                answer == Self.notConfigured || answer.contains("not configured on this gateway"),
                "\(operation): its 404 is \(answer)")
        }
        #expect(document.components.contains(Self.notConfigured))
    }

    @Test("a gateway without ADMIN_TOKEN and App Attest answers 404 not_found on each admin and attest operation")
    func notConfiguredAnswered() async throws {
        let document = try Self.document()
        let optional = document.tags.filter { !$0.value.isDisjoint(with: ["admin", "attest"]) }.keys.sorted()
        #expect(optional.count >= 16)
        let path = storeDirectory() + "/gateway.sqlite"
        try await GatewayHarness.with(configure: { $0.database = .sqlite(path: path) }) { harness in
            for operation in optional {
                let (method, pattern) = OpenAPIOutline.split(operation)
                let url = harness.base + pattern.replacingOccurrences(of: "{id}", with: "0123456789ab")
                // Without a credential, with a wrong one and with what would be the admin token.
                for authorization in [nil, "Bearer tgk_unknown", "Bearer admin-0123456789abcdef0123456789"] {
                    var headers = [("Content-Type", "application/json")]
                    if let authorization { headers.append(("Authorization", authorization)) }
                    let response = try await harness.client.send(
                        HTTPClientRequest(
                            method: method, url: url, headers: headers,
                            body: method == "POST" ? Array("{}".utf8) : nil))
                    #expect(response.status == 404, "\(operation) with \(authorization ?? "no credential")")
                    #expect(try JSONValue.parse(response.body)["code"]?.stringValue == "not_found", "\(operation)")
                }
            }
        }
    }

    @Test(
        "the operations that take Idempotency-Key are the routes with the idempotency layer, each with its 409 and 422")
    func idempotencyKeyDocumented() async throws {
        let document = try Self.document()
        let idempotent = Set(try await Self.routes().filter(\.idempotent).map(\.operation))
        #expect(idempotent.count >= 3, "\(idempotent.sorted())")
        let parameter = "#/components/parameters/IdempotencyKey"
        let documented = Set(document.parameters.filter { $0.value.contains(parameter) }.keys)
        #expect(documented == idempotent, "documented \(documented.sorted()), routed \(idempotent.sorted())")
        for operation in idempotent.sorted() {
            let answers = document.responses[operation] ?? [:]
            let shape = OpenAPIOutline.split(operation).path.hasPrefix("/v1/") ? "OpenAI" : ""
            #expect(
                answers["422"] == "#/components/responses/\(shape)IdempotencyKeyReused",
                "\(operation): a reused key's 422 is \(answers["422"] ?? "undocumented")")
            #expect(
                answers["409"] == "#/components/responses/\(shape)IdempotencyInProgress",
                "\(operation): a key in flight's 409 is \(answers["409"] ?? "undocumented")")
            #expect(answers["400"] != nil, "\(operation): an invalid key's 400 is undocumented")
        }
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
                  tags: [x, y]
                  description: |
                    post:
                  parameters:
                    - $ref: '#/components/parameters/Q'
                  responses:
                    '200':
                      description: Fine.
                      headers:
                        X:
                          description: not an answer
                    '404':
                      $ref: '#/components/responses/R'
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
        #expect(
            outline.references == [
                "#/components/parameters/P", "#/components/parameters/Q", "#/components/responses/R",
            ])
        #expect(outline.tags == ["GET /a": ["x", "y"]])
        #expect(outline.parameters == ["GET /a": ["#/components/parameters/Q"]])
        #expect(outline.responses == ["GET /a": ["200": "Fine.", "404": "#/components/responses/R"]])
        #expect(OpenAPIOutline.split("DELETE /b/{id}") == ("DELETE", "/b/{id}"))
        #expect(
            outline.components == [
                "#/components/parameters/P", "#/components/schemas/ErrorCode", "#/components/schemas/Other",
            ])
    }
}

/// The parts of an OpenAPI document in block-style YAML with two-space indentation that the
/// tests compare with the code: each path's methods, each operation's tags, parameter
/// references and answers, `components.schemas.ErrorCode.enum`, every `$ref` and every
/// component's name. An operation is named "METHOD /path". Not a YAML parser: a multi-line string's lines
/// are skipped by their indentation, and flow collections are read only as `[a, b]`.
struct OpenAPIOutline {
    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    private(set) var paths: [String: Set<String>] = [:]
    /// Each operation's `tags: [a, b]`.
    private(set) var tags: [String: Set<String>] = [:]
    /// The `$ref`s of each operation's own `parameters` (not its path's).
    private(set) var parameters: [String: Set<String>] = [:]
    /// Each operation's answers: status to the `$ref` of a shared answer, or to the
    /// `description` of one written in place.
    private(set) var responses: [String: [String: String]] = [:]
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
        var operation: String? // "METHOD /path" while its lines are read
        var operationKey: String? // the operation's key being read (`parameters`, `responses`, …)
        var status: String? // the answer being read under `responses`
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
            if indent <= 4 { operation = nil }
            if indent <= 6 { operationKey = nil }
            if indent <= 8 { status = nil }
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
                if let path, let key, Self.methods.contains(key) {
                    paths[path]?.insert(key.uppercased())
                    operation = key.uppercased() + " " + path
                }
            case 6 where operation != nil:
                operationKey = key
                if let operation, key == "tags" {
                    let value = body.dropFirst("tags:".count).trimmingCharacters(in: .whitespaces)
                    guard value.hasPrefix("["), value.hasSuffix("]") else {
                        throw Malformed(description: "\(operation)'s tags: \(body)")
                    }
                    tags[operation] = Set(
                        value.dropFirst().dropLast().split(separator: ",").map { Self.unquoted(String($0)) })
                }
            case 8 where operation != nil && operationKey == "parameters":
                if let operation, let start = body.range(of: "- $ref: ") {
                    parameters[operation, default: []].insert(Self.unquoted(String(body[start.upperBound...])))
                }
            case 8 where operation != nil && operationKey == "responses":
                status = key
            case 10 where status != nil:
                if let operation, let status, let key, key == "$ref" || key == "description" {
                    let value = body.dropFirst(key.count + 1)
                    responses[operation, default: [:]][status] = Self.unquoted(String(value))
                }
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

    /// "METHOD /path" taken apart.
    static func split(_ operation: String) -> (method: String, path: String) {
        let parts = operation.split(separator: " ", maxSplits: 1).map(String.init)
        return (parts[0], parts.count > 1 ? parts[1] : "")
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
