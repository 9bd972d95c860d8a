#if canImport(Glibc)
    import Glibc
#endif

/// The two messages sent upstream for a task: the fixed system prompt with the task's
/// instruction (and tone), and the user's text wrapped as data.
package struct Prompt: Equatable {
    package let system: String
    package let user: String

    package init(task: TextTask, tone: Tone?, text: String) {
        system = Prompt.systemPrompts[Prompt.index(task: task, tone: tone)]
        user = Prompt.userMessage(wrapping: text)
    }

    /// A prompt of other instruction lines (a job's rounds): the same fixed prefix before
    /// them, and the text wrapped as data in the same way.
    init(instructionLines: [String], text: String) {
        system = Prompt.systemPrompt(instructionLines: instructionLines)
        user = Prompt.userMessage(wrapping: text)
    }

    /// The user message: `text`, its tags neutralised, between the fixed prefix and suffix.
    static func userMessage(wrapping text: String) -> String {
        let body = Prompt.neutralizingTags(in: text)
        var user = ""
        user.reserveCapacity(PromptText.userPrefix.utf8.count + body.utf8.count + PromptText.userSuffix.utf8.count)
        user += PromptText.userPrefix
        user += body
        user += PromptText.userSuffix
        return user // one allocation, where `a + b + c` makes two
    }

    /// `allCases` builds a new array on every call; these are built once.
    private static let tasks = TextTask.allCases
    private static let tones = Tone.allCases

    /// The system prompt of every task and tone, built once: they are fixed.
    private static let systemPrompts: [String] = combinations.map { systemPrompt(task: $0.task, tone: $0.tone) }

    /// Every task with every tone (no tone first), in the order of ``index(task:tone:)``.
    package static let combinations: [(task: TextTask, tone: Tone?)] = tasks.flatMap { task in
        ([nil] + tones).map { tone in (task, tone) }
    }

    /// The place of a task and tone in ``combinations`` (and in the system prompts).
    package static func index(task: TextTask, tone: Tone?) -> Int {
        let taskIndex = tasks.firstIndex(of: task) ?? 0
        let toneIndex = tone.map { (tones.firstIndex(of: $0) ?? 0) + 1 } ?? 0
        return taskIndex * (tones.count + 1) + toneIndex
    }

    /// The fixed prefix, the task's four instruction lines, and the tone's line if any.
    static func systemPrompt(task: TextTask, tone: Tone?) -> String {
        var instruction = task.instructionLines
        if let tone { instruction.append(tone.instructionLine) }
        return systemPrompt(instructionLines: instruction)
    }

    /// The fixed prefix, then `instructionLines`, one a line.
    static func systemPrompt(instructionLines: [String]) -> String {
        PromptText.systemPrefix + instructionLines.joined(separator: "\n")
    }

    /// Rewrites every `<user_text>` / `</user_text>` tag in `text` (any case, spaces allowed
    /// inside the brackets) as `[user_text]` / `[/user_text]`, so the text cannot close or
    /// reopen the block it is wrapped in.
    package static func neutralizingTags(in text: String) -> String {
        // The usual case: no `<`, so no tag possible; one memchr over the contiguous bytes
        // rather than a walk of the `utf8` view.
        var text = text
        let mayHoldTag = text.withUTF8 { bytes in
            guard let start = bytes.baseAddress else { return false }
            return memchr(start, Int32(UInt8(ascii: "<")), bytes.count) != nil
        }
        guard mayHoldTag else { return text }
        let scalars = Array(text.unicodeScalars)
        var output = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            if scalars[index] == "<", let (end, closing) = tagEnd(scalars, from: index) {
                output.append(contentsOf: (closing ? "[/user_text]" : "[user_text]").unicodeScalars)
                index = end
            } else {
                output.append(scalars[index])
                index += 1
            }
        }
        return String(output)
    }

    /// If a user_text tag starts at `start` (a `<`), the index after its `>` and whether it closes.
    private static func tagEnd(_ scalars: [Unicode.Scalar], from start: Int) -> (Int, Bool)? {
        var index = start + 1
        func skipSpaces() { while index < scalars.count, scalars[index].properties.isWhitespace { index += 1 } }
        skipSpaces()
        var closing = false
        if index < scalars.count, scalars[index] == "/" {
            closing = true
            index += 1
            skipSpaces()
        }
        for expected in "user_text".unicodeScalars {
            guard index < scalars.count, scalars[index].properties.lowercaseMapping == String(expected) else {
                return nil
            }
            index += 1
        }
        skipSpaces()
        guard index < scalars.count, scalars[index] == ">" else { return nil }
        return (index + 1, closing)
    }
}
