/// Identifies a scheduled timer so it can be cancelled.
public struct TimerID: Hashable, Sendable {
    let rawValue: UInt64
}

/// A min-heap of deadlines with lazily cancelled entries. Confined to one loop thread.
struct TimerQueue {
    private struct Entry {
        var deadline: MonotonicInstant
        var id: UInt64
    }

    private var heap: [Entry] = []
    private var callbacks: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1

    /// The number of live timers.
    var count: Int { callbacks.count }

    /// The earliest live deadline, dropping cancelled entries from the top.
    mutating func earliestDeadline() -> MonotonicInstant? {
        while let top = heap.first {
            if callbacks[top.id] != nil { return top.deadline }
            popTop()
        }
        return nil
    }

    mutating func schedule(at deadline: MonotonicInstant, _ callback: @escaping () -> Void) -> TimerID {
        let id = nextID
        nextID &+= 1
        callbacks[id] = callback
        heap.append(Entry(deadline: deadline, id: id))
        siftUp(heap.count - 1)
        return TimerID(rawValue: id)
    }

    mutating func cancel(_ timer: TimerID) {
        callbacks[timer.rawValue] = nil
        if callbacks.isEmpty { heap.removeAll(keepingCapacity: true) }
    }

    /// Removes and returns the callbacks of every timer due at `now`, earliest first.
    mutating func takeExpired(now: MonotonicInstant) -> [() -> Void] {
        var due: [() -> Void] = []
        while let top = heap.first, top.deadline <= now {
            popTop()
            if let callback = callbacks.removeValue(forKey: top.id) { due.append(callback) }
        }
        return due
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(0)
        }
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
