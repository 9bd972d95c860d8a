import Testing

@testable import Jobs
@testable import TextTasks

@Suite("Planning a job's calls")
struct JobPlanTests {
    typealias Answer = (answer: String, sourceStart: Int, sourceEnd: Int)

    static func chunk(_ text: String, _ start: Int, _ end: Int) -> TextChunk {
        TextChunk(text: text, start: start, end: end, overlapStart: start)
    }

    @Test("a text of one chunk is one final call over it, for every task")
    func oneChunk() {
        for task in TextTask.allCases {
            let items = JobPlan.firstLevel(task: task, chunks: [Self.chunk("یک متن کوتاه.", 0, 13)])
            #expect(items == [PlannedItem(kind: .final, input: "یک متن کوتاه.", sourceStart: 0, sourceEnd: 13)])
            #expect(JobPlan.expectedCalls(task: task, chunkCount: 1) == 1)
        }
        #expect(JobPlan.firstLevel(task: .summarize, chunks: []).isEmpty)
    }

    @Test("a text of n chunks is n map calls, each over its chunk's text and answering for its own part")
    func mapsPerChunk() {
        let chunks = [
            TextChunk(text: "الف. ", start: 0, end: 5, overlapStart: 0),
            TextChunk(text: "الف. ب. ", start: 5, end: 8, overlapStart: 0),
            TextChunk(text: "پ.", start: 8, end: 10, overlapStart: 8),
        ]
        let items = JobPlan.firstLevel(task: .keyPoints, chunks: chunks)
        #expect(items.map(\.kind) == [.map, .map, .map])
        #expect(items.map(\.input) == chunks.map(\.text))
        #expect(items.map(\.sourceStart) == [0, 5, 8])
        #expect(items.map(\.sourceEnd) == [5, 8, 10])
    }

    @Test("expected calls: a map per chunk, and the final pass but for rewrite")
    func expectedCalls() {
        #expect(JobPlan.expectedCalls(task: .rewrite, chunkCount: 7) == 7)
        for task in [TextTask.summarize, .keyPoints, .titles] {
            #expect(JobPlan.expectedCalls(task: task, chunkCount: 7) == 8)
        }
        #expect(JobPlan.expectedCalls(task: .summarize, chunkCount: 0) == 0)
    }

    @Test("rewrite's answers are put together in order, however long")
    func rewriteConcatenates() {
        let answers: [Answer] = [("اول", 0, 10), ("دوم", 10, 20), ("سوم", 20, 30)]
        #expect(JobPlan.next(task: .rewrite, answers: answers, budget: 5) == .concatenate("اول\n\nدوم\n\nسوم"))
    }

    @Test("answers whose final text fits the budget go to the final pass, over their whole range")
    func fittingAnswersGoFinal() {
        let answers: [Answer] = [("خلاصهٔ یک", 0, 100), ("خلاصهٔ دو", 100, 180), ("خلاصهٔ سه", 180, 260)]
        let text = JobPrompts.finalText(parts: answers.map(\.answer))
        for task in [TextTask.summarize, .keyPoints, .titles] {
            #expect(
                JobPlan.next(task: task, answers: answers, budget: text.count)
                    == .final(PlannedItem(kind: .final, input: text, sourceStart: 0, sourceEnd: 260)))
        }
        // One answer too long for the budget cannot shrink by a reduce: it goes final too.
        #expect(
            JobPlan.next(task: .summarize, answers: [("بلند", 3, 9)], budget: 2)
                == .final(PlannedItem(kind: .final, input: "بلند", sourceStart: 3, sourceEnd: 9)))
    }

    /// The groups of a reduce level, checked: consecutive, in order, two or more answers each,
    /// each input the reduce text of its answers and answering for their range.
    static func checkReduce(
        _ next: JobPlan.Next, _ answers: [Answer], sourceLocation: SourceLocation = #_sourceLocation
    ) -> [PlannedItem] {
        guard case .reduce(let items) = next else {
            Issue.record("expected a reduce level, got \(next)", sourceLocation: sourceLocation)
            return []
        }
        var index = 0
        for item in items {
            #expect(item.kind == .reduce, sourceLocation: sourceLocation)
            var end = index
            while end < answers.count, JobPrompts.reduceText(parts: answers[index..<end].map(\.answer)) != item.input {
                end += 1
            }
            #expect(end - index >= 2, "a group of \(end - index)", sourceLocation: sourceLocation)
            #expect(
                item.input == JobPrompts.reduceText(parts: answers[index..<end].map(\.answer)),
                sourceLocation: sourceLocation)
            #expect(
                item.sourceStart == answers[index].sourceStart
                    && item.sourceEnd == answers[max(index, end - 1)].sourceEnd, sourceLocation: sourceLocation)
            index = end
        }
        #expect(index == answers.count, "the groups cover every answer", sourceLocation: sourceLocation)
        return items
    }

    static func answers(_ count: Int, length: Int) -> [Answer] {
        (0..<count).map { index in
            (String(repeating: "نکته\u{200C}ای \(index). ", count: 1 + length / 12), index * 50, index * 50 + 50)
        }
    }

    @Test("answers too long for the final pass are combined in groups of two or more, each within the budget")
    func reduceGroupsWithinBudget() {
        for (count, length, budget) in [(10, 30, 100), (9, 30, 130), (25, 40, 300), (40, 20, 600), (7, 30, 150)] {
            let answers = Self.answers(count, length: length)
            let items = Self.checkReduce(JobPlan.next(task: .summarize, answers: answers, budget: budget), answers)
            #expect(items.count < count)
            for item in items {
                #expect(
                    item.input.count <= budget, "\(count) answers of \(length), budget \(budget): \(item.input.count)")
            }
        }
    }

    @Test("groups keep two answers or more even where that goes over the budget")
    func groupsOfTwoOverBudget() {
        // Three answers whose final text does not fit: one group of three is the only way.
        let answers = Self.answers(3, length: 40)
        let budget = JobPrompts.finalText(parts: answers.map(\.answer)).count - 1
        let items = Self.checkReduce(JobPlan.next(task: .summarize, answers: answers, budget: budget), answers)
        #expect(items.count == 1)
        // Answers each longer than the budget go in pairs.
        let long = Self.answers(6, length: 120)
        #expect(Self.checkReduce(JobPlan.next(task: .keyPoints, answers: long, budget: 50), long).count == 3)
    }

    @Test("a last answer alone takes the last answer of the group before, or joins a group of two")
    func loneLastAnswer() {
        // Each answer with its label is about 40 characters: three fit a budget of 130.
        let answers = Self.answers(4, length: 30)
        let three = JobPrompts.reduceText(parts: answers[0..<3].map(\.answer)).count
        let items = Self.checkReduce(JobPlan.next(task: .keyPoints, answers: answers, budget: three), answers)
        #expect(items.count == 2)
        #expect(items.first?.input == JobPrompts.reduceText(parts: answers[0..<2].map(\.answer)))
        let two = JobPrompts.reduceText(parts: answers[0..<2].map(\.answer)).count
        let joined = Self.checkReduce(
            JobPlan.next(task: .keyPoints, answers: Array(answers[0..<3]), budget: two), Array(answers[0..<3]))
        #expect(joined.count == 1)
    }

    @Test("rounds over answers longer than the budget still end, each with fewer answers")
    func roundsEnd() {
        for (count, length, budget) in [(50, 200, 100), (17, 30, 100), (200, 80, 500)] {
            var answers = Self.answers(count, length: length)
            var rounds = 0
            while true {
                let next = JobPlan.next(task: .titles, answers: answers, budget: budget)
                guard case .reduce = next else {
                    guard case .final(let item) = next else {
                        Issue.record("a reduce or the final pass, not \(next)")
                        break
                    }
                    #expect(item.sourceStart == 0 && item.sourceEnd == count * 50)
                    break
                }
                let items = Self.checkReduce(next, answers)
                #expect(items.count < answers.count)
                // A synthetic answer: shorter than its input, but as long as the originals.
                answers = items.map { (String($0.input.prefix(length)), $0.sourceStart, $0.sourceEnd) }
                rounds += 1
                if rounds > 20 {
                    Issue.record("the rounds do not end")
                    break
                }
            }
        }
    }
}
