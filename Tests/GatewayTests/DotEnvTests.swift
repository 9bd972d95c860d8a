import EventLoop
import Testing

@testable import Gateway

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("DotEnv")
struct DotEnvTests {
    /// A secret-looking value put in failing lines: no error description may contain it.
    static let secret = "sk-secret-123"

    struct Pair: Equatable, Sendable, CustomStringConvertible {
        var key: String
        var value: String

        init(_ key: String, _ value: String) {
            self.key = key
            self.value = value
        }

        var description: String { "\(key)=\(value.debugDescription)" }
    }

    struct ValidCase: CustomTestStringConvertible, Sendable {
        var name: String
        var input: String
        var pairs: [Pair]

        init(_ name: String, _ input: String, _ pairs: [Pair]) {
            self.name = name
            self.input = input
            self.pairs = pairs
        }

        var testDescription: String { name }
    }

    struct ErrorCase: CustomTestStringConvertible, Sendable {
        var name: String
        var input: String
        var error: DotEnvError

        init(_ name: String, _ input: String, _ error: DotEnvError) {
            self.name = name
            self.input = input
            self.error = error
        }

        var testDescription: String { name }
    }

    static let valid: [ValidCase] = [
        ValidCase("empty text", "", []),
        ValidCase("only blank and comment lines", "\n   \n\t\n# comment\n   # indented comment\n#A=1\n", []),
        ValidCase("one entry without final line break", "A=1", [Pair("A", "1")]),
        ValidCase("entries in file order", "B=2\nA=1\nC=3\n", [Pair("B", "2"), Pair("A", "1"), Pair("C", "3")]),
        ValidCase("comments between entries", "# head\nA=1\n\n# mid\nB=2\n", [Pair("A", "1"), Pair("B", "2")]),
        ValidCase(
            "export prefix", "export A=1\nexport  B=2\nexport\tC=3\n",
            [Pair("A", "1"), Pair("B", "2"), Pair("C", "3")]),
        ValidCase("export as a key", "export=1\nexport = 2\n", [Pair("export", "1"), Pair("export", "2")]),
        ValidCase(
            "a key starting with export", "exported=1\nexport exported=2",
            [Pair("exported", "1"), Pair("exported", "2")]),
        ValidCase("blanks around key and equals", "  A  =  1  \n\tB\t=\t2\t\n", [Pair("A", "1"), Pair("B", "2")]),
        ValidCase("key characters", "_a.b_1=x\nZ9=y\n_=z\n", [Pair("_a.b_1", "x"), Pair("Z9", "y"), Pair("_", "z")]),
        ValidCase("unquoted value keeps inner blanks", "A=  hello   world  \n", [Pair("A", "hello   world")]),
        ValidCase("inline comment after a space", "A=1 # note\n", [Pair("A", "1")]),
        ValidCase("inline comment after a tab", "A=1\t#note\n", [Pair("A", "1")]),
        ValidCase(
            "hash without a blank before it stays", "URL=http://x/#frag\nB=a#b # c\n",
            [Pair("URL", "http://x/#frag"), Pair("B", "a#b")]),
        ValidCase("hash right after equals stays", "A=#1\n", [Pair("A", "#1")]),
        ValidCase("only a comment after equals is empty", "A= # nothing here\n", [Pair("A", "")]),
        ValidCase("quotes inside an unquoted value are literal", "A=it's \"ok\"\n", [Pair("A", #"it's "ok""#)]),
        ValidCase("backslashes in an unquoted value are literal", #"A=C:\dir"# + "\n", [Pair("A", #"C:\dir"#)]),
        ValidCase("equals signs in the value", "A=b=c==\n", [Pair("A", "b=c==")]),
        ValidCase(
            "single-quoted value is literal", #"A='  x # y \n ${Z} "q" '"#, [Pair("A", #"  x # y \n ${Z} "q" "#)]),
        ValidCase(
            "single-quoted value with a comment after it", "A='v'  # c\nB='w'\t\n", [Pair("A", "v"), Pair("B", "w")]),
        ValidCase("double-quoted escapes", #"A="a\nb\rc\td\\e\"f\$g""#, [Pair("A", "a\nb\rc\td\\e\"f$g")]),
        ValidCase(
            "unknown escapes keep their backslash", #"A="C:\path\x\u00e9\'""#, [Pair("A", #"C:\path\x\u00e9\'"#)]),
        ValidCase("hash inside double quotes stays", #"A="a # b" # c"#, [Pair("A", "a # b")]),
        ValidCase(
            "quote characters of the other kind", #"A="it's"\#nB='say "hi"'"#,
            [Pair("A", "it's"), Pair("B", #"say "hi""#)]),
        ValidCase(
            "blanks inside quotes are kept", "A=\"  x  \"\nB='  y  '\n", [Pair("A", "  x  "), Pair("B", "  y  ")]),
        ValidCase(
            "multi-line double-quoted value",
            "A=\"line 1\nline 2\n\"\nB=2\n",
            [Pair("A", "line 1\nline 2\n"), Pair("B", "2")]
        ),
        ValidCase(
            "multi-line double-quoted value with CRLF",
            "A=\"one\r\ntwo\"\r\nB=2\r\n",
            [Pair("A", "one\ntwo"), Pair("B", "2")]
        ),
        ValidCase(
            "escaped quote at the end of a line continues the value",
            "A=\"x\\\"\ny\"\n",
            [Pair("A", "x\"\ny")]
        ),
        ValidCase(
            "backslash at the end of a line inside quotes is literal",
            "A=\"x\\\ny\"",
            [Pair("A", "x\\\ny")]
        ),
        ValidCase(
            "empty values", "A=\nB=''\nC=\"\"\nD=   \n", [Pair("A", ""), Pair("B", ""), Pair("C", ""), Pair("D", "")]),
        ValidCase(
            "CRLF line endings",
            "A=1\r\nB='2'\r\nC=\"3\"\r\n# c\r\n\r\nD=4 # c\r\n",
            [Pair("A", "1"), Pair("B", "2"), Pair("C", "3"), Pair("D", "4")]
        ),
        ValidCase("byte order mark at the start", "\u{FEFF}A=1\n", [Pair("A", "1")]),
        ValidCase("byte order mark before a comment", "\u{FEFF}# c\nA=1\n", [Pair("A", "1")]),
        ValidCase(
            "no variable interpolation",
            "HOME_DIR=${HOME}\nB=\"$HOME ${X:-y}\"\nC='${A}'\n",
            [Pair("HOME_DIR", "${HOME}"), Pair("B", "$HOME ${X:-y}"), Pair("C", "${A}")]
        ),
        ValidCase(
            "duplicates are all returned in order", "A=1\nB=2\nA=3\n",
            [Pair("A", "1"), Pair("B", "2"), Pair("A", "3")]),
        ValidCase(
            "non-ASCII values", "GREETING=\"سلام دنیا\"\nB=é ü\n", [Pair("GREETING", "سلام دنیا"), Pair("B", "é ü")]),
    ]

    static let errors: [ErrorCase] = [
        ErrorCase("a bare word", "A=1\n\(secret)\n", .expectedKeyValue(line: 2)),
        ErrorCase("export without equals", "export \(secret)\n", .expectedKeyValue(line: 1)),
        ErrorCase("a key with a space and no equals", "# c\n\nA \(secret)", .expectedKeyValue(line: 3)),
        ErrorCase("key starting with a digit", "1A=\(secret)", .invalidKey(line: 1)),
        ErrorCase("key with a dash", "A=1\nA-B=\(secret)", .invalidKey(line: 2)),
        ErrorCase("empty key", "=\(secret)", .invalidKey(line: 1)),
        ErrorCase("key with an inner space", "A B=\(secret)", .invalidKey(line: 1)),
        ErrorCase("a secret where the key should be", "\(secret)=x", .invalidKey(line: 1)),
        ErrorCase(
            "unterminated single quote", "A=1\nB='\(secret)\nC=3'\n", .unterminatedSingleQuote(line: 2, key: "B")),
        ErrorCase(
            "unterminated double quote", "A=1\n\nB=\"\(secret)\nmore\n", .unterminatedDoubleQuote(line: 3, key: "B")),
        ErrorCase(
            "double quote closed only by an escaped quote", "B=\"\(secret)\\\"\n",
            .unterminatedDoubleQuote(line: 1, key: "B")),
        ErrorCase("text after a single-quoted value", "A='\(secret)'x", .unexpectedTextAfterQuote(line: 1, key: "A")),
        ErrorCase("a second quoted value", "A='\(secret)' 'more'", .unexpectedTextAfterQuote(line: 1, key: "A")),
        ErrorCase(
            "text after a double-quoted value", "A=\"\(secret)\" tail", .unexpectedTextAfterQuote(line: 1, key: "A")),
        ErrorCase(
            "comment hash right after a closing quote", "A=\"\(secret)\"#c",
            .unexpectedTextAfterQuote(line: 1, key: "A")),
        ErrorCase(
            "text after a multi-line value, on the line of the closing quote",
            "A=\"x\n\(secret)\"junk\n",
            .unexpectedTextAfterQuote(line: 2, key: "A")
        ),
    ]

    @Test("parses a valid text into the expected pairs", arguments: valid)
    func parsesValidText(_ testCase: ValidCase) throws {
        let pairs = try DotEnv.parse(testCase.input)
        #expect(pairs.map { Pair($0.key, $0.value) } == testCase.pairs)
    }

    @Test("rejects a malformed text with the error and line, never echoing the value", arguments: errors)
    func rejectsMalformedText(_ testCase: ErrorCase) {
        do throws(DotEnvError) {
            let pairs = try DotEnv.parse(testCase.input)
            Issue.record("parsed into \(pairs)")
        } catch {
            #expect(error == testCase.error)
            #expect(error.path == nil)
            #expect(error.description.hasPrefix("line \(error.line ?? -1): "))
            #expect(!error.description.contains(Self.secret))
            #expect(!error.description.contains("secret"))
        }
    }

    @Test("a later duplicate key wins in the dictionary")
    func laterDuplicateWins() throws {
        let dictionary = try DotEnv.parseDictionary("A=1\nB=2\nA=3\n")
        #expect(dictionary == ["A": "3", "B": "2"])
    }

    @Test("parseDictionary throws the same error as parse")
    func parseDictionaryThrows() {
        #expect(throws: DotEnvError.invalidKey(line: 2)) {
            try DotEnv.parseDictionary("A=1\n9=\(Self.secret)\n")
        }
    }

    @Test("accepts a line of exactly the maximum length")
    func acceptsLongestLine() throws {
        let value = String(repeating: "v", count: DotEnv.maximumLineLength - 2)
        let pairs = try DotEnv.parse("A=\(value)\r\nB=1")
        #expect(pairs.map(\.value) == [value, "1"])
    }

    @Test("rejects a line longer than the maximum, comment or not")
    func rejectsOverlongLine() {
        let long = String(repeating: "x", count: DotEnv.maximumLineLength - 1)
        #expect(throws: DotEnvError.lineTooLong(line: 2)) { try DotEnv.parse("A=1\n#\(long)x\n") }
        #expect(throws: DotEnvError.lineTooLong(line: 3)) { try DotEnv.parse("A=\"\n\n\(long)ab\"\n") }
        #expect(throws: DotEnvError.lineTooLong(line: 1)) { try DotEnv.parse("A=\(long)") }
    }

    @Test("rejects a value that is not valid UTF-8, naming the key only")
    func rejectsInvalidUTF8() {
        var bytes = Array("A=1\nTOKEN=\"sk-".utf8)
        bytes += [0xFF, 0xFE]
        bytes += Array("\"\n".utf8)
        #expect(throws: DotEnvError.invalidUTF8(line: 2, key: "TOKEN")) { try DotEnv.parse(bytes: bytes) }
    }

    @Test("describes errors as path:line: reason, with the key but no value")
    func errorDescriptions() {
        #expect(
            DotEnvError.unterminatedDoubleQuote(line: 7, key: "DB_PASSWORD").located(at: ".env").description
                == ".env:7: unterminated double-quoted value for DB_PASSWORD"
        )
        #expect(DotEnvError.expectedKeyValue(line: 3).description == "line 3: expected KEY=VALUE")
        #expect(DotEnvError.invalidKey(line: 1).description == "line 1: invalid key")
        #expect(DotEnvError.fileTooLarge(path: "/x/.env").description == "/x/.env: file larger than 1048576 bytes")
        #expect(
            DotEnvError.readFailed(path: ".env", errno: EACCES).description
                == ".env: cannot read (errno \(EACCES): permission denied)")
        #expect(
            DotEnvError.unexpectedTextAfterQuote(line: 2, key: "K").reason
                == "unexpected text after the closing quote for K")
    }

    // MARK: - merged

    @Test("merged: the real environment beats a later file, which beats an earlier file")
    func mergedPrecedence() {
        let base = ["A": "base", "B": "base", "C": "base", "D": "base"]
        let production = ["B": "production", "C": "production", "E": "production"]
        let environment = ["C": "env", "D": "", "F": "env"]
        let merged = DotEnv.merged(environment: environment, files: [base, production])
        #expect(
            merged == [
                "A": "base",
                "B": "production",
                "C": "env",
                "D": "", // set in the environment, even to empty, wins
                "E": "production",
                "F": "env",
            ])
    }

    @Test("merged: no files gives the environment")
    func mergedWithoutFiles() {
        #expect(DotEnv.merged(environment: ["A": "1"], files: []) == ["A": "1"])
        #expect(DotEnv.merged(environment: [:], files: [["A": "1"], ["A": "2"]]) == ["A": "2"])
    }

    // MARK: - load

    @Test("load: a missing file is nil")
    func loadMissingFile() throws {
        #expect(try DotEnv.load(path: "/tmp/dotenv-tests-missing-\(getpid())/.env") == nil)
        #expect(try DotEnv.load(path: "") == nil)
    }

    @Test("load: reads and parses a file")
    func loadFile() throws {
        let text = "\u{FEFF}# config\r\nexport A=1\r\nB=\"two\nlines\"\r\nA=3\r\n"
        let loaded = try withTemporaryFile(Array(text.utf8)) { path in try DotEnv.load(path: path) }
        #expect(loaded == ["A": "3", "B": "two\nlines"])
    }

    @Test("load: an empty file is an empty dictionary")
    func loadEmptyFile() throws {
        #expect(try withTemporaryFile([]) { path in try DotEnv.load(path: path) } == [:])
    }

    @Test("load: a parse error names the file and line, not the value")
    func loadParseError() throws {
        let text = "A=1\nB=\"\(Self.secret)\n"
        try withTemporaryFile(Array(text.utf8)) { path in
            do throws(DotEnvError) {
                _ = try DotEnv.load(path: path)
                Issue.record("loaded a malformed file")
            } catch {
                #expect(error == DotEnvError.unterminatedDoubleQuote(line: 2, key: "B").located(at: path))
                #expect(error.path == path)
                #expect(error.description == "\(path):2: unterminated double-quoted value for B")
                #expect(!error.description.contains(Self.secret))
            }
        }
    }

    @Test("load: accepts a file of exactly the maximum size")
    func loadLargestFile() throws {
        // 16 comment lines of 64 KiB each, line breaks included: exactly 1 MiB.
        let line = [UInt8(ascii: "#")] + [UInt8](repeating: UInt8(ascii: "x"), count: 65534) + [UInt8(ascii: "\n")]
        let bytes = Array([[UInt8]](repeating: line, count: 16).joined())
        #expect(bytes.count == DotEnv.maximumFileSize)
        #expect(try withTemporaryFile(bytes) { path in try DotEnv.load(path: path) } == [:])
    }

    @Test("load: refuses a file larger than the maximum size")
    func loadTooLargeFile() throws {
        let bytes = [UInt8](repeating: UInt8(ascii: "\n"), count: DotEnv.maximumFileSize + 1)
        try withTemporaryFile(bytes) { path in
            #expect(throws: DotEnvError.fileTooLarge(path: path)) { try DotEnv.load(path: path) }
        }
    }

    @Test("load: refuses a directory")
    func loadDirectory() {
        #expect(throws: DotEnvError.notRegularFile(path: "/tmp")) { try DotEnv.load(path: "/tmp") }
    }

    @Test("load: a path with a NUL byte is an error, not another file")
    func loadPathWithNUL() {
        #expect(throws: DotEnvError.readFailed(path: "/tmp\0/x", errno: EINVAL)) { try DotEnv.load(path: "/tmp\0/x") }
    }

    @Test("load: a path through a regular file is a read error")
    func loadThroughFile() throws {
        try withTemporaryFile(Array("A=1".utf8)) { path in
            let inner = path + "/.env"
            #expect(throws: DotEnvError.readFailed(path: inner, errno: ENOTDIR)) { try DotEnv.load(path: inner) }
        }
    }
}

/// Writes `contents` to a new file from `mkstemp` under /tmp, runs `body` with its path and
/// removes the file.
@discardableResult
private func withTemporaryFile<Result>(
    _ contents: [UInt8],
    _ body: (String) throws -> Result
) throws -> Result {
    var template = Array("/tmp/dotenv-tests-XXXXXX".utf8CString)
    let fd = mkstemp(&template)
    try #require(fd >= 0, "mkstemp failed with errno \(errno)")
    let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    defer { _ = unlink(path) }

    var written = 0
    while written < contents.count {
        let count = contents.withUnsafeBytes { buffer in
            Syscall.retryingInterrupts { write(fd, buffer.baseAddress! + written, buffer.count - written) }
        }
        if count <= 0 {
            _ = close(fd)
            Issue.record("write failed with errno \(errno)")
            return try body(path)
        }
        written += count
    }
    _ = close(fd)
    return try body(path)
}
