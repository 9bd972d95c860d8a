/// What a model's tokens cost, per million tokens in micro-units of the currency, from an
/// instant on (or always).
package struct ModelPrice: Sendable, Hashable {
    /// Input (prompt) tokens that were not read from the provider's prompt cache.
    package let input: Int64
    /// Input tokens the provider read from its prompt cache (`cached_tokens`); the input
    /// price where the operator gave none.
    package let cachedInput: Int64
    /// Output (completion) tokens.
    package let output: Int64
    /// When the price starts to apply, in milliseconds since the epoch; nil: always (until a
    /// later price of the model starts).
    package let effectiveFrom: Int64?

    package init(input: Int64, cachedInput: Int64? = nil, output: Int64, effectiveFrom: Int64? = nil) {
        self.input = max(0, input)
        self.cachedInput = max(0, cachedInput ?? input)
        self.output = max(0, output)
        self.effectiveFrom = effectiveFrom
    }

    /// The cost of `tokens` in micro-units: the exact sum of each kind's tokens times its
    /// price per million, divided by a million once and rounded **up** to a whole micro-unit
    /// (so a budget never loses what rounding would hide; the most a request is charged over
    /// its exact cost is one micro-unit). Cached tokens are part of the input tokens, as
    /// OpenAI reports them; counts below zero count as zero; a result beyond `Int64` is
    /// `Int64.max`.
    package func cost(of tokens: TokenCounts) -> Int64 {
        let cached = Int128(min(max(0, tokens.cachedInput), max(0, tokens.input)))
        let fresh = Int128(max(0, tokens.input)) - cached
        let output = Int128(max(0, tokens.output))
        let product = fresh * Int128(input) + cached * Int128(cachedInput) + output * Int128(self.output)
        let perMillion = Int128(1_000_000)
        let rounded = (product + perMillion - 1) / perMillion
        return rounded > Int128(Int64.max) ? Int64.max : Int64(rounded)
    }
}

/// The tokens a call used (or may use), as a price reads them.
package struct TokenCounts: Sendable, Hashable {
    /// Prompt tokens, the cached ones included.
    package var input: Int
    /// Of ``input``, those read from the provider's prompt cache.
    package var cachedInput: Int
    package var output: Int

    package init(input: Int, cachedInput: Int = 0, output: Int) {
        self.input = input
        self.cachedInput = cachedInput
        self.output = output
    }
}
