import EventLoop

/// Polls `condition` every few milliseconds until it holds or `seconds` pass; tests wait
/// for servers this way instead of sleeping.
public func eventually(within seconds: Double = 60, _ condition: () async -> Bool) async -> Bool {
    let deadline = MonotonicInstant.now().advanced(by: .milliseconds(Int(seconds * 1000)))
    while MonotonicInstant.now() < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return await condition()
}
