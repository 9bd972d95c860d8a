public import HTTP1

/// A request handler.
public typealias HTTPResponder = @Sendable (HTTPRequest) async throws -> HTTPResponse

/// Collects routes (method + exact path → handler), then builds an immutable
/// ``RouterResponder``. Nothing changes routing once the server runs.
public struct Router: Sendable {
    private var routes: [String: [HTTPMethod: HTTPResponder]] = [:]

    public init() {}

    /// Adds a handler for `method` on `path` (exact match, no query). A later registration
    /// of the same method and path replaces the earlier one.
    public mutating func on(_ method: HTTPMethod, _ path: String, use handler: @escaping HTTPResponder) {
        routes[path, default: [:]][method] = handler
    }

    public mutating func get(_ path: String, use handler: @escaping HTTPResponder) { on(.GET, path, use: handler) }
    public mutating func post(_ path: String, use handler: @escaping HTTPResponder) { on(.POST, path, use: handler) }

    /// Freezes the routes into a lookup table.
    public func buildResponder() -> RouterResponder {
        RouterResponder(routes: routes)
    }
}

/// The frozen routing table. `HEAD` falls back to the `GET` handler (the server drops the
/// body); an unknown path throws `HTTPError(.notFound)`; a known path with another method
/// throws `HTTPError(.methodNotAllowed)` with `Allow`.
public struct RouterResponder: Sendable {
    private struct Entry: Sendable {
        let handlers: [HTTPMethod: HTTPResponder]
        let allow: String
    }

    private let entries: [String: Entry]

    init(routes: [String: [HTTPMethod: HTTPResponder]]) {
        var entries: [String: Entry] = [:]
        for (path, handlers) in routes {
            var methods = Set(handlers.keys.map(\.rawValue))
            if methods.contains("GET") { methods.insert("HEAD") }
            entries[path] = Entry(handlers: handlers, allow: methods.sorted().joined(separator: ", "))
        }
        self.entries = entries
    }

    /// Answers `request` with its route's handler.
    public func respond(to request: HTTPRequest) async throws -> HTTPResponse {
        guard let entry = entries[request.path] else { throw HTTPError(.notFound) }
        if let handler = entry.handlers[request.method] {
            return try await handler(request)
        }
        if request.method == .HEAD, let handler = entry.handlers[.GET] {
            return try await handler(request)
        }
        throw HTTPError(.methodNotAllowed, headers: ["Allow": entry.allow])
    }

    /// The `Allow` value for `path`, or nil when no route has that path.
    public func allowedMethods(for path: String) -> String? {
        entries[path]?.allow
    }
}
