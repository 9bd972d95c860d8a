/// A Lua script the client loads on every connection (`SCRIPT LOAD`) and runs by the SHA the
/// server gave back (`EVALSHA`), loading it again when the server has forgotten it (`NOSCRIPT`).
package struct RedisScript: Sendable, Hashable {
    /// The Lua source.
    package let source: String

    package init(source: String) { self.source = source }
}
