/// `format` in a `/api/process` body: how the answer comes back.
package enum OutputFormat: String, Sendable, Hashable, CaseIterable {
    /// The model's text as `result` (absent `format`).
    case text
    /// The answer as `data`, checked against the task's schema (``TaskSchema``), and `result`
    /// the same human-readable text made from it.
    case json
}
