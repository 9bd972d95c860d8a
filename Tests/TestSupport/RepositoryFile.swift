package import Foundation

/// A file of this repository read by its path from the package root: the documents the tests
/// keep true to the code, and the fixtures they read.
package enum RepositoryFile {
    /// The package root: three components above this file (`Tests/TestSupport/…`).
    package static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    package static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relativePath), encoding: .utf8)
    }
}
