/// Identifies a scheduled timer so it can be cancelled.
public struct TimerID: Hashable, Sendable {
    let rawValue: UInt64
}

/// A min-heap of deadlines with lazily cancelled entries. Confined to one loop thread.
struct TimerQueue {
    private struct Entry: DeadlineHeapEntry {
        var deadline: MonotonicInstant
        var id: UInt64
        /// Cancelled entries stay until they reach the top, so none leaves from the middle.
        func placed(at index: Int) {}
    }

    private var heap = DeadlineHeap<Entry>()
    private var callbacks: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1

    /// The number of live timers.
    var count: Int { callbacks.count }

    /// The earliest live deadline, dropping cancelled entries from the top.
    mutating func earliestDeadline() -> MonotonicInstant? {
        while let top = heap.first {
            if callbacks[top.id] != nil { return top.deadline }
            heap.remove(at: 0)
        }
        return nil
    }

    mutating func schedule(at deadline: MonotonicInstant, _ callback: @escaping () -> Void) -> TimerID {
        let id = nextID
        nextID &+= 1
        callbacks[id] = callback
        heap.insert(Entry(deadline: deadline, id: id))
        return TimerID(rawValue: id)
    }

    mutating func cancel(_ timer: TimerID) {
        callbacks[timer.rawValue] = nil
        if callbacks.isEmpty { heap.removeAll() }
    }

    /// Removes and returns the callbacks of every timer due at `now`, earliest first.
    mutating func takeExpired(now: MonotonicInstant) -> [() -> Void] {
        var due: [() -> Void] = []
        while let top = heap.first, top.deadline <= now {
            heap.remove(at: 0)
            if let callback = callbacks.removeValue(forKey: top.id) { due.append(callback) }
        }
        return due
    }
}
