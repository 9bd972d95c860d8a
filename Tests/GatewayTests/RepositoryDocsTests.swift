import Foundation
import TestSupport
import Testing

@testable import Gateway

/// The repository's prose kept true and self-contained: docs/api.md names every route the
/// gateway has (its error codes: ``ErrorCodeCatalogTests``), the README stays a short first
/// page whose Quick start begins with the demo, every relative link of the README and
/// docs/*.md reaches a file of the repository, every repository path they cite exists, and
/// nothing refers to notes outside the repository.
@Suite("README.md and docs/ match the code and the tree")
struct RepositoryDocsTests {
    /// Where the repository's Markdown pages are: README.md, and every `.md` file in docs/.
    static func markdownPages() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(
            atPath: RepositoryFile.root.appendingPathComponent("docs").path)
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    }

    @Test("docs/api.md names every route path the gateway declares")
    func apiDocumentNamesRoutes() async throws {
        let document = try RepositoryFile.text("docs/api.md")
        let routed = try await OpenAPIDocumentTests.routedMethods()
        #expect(
            routed.count >= 11, "the gateway with a store and an upstream declares every route: \(routed.keys.sorted())"
        )
        // Each name as code, so that `/api/history` is not found inside `/api/history/{id}`.
        let missingPaths = routed.keys.sorted().filter { !document.contains("`\($0)`") }
        #expect(missingPaths.isEmpty, "docs/api.md does not name the routes \(missingPaths)")
    }

    @Test("README.md is at most 200 lines, and its Quick start opens with scripts/demo.sh and scripts/test.sh")
    func readmeQuickStart() throws {
        let readme = try RepositoryFile.text("README.md")
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let count = readme.hasSuffix("\n") ? lines.count - 1 : lines.count
        #expect(count <= 200, "README.md has \(count) lines")
        let block = try #require(
            Self.firstCodeBlock(inSection: "## Quick start", of: readme),
            "README.md has no `## Quick start` section with a code block")
        let commands = block.map(Self.command).filter { !$0.isEmpty }
        #expect(commands.first == "scripts/demo.sh", "the Quick start's first command: \(commands)")
        #expect(commands.contains("scripts/test.sh"), "the Quick start's first block: \(commands)")
    }

    @Test("every relative link of README.md and docs/*.md points to a file of the repository (and to a heading of it)")
    func relativeLinksResolve() throws {
        let pages = try Self.markdownPages()
        #expect(pages.contains("docs/api.md") && pages.contains("docs/design.md"))
        var checked = 0
        for page in pages {
            let text = try RepositoryFile.text(page)
            for target in Self.relativeLinks(in: text) {
                checked += 1
                let resolved = Self.resolves(target, from: page)
                #expect(
                    resolved, "\(page) links to \(target), which is no file of the repository (or no heading of it)")
            }
        }
        #expect(checked > 20, "the links were found: \(checked)")
    }

    @Test("every repository path README.md and docs/*.md cite (Sources/…, Tests/…, scripts/…, deploy/…) exists")
    func citedPathsExist() throws {
        var checked = 0
        for page in try Self.markdownPages() {
            for path in Self.citedPaths(in: try RepositoryFile.text(page)) {
                checked += 1
                #expect(Self.exists(path), "\(page) cites \(path), which is not in the repository")
            }
        }
        #expect(checked > 50, "the paths were found: \(checked)")
    }

    @Test("the path reader finds paths in prose, code and links, and what is missing is refused")
    func pathReader() {
        let sample = """
            The names are in `Sources/Gateway/Config`, see [the API](docs/api.md#errors) and
            `Fuzz/JWTFuzz/main.swift:38`, `Tests/<Target>Tests`, `Sources/Gateway/Config/*.swift`.
            ```sh
            scripts/demo.sh && cp deploy/.env.example deploy/.env
            ```
            Not paths: ../Sources/x, https://example.com/docs/x, .build/docs/x. Cited: Sources/Nope.swift.
            """
        #expect(
            Self.citedPaths(in: sample) == [
                "Sources/Gateway/Config", "docs/api.md", "Fuzz/JWTFuzz/main.swift", "Tests/", "Sources/Gateway/Config/",
                "scripts/demo.sh", "deploy/.env.example", "deploy/.env", "Sources/Nope.swift",
            ])
        #expect(Self.exists("Sources/Gateway/Config") && Self.exists("Sources/Gateway/Config/"))
        #expect(Self.exists("deploy/.env"), "the reader's copy of a shipped example")
        #expect(!Self.exists("Sources/Nope.swift"))
        #expect(!Self.exists("docs/missing.md"))
    }

    @Test("README.md links to every file in docs/")
    func readmeLinksEveryDocument() throws {
        let readme = try RepositoryFile.text("README.md")
        let linked = Set(Self.relativeLinks(in: readme).map(Self.withoutFragment))
        let documents = try FileManager.default.contentsOfDirectory(
            atPath: RepositoryFile.root.appendingPathComponent("docs").path)
        let unlinked = documents.filter { !$0.hasPrefix(".") && !linked.contains("docs/" + $0) }.sorted()
        #expect(unlinked.isEmpty, "README.md does not link to \(unlinked.map { "docs/" + $0 })")
    }

    @Test("no text file of the repository refers to notes outside it")
    func nothingRefersOutside() throws {
        // Spelled in pieces, so that this file does not name them itself.
        let outside = [".." + "/shared", "CONTRACT" + ".md", "DESIGN" + ".md", "STYLE" + "-ANCHORS"]
        let scanned = try Self.repositoryTextFiles()
        #expect(scanned.count > 100, "the walk found the repository's files: \(scanned.count)")
        let mentions = scanned.flatMap { file in
            outside.filter { file.text.contains($0) }.map { "\(file.path) mentions \($0)" }
        }
        #expect(mentions.isEmpty, "\(mentions)")
    }

    @Test("the link reader finds inline and reference links outside code, and resolution refuses what is missing")
    func linkReader() {
        let sample = """
            See [the API](docs/api.md#errors), [a site](https://example.com) and [here](#top).
            ![a picture](docs/picture.png "title") and `[not a link](nowhere.md)`.
            ```sh
            [also not](fenced.md)
            ```
            [ref]: ../outside.md
            """
        #expect(Self.relativeLinks(in: sample) == ["docs/api.md#errors", "#top", "docs/picture.png", "../outside.md"])
        #expect(Self.resolves("docs/api.md#errors", from: "README.md"))
        #expect(!Self.resolves("docs/api.md#no-such-heading", from: "README.md"))
        #expect(Self.resolves("#quick-start", from: "README.md"))
        #expect(Self.resolves("api.md", from: "docs/design.md"))
        #expect(Self.resolves("../Package.swift", from: "docs/design.md"))
        #expect(!Self.resolves("docs/missing.md", from: "README.md"))
        #expect(!Self.resolves("../outside.md", from: "README.md"))
        #expect(!Self.resolves("docs", from: "README.md"), "a folder is not a file")
        #expect(
            Self.firstCodeBlock(
                inSection: "## Quick start", of: "# T\n## Quick start\ntext\n```sh\na  # x\nb\n```\n```\nc\n```\n") == [
                    "a  # x", "b",
                ])
        #expect(Self.command("scripts/demo.sh     # the demo") == "scripts/demo.sh")
        #expect(
            Self.anchors(
                of: "# A\n## POST /api/process\n### Structured answers (`\"format\": \"json\"`)\n"
                    + "```\n# not a heading\n```\n## Sign-in with the app's JWTs\n"
            )
                == ["a", "post-apiprocess", "structured-answers-format-json", "sign-in-with-the-apps-jwts"])
    }

    // MARK: - Reading Markdown

    /// The lines of the first fenced code block in the `##` section titled `heading`.
    static func firstCodeBlock(inSection heading: String, of markdown: String) -> [String]? {
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(of: heading) else { return nil }
        var block: [String]?
        for line in lines[(start + 1)...] {
            if block == nil {
                if line.hasPrefix("## ") { return nil }
                if line.hasPrefix("```") { block = [] }
            } else if line.hasPrefix("```") {
                return block
            } else {
                block?.append(line)
            }
        }
        return nil
    }

    /// A shell line without its comment and surrounding blanks.
    static func command(_ line: String) -> String {
        let code = line.range(of: " #").map { String(line[..<$0.lowerBound]) } ?? line
        return code.trimmingCharacters(in: .whitespaces)
    }

    /// The targets of `[text](target)`, `![alt](target "title")` and `[label]: target` links
    /// that are not URLs, in order. Fenced code blocks and code spans are skipped.
    static func relativeLinks(in markdown: String) -> [String] {
        var targets: [String] = []
        var fence: String?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.drop { $0 == " " }
            if let open = fence {
                if trimmed.hasPrefix(open) { fence = nil }
                continue
            }
            if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                fence = String(trimmed.prefix(3))
                continue
            }
            let prose = withoutCodeSpans(String(line))
            if let definition = prose.firstMatch(of: /^ {0,3}\[[^\]]+\]:\s*(\S+)/) {
                targets.append(String(definition.output.1))
                continue
            }
            for link in prose.matches(of: /\]\(([^)\s]+)(?:\s+"[^"]*")?\)/) {
                targets.append(String(link.output.1))
            }
        }
        return targets.filter { target in !target.contains("://") && !target.hasPrefix("mailto:") }
    }

    /// `line` with each code span (a run of backticks, up to the next run of as many) removed.
    static func withoutCodeSpans(_ line: String) -> String {
        var result = ""
        var rest = line[...]
        while let open = rest.firstIndex(of: "`") {
            result += rest[..<open]
            let run = rest[open...].prefix { $0 == "`" }
            let after = rest[run.endIndex...]
            guard let close = after.range(of: String(run)) else {
                result += rest[open...]
                return result
            }
            rest = after[close.upperBound...]
        }
        return result + rest
    }

    static func withoutFragment(_ target: String) -> String {
        String(target.prefix { $0 != "#" && $0 != "?" })
    }

    /// Whether `target`, a link of the page at `page` (relative to the repository), names a
    /// file inside the repository and, for a Markdown file with a `#fragment`, one of its
    /// headings (`#fragment` alone: one of the page's own).
    /// Where the repository's own paths start when a page cites them from the root.
    static let pathRoots = ["Sources/", "Tests/", "scripts/", "Benchmarks/", "drills/", "deploy/", "docs/", "Fuzz/"]

    /// The repository paths `markdown` cites from the root, in order, wherever they are: in
    /// prose, code spans, code blocks or link targets. A path starts at a root after anything
    /// that cannot be part of a path (so `../Sources/x` and a URL's `/docs/x` are not read), and
    /// ends at a blank, a quote, a bracket, `,`, `;`, `|` or `#`; a sentence's `.` or `:` and a
    /// line number (`main.swift:38`) are not part of it. A placeholder or a wildcard (`<`, `{`,
    /// `*`, `…`, `$`) leaves the folder before it.
    static func citedPaths(in markdown: String) -> [String] {
        let characters = Array(markdown)
        let joining: Set<Character> = ["/", ".", "~", "$", "-", "_", "<", "{"]
        let ending: Set<Character> = ["`", "'", "\"", "(", ")", "[", "]", ",", ";", "|", "#"]
        let placeholders: Set<Character> = ["<", "{", "*", "…", "$"]
        let starts = Set(pathRoots.compactMap(\.first))
        var paths: [String] = []
        var index = 0
        while index < characters.count {
            defer { index += 1 }
            guard starts.contains(characters[index]) else { continue }
            if index > 0 {
                let previous = characters[index - 1]
                if previous.isLetter || previous.isNumber || joining.contains(previous) { continue }
            }
            var end = index
            while end < characters.count, !characters[end].isWhitespace, !ending.contains(characters[end]) { end += 1 }
            var path = String(characters[index..<end])
            guard pathRoots.contains(where: path.hasPrefix) else { continue }
            index = end
            while let last = path.last, last == "." || last == ":" { path.removeLast() }
            if let colon = path.lastIndex(of: ":"), path[path.index(after: colon)...].allSatisfy(\.isNumber) {
                path = String(path[..<colon])
            }
            if let cut = path.firstIndex(where: placeholders.contains) {
                path = String(path[..<cut])
                path = String(path[...(path.lastIndex(of: "/") ?? path.startIndex)])
            }
            paths.append(path)
        }
        return paths
    }

    /// Whether the repository has `path` (a file or a folder), or ships the example a reader
    /// copies to make it (`deploy/.env` from `deploy/.env.example`; git ignores the copy).
    static func exists(_ path: String) -> Bool {
        let file = RepositoryFile.root.appendingPathComponent(path).path
        return FileManager.default.fileExists(atPath: file) || FileManager.default.fileExists(atPath: file + ".example")
    }

    static func resolves(_ target: String, from page: String) -> Bool {
        let path = withoutFragment(target)
        let file: String
        if path.isEmpty {
            guard target.hasPrefix("#") else { return false }
            file = RepositoryFile.root.appendingPathComponent(page).path
        } else {
            guard !path.hasPrefix("/"), let decoded = path.removingPercentEncoding else { return false }
            let root = RepositoryFile.root.standardizedFileURL.path
            let directory = RepositoryFile.root.appendingPathComponent(page).deletingLastPathComponent()
            file = directory.appendingPathComponent(decoded).standardizedFileURL.path
            guard file.hasPrefix(root + "/") else { return false }
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory), !isDirectory.boolValue else {
            return false
        }
        guard let hash = target.firstIndex(of: "#"), file.hasSuffix(".md") else { return true }
        let fragment = String(target[target.index(after: hash)...])
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return false }
        return anchors(of: text).contains(fragment)
    }

    /// The anchors GitHub gives a Markdown page's headings: the heading's text without code
    /// marks, lower-cased, with everything but letters, digits, `-`, `_` and spaces dropped and
    /// spaces made `-` (a repeated heading's later anchors get `-1`, `-2`, …).
    static func anchors(of markdown: String) -> [String] {
        var anchors: [String] = []
        var seen: [String: Int] = [:]
        var inFence = false
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") || line.hasPrefix("~~~") { inFence.toggle() }
            guard !inFence, let heading = line.firstMatch(of: /^#{1,6}\s+(.+?)\s*$/) else { continue }
            var slug = ""
            for character in heading.output.1.lowercased() {
                if character.isLetter || character.isNumber || character == "-" || character == "_" {
                    slug.append(character)
                } else if character == " " {
                    slug.append("-")
                }
            }
            let repeats = seen[slug, default: 0]
            seen[slug] = repeats + 1
            anchors.append(repeats == 0 ? slug : "\(slug)-\(repeats)")
        }
        return anchors
    }

    // MARK: - Walking the tree

    /// Every text file (no NUL byte) under the repository's source, test, script, document,
    /// benchmark, drill and deployment folders, and its top-level files, by relative path; build
    /// products (`.build`) are left out.
    static func repositoryTextFiles() throws -> [(path: String, text: String)] {
        let manager = FileManager.default
        let root = RepositoryFile.root
        var files: [(path: String, text: String)] = []
        func visit(_ relative: String) throws {
            var isDirectory: ObjCBool = false
            guard manager.fileExists(atPath: root.appendingPathComponent(relative).path, isDirectory: &isDirectory)
            else { return }
            if isDirectory.boolValue {
                for name in try manager.contentsOfDirectory(atPath: root.appendingPathComponent(relative).path).sorted()
                where name != ".build" {
                    try visit(relative + "/" + name)
                }
                return
            }
            let data = try Data(contentsOf: root.appendingPathComponent(relative))
            guard !data.contains(0) else { return }
            files.append((relative, String(decoding: data, as: UTF8.self)))
        }
        for top in [
            "Sources", "Tests", "scripts", "docs", "Benchmarks", "drills", "deploy", "README.md", "Makefile",
            "Dockerfile", ".env.example",
        ] {
            try visit(top)
        }
        return files
    }
}
