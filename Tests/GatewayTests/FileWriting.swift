#if canImport(Glibc)
    import Glibc
#endif

/// Writes `bytes` to `path` in place (the same inode when the file exists).
func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    guard let file = fopen(path, "wb") else { throw TestFileError(path: path) }
    let written = fwrite(bytes, 1, bytes.count, file)
    fclose(file)
    guard written == bytes.count else { throw TestFileError(path: path) }
}

func writeFile(_ path: String, _ text: String) throws {
    try writeFile(path, Array(text.utf8))
}

struct TestFileError: Error { let path: String }
