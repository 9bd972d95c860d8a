import EventLoop

// Apart from DotEnv.swift so that the parser builds on its own (the DotEnv fuzz target).
extension DotEnv {
    /// Reads and parses the `.env` file at `path`.
    ///
    /// - Returns: the file's variables (the last value of a duplicated key wins), or `nil`
    ///   when there is no file at `path` (`ENOENT`).
    /// - Throws: ``DotEnvError`` with `path` set when the file cannot be read, is not a regular
    ///   file, is larger than ``maximumFileSize``, or does not parse.
    package static func load(path: String) throws(DotEnvError) -> [String: String]? {
        guard let bytes = try readFile(path: path) else { return nil }
        do throws(DotEnvError) {
            return dictionary(try parse(bytes: bytes))
        } catch {
            throw error.located(at: path)
        }
    }

    /// The UTF-8 text of a regular file of at most ``maximumFileSize`` bytes, nil when it
    /// is missing, unreadable, too large or not UTF-8 (for other configuration files).
    static func readText(path: String) -> String? {
        guard let bytes = try? readFile(path: path) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func readFile(path: String) throws(DotEnvError) -> [UInt8]? {
        do {
            return try SmallFile.readRegularFile(path, maximumSize: maximumFileSize)
        } catch {
            switch error {
            case .system(let code): throw .readFailed(path: path, errno: code)
            case .notRegularFile: throw .notRegularFile(path: path)
            case .tooLarge: throw .fileTooLarge(path: path)
            }
        }
    }
}
