#if canImport(Glibc)
    package import Glibc
#endif

/// Where a spawned child's standard input, or its standard output and error, are.
package enum ChildStream {
    case devNull
    /// A descriptor of this process's, duplicated onto the child's.
    case descriptor(Int32)
    /// A file, created or truncated, for the child's output.
    case file(String)
}

package struct SpawnFailure: Error, CustomStringConvertible {
    package let description: String
}

/// Starts the program `words[0]` names (a path; with `searchPath`, a name looked up in PATH)
/// with `words` as its arguments and `environment` (nil: this process's), the way every
/// child of the tests starts: with no signal blocked, whatever the test runner's threads
/// block (servers are stopped by signals), and no descriptor above standard error inherited.
/// With `processGroup`, in a process group of its own.
package func spawnChild(
    _ words: [String], searchPath: Bool = false, environment: [String: String]? = nil,
    input: ChildStream = .devNull, output: ChildStream = .devNull, processGroup: Bool = false
) throws -> pid_t {
    precondition(!words.isEmpty, "no program to spawn")
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    switch input {
    case .devNull: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    case .descriptor(let fd): posix_spawn_file_actions_adddup2(&actions, fd, 0)
    case .file(let path): posix_spawn_file_actions_addopen(&actions, 0, path, O_RDONLY, 0)
    }
    switch output {
    case .devNull:
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    case .descriptor(let fd):
        posix_spawn_file_actions_adddup2(&actions, fd, 1)
        posix_spawn_file_actions_adddup2(&actions, fd, 2)
    case .file(let path):
        posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
    }
    closeInheritedDescriptors(&actions)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var flags = Int32(POSIX_SPAWN_SETSIGMASK)
    if processGroup {
        posix_spawnattr_setpgroup(&attributes, 0)
        flags |= Int32(POSIX_SPAWN_SETPGROUP)
    }
    posix_spawnattr_setflags(&attributes, Int16(flags))
    let argv = words.map { strdup($0) } + [nil]
    let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
    defer {
        for pointer in argv { free(pointer) }
        for pointer in envp ?? [] { free(pointer) }
    }
    var child: pid_t = 0
    let spawn = searchPath ? posix_spawnp : posix_spawn
    let rc =
        if let envp { spawn(&child, words[0], &actions, &attributes, argv, envp) } else {
            spawn(&child, words[0], &actions, &attributes, argv, environ)
        }
    guard rc == 0 else { throw SpawnFailure(description: "posix_spawn \(words[0]) failed: \(rc)") }
    return child
}
