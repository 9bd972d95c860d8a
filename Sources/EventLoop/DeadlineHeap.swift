/// An entry of a `DeadlineHeap`: ordered by its deadline, and told where it sits so it can
/// leave from the middle (entries that only ever leave from the top ignore it).
public protocol DeadlineHeapEntry {
    var deadline: MonotonicInstant { get }
    mutating func placed(at index: Int)
}

/// A binary min-heap ordered by deadline. Confined to one thread, like the loop that owns it.
/// Inlinable so each user gets a copy specialised to its entry type.
public struct DeadlineHeap<Entry: DeadlineHeapEntry> {
    @usableFromInline var entries: [Entry] = []

    public init() {}

    @inlinable public var first: Entry? { entries.first }
    @inlinable public var count: Int { entries.count }
    @inlinable public var isEmpty: Bool { entries.isEmpty }

    @inlinable public subscript(index: Int) -> Entry { entries[index] }

    @inlinable public mutating func insert(_ entry: Entry) {
        entries.append(entry)
        entries[entries.count - 1].placed(at: entries.count - 1)
        siftUp(entries.count - 1)
    }

    /// Restores the order after the deadline of the entry at `index` changed.
    @inlinable public mutating func reorder(at index: Int) {
        siftUp(index)
        siftDown(index)
    }

    @inlinable @discardableResult public mutating func remove(at index: Int) -> Entry {
        let removed = entries[index]
        let last = entries.removeLast()
        if index < entries.count {
            entries[index] = last
            entries[index].placed(at: index)
            reorder(at: index)
        }
        return removed
    }

    @inlinable public mutating func removeAll() {
        entries.removeAll(keepingCapacity: true)
    }

    @inlinable mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { return }
            swapAt(child, parent)
            child = parent
        }
    }

    @inlinable mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count, entries[left].deadline < entries[smallest].deadline { smallest = left }
            if right < entries.count, entries[right].deadline < entries[smallest].deadline { smallest = right }
            if smallest == parent { return }
            swapAt(parent, smallest)
            parent = smallest
        }
    }

    @inlinable mutating func swapAt(_ a: Int, _ b: Int) {
        entries.swapAt(a, b)
        entries[a].placed(at: a)
        entries[b].placed(at: b)
    }
}
