/// A text task the gateway runs, as `task` in a request body.
public enum TextTask: String, Sendable, Hashable, CaseIterable, Codable {
    /// A faithful summary in two to four paragraphs.
    case summarize
    /// The text rewritten in fluent, formal Persian.
    case rewrite
    /// The text's main points as a bulleted list.
    case keyPoints = "key-points"
    /// Ten suggested titles for the text.
    case titles
}

/// The tone a task's answer is written in, as `tone` in a request body.
public enum Tone: String, Sendable, Hashable, CaseIterable, Codable {
    /// Formal register.
    case formal
    /// Warm, friendly register.
    case friendly
    /// Academic register.
    case academic
    /// As short as the task allows.
    case short
    /// Promotional, marketing register.
    case promotional
    /// Suited to social media posts.
    case social
}

/// The shape of an answer: human-readable text only, or text plus typed ``StructuredData``.
public enum OutputFormat: String, Sendable, Hashable, CaseIterable, Codable {
    /// Only ``ProcessResult/result``; ``ProcessResult/data`` is `nil`.
    case text
    /// ``ProcessResult/result`` and ``ProcessResult/data`` checked against the task's schema.
    case json
}
