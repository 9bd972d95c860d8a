package import JSON

/// A `"format": "json"` answer that matched its task's schema: the data, and the same
/// human-readable text `result` carries for `"format": "text"`.
package struct StructuredAnswer: Sendable, Equatable {
    /// The answer object, its strings trimmed.
    package let data: JSONValue
    /// ``StructuredOutput/humanText(task:data:)`` of ``data``.
    package let result: String
}

/// Reads a model's `"format": "json"` answer: takes off a Markdown code fence and the
/// whitespace around it, parses the JSON (the project's parser, strict), checks it against
/// the task's ``TaskSchema`` and makes the human-readable text.
package enum StructuredOutput {
    /// The answer of `task` in `answer`, or why it is not one.
    package static func read(_ answer: String, task: TextTask) -> Result<StructuredAnswer, SchemaViolation> {
        let document: JSONValue
        do {
            document = try JSONValue.parse(Array(unfenced(answer).utf8))
        } catch {
            return .failure(.notJSON)
        }
        if let violation = JSONSchemaCheck.violation(of: TaskSchema.of(task).schema, by: document) {
            return .failure(violation)
        }
        let data = trimmingStrings(document)
        return .success(StructuredAnswer(data: data, result: humanText(task: task, data: data)))
    }

    /// `answer` without whitespace around it and without a ```` ``` ```` or ```` ```json ````
    /// fence around that (models add one even when asked for JSON only).
    static func unfenced(_ answer: String) -> Substring {
        let trimmed = Substring(TextTrim.trimmed(answer))
        let fence = "```"
        guard trimmed.hasPrefix(fence), trimmed.count >= 2 * fence.count else { return trimmed }
        var text = trimmed.dropFirst(fence.count)
        if text.prefix(4).lowercased() == "json" { text = text.dropFirst(4) }
        guard text.hasSuffix(fence) else { return trimmed } // an opened fence never closed: not ours to mend
        text = text.dropLast(fence.count)
        return Substring(TextTrim.trimmed(String(text)))
    }

    /// The text `result` carries: summarize and rewrite their text; key-points one `- point`
    /// line per point; titles numbered `1. title` lines, ASCII digits and a period, as a
    /// model writes a numbered list when asked in text (so an app that splits the text
    /// answer's lines splits this one the same way).
    static func humanText(task: TextTask, data: JSONValue) -> String {
        let member = data[TaskSchema.of(task).member]
        switch task {
        case .summarize, .rewrite:
            return member?.stringValue ?? ""
        case .keyPoints:
            return strings(member).map { "- " + $0 }.joined(separator: "\n")
        case .titles:
            return strings(member).enumerated().map { "\($0.offset + 1). " + $0.element }.joined(separator: "\n")
        }
    }

    private static func strings(_ value: JSONValue?) -> [String] {
        guard case .array(let items)? = value else { return [] }
        return items.compactMap(\.stringValue)
    }

    private static func trimmingStrings(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let text): return .string(TextTrim.trimmed(text))
        case .array(let items): return .array(items.map(trimmingStrings))
        case .object(let members): return .object(members.mapValues(trimmingStrings))
        default: return value
        }
    }
}
