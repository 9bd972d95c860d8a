#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why a `.env` file could not be read or parsed.
///
/// An error names the file (when it came from ``DotEnv/load(path:)``), the 1-based line and,
/// when the line had a valid key, that key. It never carries any part of a value: values are
/// often secrets, and this error ends up in logs.
///
/// ```
/// .env:7: unterminated double-quoted value for DB_PASSWORD
/// line 3: expected KEY=VALUE
/// ```
package struct DotEnvError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case expectedKeyValue
        case invalidKey
        case unterminatedSingleQuote
        case unterminatedDoubleQuote
        case unexpectedTextAfterQuote
        case invalidUTF8
        case lineTooLong
        case fileTooLarge
        case notRegularFile
        case readFailed(errno: Int32)
    }

    private let code: Code
    /// The 1-based line the error is about, or `nil` for an error about the whole file.
    ///
    /// For an unterminated quoted value this is the line where the value started.
    package let line: Int?
    /// The key of the offending entry, when the line had a valid one.
    package let key: String?
    /// The file the error is about, or `nil` when the text came from ``DotEnv/parse(_:)``.
    package let path: String?

    private init(_ code: Code, line: Int?, key: String? = nil, path: String? = nil) {
        self.code = code
        self.line = line
        self.key = key
        self.path = path
    }

    /// A non-blank, non-comment line without `=`.
    package static func expectedKeyValue(line: Int) -> DotEnvError {
        DotEnvError(.expectedKeyValue, line: line)
    }

    /// The text before `=` is not a key matching `[A-Za-z_][A-Za-z0-9_.]*`.
    ///
    /// The offending text is not kept: a malformed line may well be a pasted secret.
    package static func invalidKey(line: Int) -> DotEnvError {
        DotEnvError(.invalidKey, line: line)
    }

    /// A value opened with `'` has no closing `'` on the same line.
    package static func unterminatedSingleQuote(line: Int, key: String) -> DotEnvError {
        DotEnvError(.unterminatedSingleQuote, line: line, key: key)
    }

    /// A value opened with `"` on `line` has no closing `"` before the end of the text.
    package static func unterminatedDoubleQuote(line: Int, key: String) -> DotEnvError {
        DotEnvError(.unterminatedDoubleQuote, line: line, key: key)
    }

    /// Something other than blanks or a ` # comment` follows the closing quote on `line`
    /// (for a multi-line double-quoted value, the line of the closing quote).
    package static func unexpectedTextAfterQuote(line: Int, key: String) -> DotEnvError {
        DotEnvError(.unexpectedTextAfterQuote, line: line, key: key)
    }

    /// The value of `key` is not valid UTF-8.
    package static func invalidUTF8(line: Int, key: String) -> DotEnvError {
        DotEnvError(.invalidUTF8, line: line, key: key)
    }

    /// A line is longer than ``DotEnv/maximumLineLength`` bytes.
    package static func lineTooLong(line: Int) -> DotEnvError {
        DotEnvError(.lineTooLong, line: line)
    }

    /// The file is larger than ``DotEnv/maximumFileSize`` bytes; nothing of it was parsed.
    package static func fileTooLarge(path: String) -> DotEnvError {
        DotEnvError(.fileTooLarge, line: nil, path: path)
    }

    /// The path exists but is not a regular file (a directory, FIFO, device or socket).
    package static func notRegularFile(path: String) -> DotEnvError {
        DotEnvError(.notRegularFile, line: nil, path: path)
    }

    /// Opening or reading the file failed with `errno` (anything but `ENOENT`, which
    /// ``DotEnv/load(path:)`` reports as a missing file).
    package static func readFailed(path: String, errno: Int32) -> DotEnvError {
        DotEnvError(.readFailed(errno: errno), line: nil, path: path)
    }

    /// The same error, said to be about the file at `path`.
    func located(at path: String) -> DotEnvError {
        DotEnvError(code, line: line, key: key, path: path)
    }

    /// What went wrong, without the location: `unterminated double-quoted value for DB_PASSWORD`.
    package var reason: String {
        let what: String
        switch code {
        case .expectedKeyValue: what = "expected KEY=VALUE"
        case .invalidKey: what = "invalid key"
        case .unterminatedSingleQuote: what = "unterminated single-quoted value"
        case .unterminatedDoubleQuote: what = "unterminated double-quoted value"
        case .unexpectedTextAfterQuote: what = "unexpected text after the closing quote"
        case .invalidUTF8: what = "value is not valid UTF-8"
        case .lineTooLong: what = "line longer than \(DotEnv.maximumLineLength) bytes"
        case .fileTooLarge: what = "file larger than \(DotEnv.maximumFileSize) bytes"
        case .notRegularFile: what = "not a regular file"
        case .readFailed(let errno): what = "cannot read (\(Self.describe(errno: errno)))"
        }
        guard let key else { return what }
        return "\(what) for \(key)"
    }

    /// `path:line: reason`, `path: reason`, `line N: reason` or just the reason.
    package var description: String {
        switch (path, line) {
        case (let path?, let line?): "\(path):\(line): \(reason)"
        case (let path?, nil): "\(path): \(reason)"
        case (nil, let line?): "line \(line): \(reason)"
        case (nil, nil): reason
        }
    }

    /// A short name for the errors a config read is likely to meet; the number otherwise.
    private static func describe(errno: Int32) -> String {
        let name: String? =
            switch errno {
            case EPERM: "operation not permitted"
            case EIO: "input/output error"
            case EACCES: "permission denied"
            case ENOTDIR: "a path component is not a directory"
            case EMFILE, ENFILE: "too many open files"
            case ENAMETOOLONG: "file name too long"
            case ELOOP: "too many symbolic links"
            case EINVAL: "invalid argument"
            default: nil
            }
        guard let name else { return "errno \(errno)" }
        return "errno \(errno): \(name)"
    }
}
