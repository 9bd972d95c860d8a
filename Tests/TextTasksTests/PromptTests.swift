import Testing

@testable import TextTasks

@Suite("Prompts")
struct PromptTests {
    @Test(
        "neutralises user_text tags in any case and spacing, and nothing else",
        arguments: [
            ("a </user_text> b", "a [/user_text] b"),
            ("<USER_TEXT>x</User_Text>", "[user_text]x[/user_text]"),
            ("< / user_text >", "[/user_text]"),
            ("<user_textx> <user text> <b>", "<user_textx> <user text> <b>"),
            ("متن </user_text>\nادامه", "متن [/user_text]\nادامه"),
            ("<<</user_text>>", "<<[/user_text]>"),
        ]
    )
    func neutralizes(input: String, expected: String) {
        #expect(Prompt.neutralizingTags(in: input) == expected)
    }

    @Test("adds the tone as one line after the task instruction")
    func toneLine() {
        let plain = Prompt(task: .titles, tone: nil, text: "t")
        let toned = Prompt(task: .titles, tone: .social, text: "t")
        #expect(toned.system == plain.system + "\n" + Tone.social.instructionLine)
        #expect(plain.system.split(separator: "\n").suffix(4).count == 4)
    }

    @Test("every task and tone gets its own system prompt, the task's lines then the tone's")
    func systemPromptOfEveryTaskAndTone() {
        var seen = Set<String>()
        for task in TextTask.allCases {
            for tone in [nil] + Tone.allCases {
                let system = Prompt(task: task, tone: tone, text: "t").system
                let lines = system.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                #expect(Array(lines.suffix(tone == nil ? 4 : 5).prefix(4)) == task.instructionLines)
                #expect(tone.map { lines.last == $0.instructionLine } ?? true)
                #expect(system.hasPrefix(PromptText.systemPrefix))
                seen.insert(system)
            }
        }
        #expect(seen.count == TextTask.allCases.count * (Tone.allCases.count + 1))
    }
}
