import Foundation

/// A file of this repository, for the tests that keep a document true to the code.
enum RepositoryFile {
    /// The package root: three components above this file (`Tests/GatewayTests/…`).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relativePath), encoding: .utf8)
    }
}
