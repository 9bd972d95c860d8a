public import HTTP1

/// A request handler.
public typealias HTTPResponder = nonisolated(nonsending) @Sendable (HTTPRequest) async throws -> HTTPResponse

/// Routes of any handler type (method + path → handler), collected at start and then
/// frozen into an immutable table: nothing changes routing once the server runs.
///
/// A path is matched exactly, or, for a route whose last segment is a parameter
/// (`/api/history/{id}`), by everything before that segment and one non-empty segment
/// after it; the handler reads the segment with ``parameter(in:)``.
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
    /// Routes ending in a parameter segment, by the path before it (with its last `/`).
    @usableFromInline let parameterized: [String: Entry]

    /// Freezes `routes` (path → method → handler).
    public init(_ routes: [String: [HTTPMethod: Handler]]) {
        var entries: [String: Entry] = [:]
        var parameterized: [String: Entry] = [:]
        for (path, handlers) in routes {
            var methods = Set(handlers.keys.map(\.rawValue))
            if methods.contains("GET") { methods.insert("HEAD") }
            let entry = Entry(handlers: handlers, allow: methods.sorted().joined(separator: ", "))
            if let prefix = Self.parameterPrefix(of: path) {
                parameterized[prefix] = entry
            } else {
                entries[path] = entry
            }
        }
        self.entries = entries
        self.parameterized = parameterized
    }

    /// `/a/b/` for `/a/b/{name}`; nil for a path without a trailing parameter.
    static func parameterPrefix(of path: String) -> String? {
        guard path.hasSuffix("}"), let slash = path.lastIndex(of: "/"),
              path[path.index(after: slash)...].hasPrefix("{")
        else { return nil }
        return String(path[...slash])
    }

    /// The last segment of `path`: the value of a trailing parameter.
    public static func parameter(in path: String) -> Substring {
        guard let slash = path.lastIndex(of: "/") else { return path[...] }
        return path[path.index(after: slash)...]
    }

    /// The handler for `method` on `path`; `HEAD` falls back to `GET` (the server drops the body).
    /// Inlinable, so the table is specialized for its handler type where it is used.
    @inlinable
    public func match(_ method: HTTPMethod, _ path: String) -> Match {
        guard let entry = entries[path] ?? parameterizedEntry(path) else { return .notFound }
        if let handler = entry.handlers[method] { return .found(handler) }
        if method == .HEAD, let handler = entry.handlers[.GET] { return .found(handler) }
        return .methodNotAllowed(allow: entry.allow)
    }

    @usableFromInline
    func parameterizedEntry(_ path: String) -> Entry? {
        guard !parameterized.isEmpty, let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return nil }
        let next = path.utf8.index(after: slash)
        guard next < path.utf8.endIndex else { return nil }
        return parameterized[String(path[...slash])]
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
