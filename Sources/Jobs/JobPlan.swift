package import TextTasks

/// What a planned upstream call of a job is for.
enum PlannedKind: String, Sendable {
    /// One chunk, with its round's prompt (``JobPrompts/map(task:tone:part:of:text:)``).
    case map
    /// Consecutive partial answers combined (``JobPrompts/reduce(task:text:)``).
    case reduce
    /// The task's own prompt (``Prompt``) over the whole text or the last partial answers.
    case final
}

/// One upstream call a job will make. `input` is the text the round's prompt wraps: a
/// chunk's text (overlap included) for a map, ``JobPrompts/reduceText(parts:)`` for a reduce
/// (the labels included, so the stored input is the exact text sent), and
/// ``JobPrompts/finalText(parts:)`` or the whole text for the final pass.
/// `sourceStart..<sourceEnd` is the part of the cleaned text it answers for, in characters:
/// a chunk's own part, or the union of the answers it combines.
package struct PlannedItem: Equatable, Sendable {
    var kind: PlannedKind
    var input: String
    var sourceStart: Int
    var sourceEnd: Int
}

/// The pure decisions of a job over a long text: its first calls, how many calls it is
/// expected to make, and what follows a finished level of answers.
package enum JobPlan {
    /// What follows a level of answers.
    enum Next: Equatable, Sendable {
        /// Another level: groups of consecutive answers, each combined by one call.
        case reduce([PlannedItem])
        /// The last call, the task's own prompt over the answers.
        case final(PlannedItem)
        /// No further call: the answer is the answers put together in order.
        case concatenate(String)
    }

    /// A text of one chunk takes the task's own prompt, as `/api/process` would (rewrite
    /// too); more chunks take one map call each.
    package static func firstLevel(task: TextTask, chunks: [TextChunk]) -> [PlannedItem] {
        if chunks.count == 1, let chunk = chunks.first {
            return [PlannedItem(kind: .final, input: chunk.text, sourceStart: chunk.start, sourceEnd: chunk.end)]
        }
        return chunks.map { PlannedItem(kind: .map, input: $0.text, sourceStart: $0.start, sourceEnd: $0.end) }
    }

    /// The calls a job of `chunkCount` chunks makes when no reduce round is needed: one for
    /// one chunk; a map each for rewrite; a map each and the final pass otherwise. Reduce
    /// rounds add theirs when ``next(task:answers:budget:)`` plans them.
    package static func expectedCalls(task: TextTask, chunkCount: Int) -> Int {
        guard chunkCount > 1 else { return max(0, chunkCount) }
        return task == .rewrite ? chunkCount : chunkCount + 1
    }

    /// What follows `answers`, a finished level's answers in the order of the text, when a
    /// call's input may hold `budget` characters. Rewrite puts its parts together. Otherwise
    /// the final pass takes the answers when their ``JobPrompts/finalText(parts:)`` fits the
    /// budget (or there is only one answer, which no round can shrink further); if not, the
    /// answers are combined in groups of consecutive ones whose reduce text fits the budget
    /// where it can, but of at least two answers each, so that every round has fewer
    /// answers than the one before and the rounds end.
    static func next(task: TextTask, answers: [(answer: String, sourceStart: Int, sourceEnd: Int)], budget: Int) -> Next
    {
        let parts = answers.map(\.answer)
        guard task != .rewrite, let first = answers.first, let last = answers.last else {
            return .concatenate(JobPrompts.finalText(parts: parts))
        }
        let finalText = JobPrompts.finalText(parts: parts)
        if answers.count == 1 || CharacterCount.of(finalText, limit: budget) <= budget {
            return .final(
                PlannedItem(kind: .final, input: finalText, sourceStart: first.sourceStart, sourceEnd: last.sourceEnd))
        }
        return .reduce(
            groups(of: parts, budget: budget).map { group in
                PlannedItem(
                    kind: .reduce, input: JobPrompts.reduceText(parts: Array(parts[group])),
                    sourceStart: answers[group.lowerBound].sourceStart,
                    sourceEnd: answers[group.upperBound - 1].sourceEnd
                )
            })
    }

    /// Consecutive groups of `parts` (two or more of them), each of at least two parts and
    /// as many more as keep its reduce text within `budget` characters.
    static func groups(of parts: [String], budget: Int) -> [Range<Int>] {
        let lengths = parts.map { CharacterCount.of($0) }
        // A part's share of its group's reduce text: its label (numbered within the group),
        // the line break after it, and the part. Line breaks end clusters, so shares and
        // separators add up to the text's count (a part ending in CR makes it one less).
        func share(_ index: Int, at position: Int) -> Int {
            CharacterCount.of(JobPrompts.label(position + 1)) + 1 + lengths[index]
        }
        var groups: [Range<Int>] = []
        var start = 0
        while start < parts.count {
            var end = min(start + 2, parts.count)
            var length = (start..<end).reduce(2 * (end - start - 1)) { $0 + share($1, at: $1 - start) }
            while end < parts.count, length + 2 + share(end, at: end - start) <= budget {
                length += 2 + share(end, at: end - start)
                end += 1
            }
            groups.append(start..<end)
            start = end
        }
        // A last part alone takes the previous group's last part when that group keeps two,
        // or else joins it.
        if groups.count > 1, let lastGroup = groups.last, lastGroup.count == 1 {
            let previous = groups[groups.count - 2]
            groups.removeLast(2)
            if previous.count > 2 {
                groups += [
                    previous.lowerBound..<previous.upperBound - 1, previous.upperBound - 1..<lastGroup.upperBound,
                ]
            } else {
                groups.append(previous.lowerBound..<lastGroup.upperBound)
            }
        }
        return groups
    }
}
