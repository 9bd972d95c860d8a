/// Every request in flight holds two descriptors: the caller's connection and its upstream
/// one. When the open-file limit cannot hold both caps, each side gets half of what the limit
/// leaves after a reserve (listener, epoll, eventfds, logs) and the upstream side's curl
/// handles (two descriptors each, their wake-up socket pair: one handle per
/// `transfersPerCurlHandle` connections, plus one per loop for rounding), so a burst waits
/// for free connections instead of failing for want of a descriptor.
struct DescriptorBudget: Equatable, Sendable {
    static let reserve = 64
    let limit: Int
    let perSide: Int

    init(limit: Int, loops: Int, connectionsPerCurlHandle: Int) {
        self.limit = limit
        guard limit > 0 else {
            perSide = Int.max
            return
        }
        // 2·S + reserve + 2·(S / perHandle + loops) ≤ limit, solved for S.
        let perHandle = max(1, connectionsPerCurlHandle)
        let usable = limit - Self.reserve - 2 * loops
        perSide = max(16, usable * perHandle / (2 * perHandle + 2))
    }

    func cap(_ configured: Int) -> Int { min(configured, perSide) }
}
