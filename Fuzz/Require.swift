/// Traps with `message` when `condition` is false. Unlike `precondition`, the message and
/// line survive `-O`, so libFuzzer's log says which invariant broke.
func require(
    _ condition: Bool,
    _ message: @autoclosure () -> String = "invariant violated",
    file: StaticString = #fileID,
    line: UInt = #line
) {
    if !condition { fatalError(message(), file: file, line: line) }
}
