/// Token counts an OpenAI-compatible server reports: `{"prompt_tokens", "completion_tokens",
/// "total_tokens"}`, and of the prompt's tokens those read from the provider's prompt cache
/// (`"prompt_tokens_details": {"cached_tokens"}`), which cost less.
///
/// Each count is optional, because compatible servers omit some of them; other fields are
/// ignored. Encoding omits `nil` counts.
package struct Usage: Codable, Hashable, Sendable {
    /// Tokens in the prompt, `prompt_tokens`.
    package var promptTokens: Int?
    /// Tokens generated, `completion_tokens`.
    package var completionTokens: Int?
    /// `total_tokens` as reported.
    package var totalTokens: Int?
    /// Of the prompt's tokens, those the provider read from its prompt cache:
    /// `prompt_tokens_details.cached_tokens`.
    package var cachedPromptTokens: Int?

    /// Creates a usage report.
    package init(promptTokens: Int?, completionTokens: Int?, totalTokens: Int?, cachedPromptTokens: Int? = nil) {
        self.promptTokens = promptTokens
        self.completionTokens = completionTokens
        self.totalTokens = totalTokens
        self.cachedPromptTokens = cachedPromptTokens
    }

    /// `total_tokens`, or the sum of prompt and completion tokens when the server reported
    /// both of those but no total; `nil` when neither is possible.
    package var effectiveTotalTokens: Int? {
        if let totalTokens { return totalTokens }
        guard let promptTokens, let completionTokens else { return nil }
        let (sum, overflow) = promptTokens.addingReportingOverflow(completionTokens)
        return overflow ? nil : sum
    }

    private enum CodingKeys: String, CodingKey {
        case promptTokens = "prompt_tokens"
        case completionTokens = "completion_tokens"
        case totalTokens = "total_tokens"
        case promptTokensDetails = "prompt_tokens_details"
    }

    private enum DetailsKeys: String, CodingKey {
        case cachedTokens = "cached_tokens"
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.promptTokens = try container.decodeIfPresent(Int.self, forKey: .promptTokens)
        self.completionTokens = try container.decodeIfPresent(Int.self, forKey: .completionTokens)
        self.totalTokens = try container.decodeIfPresent(Int.self, forKey: .totalTokens)
        // Leniently, as the byte reader does: details of another shape only lose the cache's discount.
        if let details = try? container.nestedContainer(keyedBy: DetailsKeys.self, forKey: .promptTokensDetails) {
            self.cachedPromptTokens = try? details.decodeIfPresent(Int.self, forKey: .cachedTokens)
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(promptTokens, forKey: .promptTokens)
        try container.encodeIfPresent(completionTokens, forKey: .completionTokens)
        try container.encodeIfPresent(totalTokens, forKey: .totalTokens)
        if let cachedPromptTokens {
            var details = container.nestedContainer(keyedBy: DetailsKeys.self, forKey: .promptTokensDetails)
            try details.encode(cachedPromptTokens, forKey: .cachedTokens)
        }
    }
}
