import ChatAPI
import JSON

extension JSONWriter {
    /// `"usage": {"inputTokens","outputTokens","totalTokens"}`, or `"usage": null` when the
    /// upstream reported none (never invented numbers).
    mutating func usageField(_ usage: Usage?) {
        guard let usage else {
            nullField("usage")
            return
        }
        field("usage") { fields in
            fields.field("inputTokens", usage.promptTokens ?? 0)
            fields.field("outputTokens", usage.completionTokens ?? 0)
            fields.field("totalTokens", usage.effectiveTotalTokens ?? 0)
        }
    }
}
