import TextTasks

/// What `text-gateway eval` can check of an answer without a judge model. Each check is a
/// pure function of the answer and the text it came from.
enum EvalChecks {
    struct Check: Sendable, Equatable {
        let name: String
        let passed: Bool
    }

    /// The checks of one task's plain answer to `text`.
    static func checks(task: TextTask, answer: String, text: EvalText) -> [Check] {
        var checks = [Check(name: "persian_script", passed: isPersianScript(answer))]
        switch task {
        case .summarize:
            checks.append(Check(name: "shorter_than_input", passed: answer.count < text.text.count))
            let found = Set(numbers(in: answer))
            checks.append(Check(name: "keeps_names", passed: text.names.allSatisfy { mentions(answer, $0) }))
            checks.append(Check(name: "keeps_key_numbers", passed: Set(text.keyNumbers).isSubset(of: found)))
            checks.append(Check(name: "no_invented_numbers", passed: found.isSubset(of: numbers(in: text.text))))
        case .keyPoints:
            let items = bulletItems(answer)
            checks.append(Check(name: "bulleted_list_3_to_10", passed: items.map { (3...10).contains($0) } ?? false))
        case .titles:
            checks.append(Check(name: "ten_numbered_lines", passed: isNumberedList(answer, count: 10)))
        case .rewrite:
            checks.append(
                Check(name: "keeps_every_number", passed: Set(numbers(in: text.text)).isSubset(of: numbers(in: answer)))
            )
        }
        return checks
    }

    /// The check of a `format: json` answer: it validates against the task's schema.
    static func structured(task: TextTask, answer: String) -> Check {
        let valid = if case .success = StructuredOutput.read(answer, task: task) { true } else { false }
        return Check(name: "json_validates", passed: valid)
    }

    /// Whether `text` holds `name`, compared by code points once spelling variants are
    /// folded: a Persian word followed by a zero-width non-joiner (`پشتیبان‌گیری`) is one
    /// Character more than the word alone, and `جشنوارهٔ فجر` is as often written `جشنواره فجر`.
    static func mentions(_ text: String, _ name: String) -> Bool {
        let needle = Array(folded(name).utf8)
        let haystack = Array(folded(text).utf8)
        guard !needle.isEmpty, haystack.count >= needle.count else { return needle.isEmpty }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    /// `text` without the marks a writer may or may not put (hamza above, zero-width
    /// non-joiner, tatweel), with Arabic yeh and kaf as Persian's, Latin letters lowercased.
    private static func folded(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0654, 0x200C, 0x0640: continue
            case 0x064A, 0x0649: scalars.append("\u{06CC}")
            case 0x0643: scalars.append("\u{06A9}")
            case 0x41...0x5A: scalars.append(Unicode.Scalar(scalar.value + 0x20)!)
            default: scalars.append(scalar)
            }
        }
        return String(scalars)
    }

    /// Most letters are of the Arabic script (Persian's), not Latin or other.
    static func isPersianScript(_ text: String) -> Bool {
        var letters = 0
        var arabic = 0
        for scalar in text.unicodeScalars where scalar.properties.isAlphabetic {
            letters += 1
            switch scalar.value {
            case 0x0600...0x06FF, 0x0750...0x077F, 0xFB50...0xFDFF, 0xFE70...0xFEFF: arabic += 1
            default: break
            }
        }
        return letters > 0 && arabic * 10 >= letters * 7
    }

    /// The numbers written in `text` (Persian, Arabic-Indic or ASCII digits, a decimal point
    /// inside), each in ASCII digits.
    static func numbers(in text: String) -> [String] {
        var found: [String] = []
        var current = ""
        var pendingPoint = false
        func flush() {
            if !current.isEmpty { found.append(current) }
            current = ""
            pendingPoint = false
        }
        for scalar in text.unicodeScalars {
            if let digit = asciiDigit(scalar) {
                if pendingPoint { current.append(".") }
                pendingPoint = false
                current.unicodeScalars.append(digit)
            } else if !current.isEmpty, !pendingPoint, scalar == "." || scalar == "٫" || scalar == "/" {
                pendingPoint = true
            } else {
                flush()
            }
        }
        flush()
        return found
    }

    private static func asciiDigit(_ scalar: Unicode.Scalar) -> Unicode.Scalar? {
        switch scalar.value {
        case 0x30...0x39: scalar
        case 0x06F0...0x06F9: Unicode.Scalar(scalar.value - 0x06F0 + 0x30)
        case 0x0660...0x0669: Unicode.Scalar(scalar.value - 0x0660 + 0x30)
        default: nil
        }
    }

    /// The number of items when every non-empty line is a bullet (`-`, `•`, `*`, `–`, or a
    /// number followed by `.` or `)`); nil when a line is not.
    static func bulletItems(_ text: String) -> Int? {
        let lines = text.split(whereSeparator: \.isNewline).map { TextTrim.trimmed(String($0)) }.filter { !$0.isEmpty }
        guard !lines.isEmpty else { return nil }
        for line in lines where !(["-", "•", "*", "–"].contains { line.hasPrefix($0) } || numberedPrefix(line) != nil) {
            return nil
        }
        return lines.count
    }

    /// Exactly `count` non-empty lines, numbered 1 to `count` in order.
    static func isNumberedList(_ text: String, count: Int) -> Bool {
        let lines = text.split(whereSeparator: \.isNewline).map { TextTrim.trimmed(String($0)) }.filter { !$0.isEmpty }
        guard lines.count == count else { return false }
        return lines.enumerated().allSatisfy { numberedPrefix($1) == $0 + 1 }
    }

    /// The number a line starts with before `.`, `)` or `-`, and some text after it.
    private static func numberedPrefix(_ line: String) -> Int? {
        var digits = ""
        var rest = Substring(line)
        while let first = rest.unicodeScalars.first, let digit = asciiDigit(first) {
            digits.unicodeScalars.append(digit)
            rest = rest.dropFirst()
        }
        guard !digits.isEmpty, let mark = rest.first, [".", ")", "-", "٫"].contains(mark),
            !TextTrim.trimmed(String(rest.dropFirst())).isEmpty
        else { return nil }
        return Int(digits)
    }
}
