import EventLoop
import Testing

@Suite("Deadline heap")
struct DeadlineHeapTests {
    final class Item: DeadlineHeapEntry {
        let deadline: MonotonicInstant
        var index = -1
        init(_ nanoseconds: UInt64) { deadline = MonotonicInstant(nanoseconds: nanoseconds) }
        func placed(at index: Int) { self.index = index }
    }

    @Test("gives entries back earliest first while others leave from the middle, each knowing its place")
    func removalsFromTheMiddle() {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            var heap = DeadlineHeap<Item>()
            var live: [Item] = []
            for _ in 0..<200 {
                let item = Item(UInt64.random(in: 0..<1000, using: &random))
                heap.insert(item)
                live.append(item)
            }
            // A third leave from wherever they sit.
            for _ in 0..<66 {
                let item = live.remove(at: Int.random(in: 0..<live.count, using: &random))
                #expect(heap[item.index] === item)
                heap.remove(at: item.index)
            }
            for position in 0..<heap.count { #expect(heap[position].index == position) }
            var previous: UInt64 = 0
            var taken = 0
            while let top = heap.first {
                #expect(top.deadline.nanoseconds >= previous)
                previous = top.deadline.nanoseconds
                heap.remove(at: 0)
                taken += 1
            }
            #expect(taken == live.count)
        }
    }
}
