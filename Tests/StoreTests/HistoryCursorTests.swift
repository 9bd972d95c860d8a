import Store
import Testing

@Suite("History cursors")
struct HistoryCursorTests {
    @Test("a cursor reads back from its own text")
    func roundTrip() {
        let cursor = HistoryCursor(sequence: 4_711)
        #expect(HistoryCursor(text: cursor.text) == cursor)
    }

    @Test("text that no page ever handed out is not a cursor", arguments: ["", "0", "-3", "+3", "3.0", " 3", "abc", "99999999999999999999", "٣"])
    func rejectsForeignText(_ text: String) {
        #expect(HistoryCursor(text: text) == nil)
    }
}
