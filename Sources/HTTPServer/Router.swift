public import HTTP1

/// A request handler.
public typealias HTTPResponder = nonisolated(nonsending) @Sendable (HTTPRequest) async throws -> HTTPResponse

/// Routes of any handler type (method + path → handler), collected at start and then
/// frozen into an immutable table: nothing changes routing once the server runs.
///
/// A path is matched exactly, or, for a route with one parameter segment
/// (`/api/history/{id}`, `/api/jobs/{id}/events`), by the path before that segment, one
/// non-empty segment, and the path after it; the handler reads the segment with
/// ``parameter(in:before:)``.
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
    /// Routes with a parameter segment, by their pattern with the parameter's name left out
    /// (`/api/jobs/{}/events`).
    @usableFromInline let parameterized: [String: Entry]
    /// What follows the parameter in those routes (`""`, `/events`), longest first.
    @usableFromInline let suffixes: [String]

    /// Freezes `routes` (path → method → handler).
    public init(_ routes: [String: [HTTPMethod: Handler]]) {
        var entries: [String: Entry] = [:]
        var parameterized: [String: Entry] = [:]
        var suffixes: Set<String> = []
        for (path, handlers) in routes {
            var methods = Set(handlers.keys.map(\.rawValue))
            if methods.contains("GET") { methods.insert("HEAD") }
            let entry = Entry(handlers: handlers, allow: methods.sorted().joined(separator: ", "))
            if let (prefix, suffix) = Self.parameterPattern(of: path) {
                parameterized[prefix + "{}" + suffix] = entry
                suffixes.insert(suffix)
            } else {
                entries[path] = entry
            }
        }
        self.entries = entries
        self.parameterized = parameterized
        self.suffixes = suffixes.sorted { $0.utf8.count > $1.utf8.count }
    }

    /// (`/a/b/`, `/c`) for `/a/b/{name}/c`; nil for a path without exactly one parameter
    /// segment.
    static func parameterPattern(of path: String) -> (prefix: String, suffix: String)? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        let parameters = segments.indices.filter { segments[$0].hasPrefix("{") && segments[$0].hasSuffix("}") }
        guard parameters.count == 1, let at = parameters.first, at > 0 else { return nil }
        let prefix = segments[..<at].joined(separator: "/") + "/"
        let rest = segments[(at + 1)...]
        return (prefix, rest.isEmpty ? "" : "/" + rest.joined(separator: "/"))
    }

    /// The parameter segment of `path`, a route's whose pattern ends in `suffix` after it.
    public static func parameter(in path: String, before suffix: String = "") -> Substring {
        let head = path.hasSuffix(suffix) ? path.dropLast(suffix.count) : path[...]
        guard let slash = head.lastIndex(of: "/") else { return head }
        return head[head.index(after: slash)...]
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
        guard !parameterized.isEmpty else { return nil }
        for suffix in suffixes where path.hasSuffix(suffix) {
            let head = path.dropLast(suffix.count)
            guard let slash = head.utf8.lastIndex(of: UInt8(ascii: "/")) else { continue }
            let next = head.utf8.index(after: slash)
            guard next < head.utf8.endIndex else { continue }
            if let entry = parameterized[String(head[...slash]) + "{}" + suffix] { return entry }
        }
        return nil
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
