/// The fixed prompts of a job's rounds over a long text, built as ``Prompt`` builds a task's:
/// the contract's system prefix before the round's instruction lines, and the text (a chunk,
/// or partial answers) wrapped and neutralised as the user's data, exactly as today.
///
/// Titles are drawn from the whole text's summary, so their map and reduce rounds are the
/// summary's; the task's own prompt runs only in the final pass (``finalText(parts:)``), with
/// the tone. Rewrite has no reduce round: its rewritten parts are put back together in order.
package enum JobPrompts {
    /// The first line of a map round's instruction (after rewrite's own lines for rewrite);
    /// `{i}` and `{n}` stand for the part's number and the count of parts, in Persian digits.
    static let partLine = "متن ورودی بخش {i} از {n} بخش یک متن بلندتر است."

    /// The map round of summarize and titles, after ``partLine``.
    static let summaryMapLines = [
        "همین بخش را دقیق و وفادار به متن اصلی خلاصه کن.",
        "عددها، نام‌ها و تاریخ‌ها را حفظ کن.",
        "اطلاعات جدید اضافه نکن و بدون مقدمه فقط خلاصه را برگردان.",
    ]

    /// The map round of key-points, after ``partLine``.
    static let keyPointsMapLines = [
        "مهم‌ترین نکات همین بخش را استخراج کن.",
        "پاسخ را به‌صورت فهرست نشانه‌دار ارائه بده.",
        "عددها، نام‌ها و تاریخ‌ها را حفظ کن.",
        "بدون مقدمه فقط فهرست را برگردان.",
    ]

    /// The map round of rewrite: the task's own lines, ``partLine``, this line, and the tone's.
    static let rewriteMapLine = "فقط همین بخش را بازنویسی کن و آن را بدون هیچ مقدمه یا توضیحی برگردان."

    /// The reduce round of summarize and titles.
    static let summaryReduceLines = [
        "متن ورودی خلاصه‌های بخش‌های پیاپی یک متن است.",
        "این خلاصه‌ها را به همان ترتیب در یک خلاصهٔ یکپارچه ترکیب کن.",
        "عددها، نام‌ها و تاریخ‌ها را حفظ کن.",
        "مطلب تکراری نیاور و بدون مقدمه فقط خلاصه را برگردان.",
    ]

    /// The reduce round of key-points.
    static let keyPointsReduceLines = [
        "متن ورودی فهرست‌های نکات کلیدی بخش‌های پیاپی یک متن است.",
        "این فهرست‌ها را در یک فهرست نشانه‌دار ادغام کن.",
        "نکات تکراری را حذف کن و مهم‌ترین نکات را نگه دار.",
        "بدون مقدمه فقط فهرست را برگردان.",
    ]

    /// The line before each partial answer in a reduce round's text; `{i}` as in ``partLine``.
    static let partLabel = "بخش {i}:"

    /// Every fixed line above, templates included (docs/prompts.md holds each of them).
    static let fixedLines =
        [partLine, rewriteMapLine, partLabel] + summaryMapLines + keyPointsMapLines
        + summaryReduceLines + keyPointsReduceLines

    /// The prompt of part `part` (from 1) of `count`. `tone` is read for rewrite only: for
    /// the other tasks it belongs to the final pass.
    package static func map(task: TextTask, tone: Tone?, part: Int, of count: Int, text: String) -> Prompt {
        let numbered = partLine.replacing("{i}", with: persianDigits(part)).replacing("{n}", with: persianDigits(count))
        var lines: [String]
        switch task {
        case .summarize, .titles:
            lines = [numbered] + summaryMapLines
        case .keyPoints:
            lines = [numbered] + keyPointsMapLines
        case .rewrite:
            lines = task.instructionLines + [numbered, rewriteMapLine]
            if let tone { lines.append(tone.instructionLine) }
        }
        return Prompt(instructionLines: lines, text: text)
    }

    /// The prompt that combines `parts`, consecutive partial answers, into one.
    static func reduce(task: TextTask, parts: [String]) -> Prompt {
        reduce(task: task, text: reduceText(parts: parts))
    }

    /// The prompt of a reduce round whose text (``reduceText(parts:)``) is already built, as
    /// a job stores it. Rewrite, which has no reduce round, would get the summary's.
    package static func reduce(task: TextTask, text: String) -> Prompt {
        Prompt(instructionLines: task == .keyPoints ? keyPointsReduceLines : summaryReduceLines, text: text)
    }

    /// The text of a reduce round: each part after its label (``partLabel``, numbered from 1
    /// in Persian digits) on a line of its own, the parts apart by a blank line.
    package static func reduceText(parts: [String]) -> String {
        parts.enumerated().map { index, part in label(index + 1) + "\n" + part }.joined(separator: "\n\n")
    }

    /// ``partLabel`` of part `number`.
    package static func label(_ number: Int) -> String {
        partLabel.replacing("{i}", with: persianDigits(number))
    }

    /// The text of the final pass, which runs the task's own prompt (``Prompt``) over it:
    /// the parts apart by a blank line.
    package static func finalText(parts: [String]) -> String {
        parts.joined(separator: "\n\n")
    }

    /// `number` written with Persian digits (۰–۹).
    static func persianDigits(_ number: Int) -> String {
        String(
            String(number).map { character in
                character.wholeNumberValue.flatMap { Unicode.Scalar(0x06F0 + $0) }.map(Character.init) ?? character
            })
    }
}
