public import HTTP1

/// A request handler.
public typealias HTTPResponder = nonisolated(nonsending) @Sendable (HTTPRequest) async throws -> HTTPResponse

/// Routes of any handler type (method + exact path → handler), collected at start and then
/// frozen into an immutable table: nothing changes routing once the server runs.
public struct RoutingTable<Handler: Sendable>: Sendable {
    /// Where a request goes.
    public enum Match {
        case found(Handler)
        /// The path is known, not with this method; `allow` is the `Allow` value.
        case methodNotAllowed(allow: String)
        case notFound
    }

    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline let handlers: [HTTPMethod: Handler]
        @usableFromInline let allow: String
    }

    @usableFromInline let entries: [String: Entry]

    /// Freezes `routes` (path → method → handler).
    public init(_ routes: [String: [HTTPMethod: Handler]]) {
        var entries: [String: Entry] = [:]
        for (path, handlers) in routes {
            var methods = Set(handlers.keys.map(\.rawValue))
            if methods.contains("GET") { methods.insert("HEAD") }
            entries[path] = Entry(handlers: handlers, allow: methods.sorted().joined(separator: ", "))
        }
        self.entries = entries
    }

    /// The handler for `method` on `path`; `HEAD` falls back to `GET` (the server drops the body).
    /// Inlinable, so the table is specialized for its handler type where it is used.
    @inlinable
    public func match(_ method: HTTPMethod, _ path: String) -> Match {
        guard let entry = entries[path] else { return .notFound }
        if let handler = entry.handlers[method] { return .found(handler) }
        if method == .HEAD, let handler = entry.handlers[.GET] { return .found(handler) }
        return .methodNotAllowed(allow: entry.allow)
    }
}

/// Collects closure routes, then builds an immutable ``RouterResponder``.
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
        RouterResponder(table: RoutingTable(routes))
    }
}

/// The frozen closure routes: an unknown path throws `HTTPError(.notFound)`; a known path
/// with another method throws `HTTPError(.methodNotAllowed)` with `Allow`.
public struct RouterResponder: Sendable {
    let table: RoutingTable<HTTPResponder>

    /// Answers `request` with its route's handler.
    public func respond(to request: HTTPRequest) async throws -> HTTPResponse {
        switch table.match(request.method, request.path) {
        case .found(let handler): return try await handler(request)
        case .methodNotAllowed(let allow): throw HTTPError(.methodNotAllowed, headers: ["Allow": allow])
        case .notFound: throw HTTPError(.notFound)
        }
    }
}
