import Testing

@testable import Pricing

@Suite("Money in micro-units: amounts read exactly, shown rounded")
struct MicrosTests {
    @Test(
        "amounts per million tokens become whole micro-units",
        arguments: [
            ("0.15", Int64(150_000)), ("12", 12_000_000), ("1.000001", 1_000_001), ("0", 0), (".5", 500_000),
            ("2500000", 2_500_000_000_000), ("1000000000000", Micros.maximum),
        ])
    func reads(text: String, micros: Int64) {
        #expect(Micros.parse(text) == micros)
    }

    @Test(
        "anything else is refused: finer than a micro-unit, signs, exponents, two points, too large",
        arguments: [
            "", ".", "1.", "1.0000001", "-1", "+1", "1e3", "1.2.3", "1,5", " 1", "1000000000000.000001",
            "99999999999999999999",
        ])
    func refuses(text: String) {
        #expect(Micros.parse(text) == nil)
    }

    @Test("shown with the currency's minor units, half away from zero")
    func formats() {
        #expect(Micros.format(1_235_000, minorUnits: 2) == "1.24")
        #expect(Micros.format(1_234_999, minorUnits: 2) == "1.23")
        #expect(Micros.format(-1_235_000, minorUnits: 2) == "-1.24")
        #expect(Micros.format(1_500_000, minorUnits: 0) == "2")
        #expect(Micros.format(7, minorUnits: 6) == "0.000007")
        #expect(Micros.format(0, minorUnits: 3) == "0.000")
        #expect(Micros.format(-1, minorUnits: 2) == "0.00")
    }
}

@Suite("A model's price and what tokens cost")
struct ModelPriceTests {
    @Test("the exact sum of each kind of token at its price, divided once and rounded up to a micro-unit")
    func costRoundsUpOnce() {
        // 0.15 per million input, 0.60 per million output.
        let price = ModelPrice(input: 150_000, output: 600_000)
        // 1,000 input tokens: 150 micro-units exactly; 500 output: 300 exactly.
        #expect(price.cost(of: TokenCounts(input: 1000, output: 500)) == 450)
        // 1 input token: 0.15 micro-units, charged as 1.
        #expect(price.cost(of: TokenCounts(input: 1, output: 0)) == 1)
        // 3 input and 3 output: 0.45 + 1.8 = 2.25, one rounding of the sum: 3 (not 1 + 2 rounded each = 3 either,
        // but 7 inputs and 1 output: 1.05 + 0.6 = 1.65 -> 2, where rounding each would give 2 + 1 = 3).
        #expect(price.cost(of: TokenCounts(input: 7, output: 1)) == 2)
        #expect(price.cost(of: TokenCounts(input: 0, output: 0)) == 0)
    }

    @Test("cached input tokens are part of the input and cost the cached price; no cached price: the input price")
    func cachedTokens() {
        let price = ModelPrice(input: 2_000_000, cachedInput: 500_000, output: 8_000_000)
        // 10,000 prompt tokens of which 6,000 cached: 4,000 x 2 + 6,000 x 0.5 = 11,000 micro-units; 100 out x 8 = 800.
        #expect(price.cost(of: TokenCounts(input: 10_000, cachedInput: 6000, output: 100)) == 11_800)
        // A provider's cached count above its prompt count is capped at the prompt count.
        #expect(price.cost(of: TokenCounts(input: 100, cachedInput: 500, output: 0)) == 50)
        let uncachedPrice = ModelPrice(input: 2_000_000, output: 8_000_000)
        #expect(uncachedPrice.cachedInput == 2_000_000)
        #expect(uncachedPrice.cost(of: TokenCounts(input: 10_000, cachedInput: 6000, output: 0)) == 20_000)
    }

    @Test("counts below zero count as zero, and a cost beyond Int64 is Int64.max")
    func bounds() {
        let price = ModelPrice(input: 1_000_000, output: 1_000_000)
        #expect(price.cost(of: TokenCounts(input: -5, cachedInput: -1, output: -7)) == 0)
        let dear = ModelPrice(input: Micros.maximum, output: Micros.maximum)
        #expect(dear.cost(of: TokenCounts(input: Int.max, output: Int.max)) == Int64.max)
        // Rials: 2,500,000 IRR per million tokens, a 12,000-token call: 30,000 IRR exactly.
        let rial = ModelPrice(input: 2_500_000_000_000, output: 2_500_000_000_000)
        #expect(rial.cost(of: TokenCounts(input: 10_000, output: 2000)) == 30_000_000_000)
    }
}

@Suite("PRICES and PRICES_FILE")
struct PriceListTests {
    @Test("entries with and without a cached price, separated by ; or line breaks")
    func parses() throws {
        let list = try PriceList.parse(
            "gpt-4o-mini=0.15/0.075/0.60; openai/gpt-4.1 = 2/8\nllama3:8b=0/0", currency: .standard)
        #expect(list.models == ["gpt-4o-mini", "openai/gpt-4.1", "llama3:8b"])
        #expect(
            list.price(of: "gpt-4o-mini", at: 0) == ModelPrice(input: 150_000, cachedInput: 75_000, output: 600_000))
        #expect(list.price(of: "openai/gpt-4.1", at: 0) == ModelPrice(input: 2_000_000, output: 8_000_000))
        #expect(list.cost(of: TokenCounts(input: 1000, output: 1000), model: "llama3:8b", at: 0) == 0)
        #expect(list.cost(of: TokenCounts(input: 1000, output: 1000), model: "unlisted", at: 0) == nil)
    }

    @Test("a price change applies from its instant on: each call is priced by the entry in force when it was made")
    func priceChange() throws {
        let list = try PriceList.parse("m=3/4; m=1/2@2026-12-01T00:00:00Z; m=7/8@2027-01-01", currency: .standard)
        let december: Int64 = 1_796_083_200_000
        let january: Int64 = 1_798_761_600_000
        #expect(list.price(of: "m", at: december - 1)?.input == 3_000_000)
        #expect(list.price(of: "m", at: december)?.input == 1_000_000)
        #expect(list.price(of: "m", at: january - 1)?.input == 1_000_000)
        #expect(list.price(of: "m", at: january)?.input == 7_000_000)
        let tokens = TokenCounts(input: 1_000_000, output: 0)
        #expect(list.cost(of: tokens, model: "m", at: december - 1) == 3_000_000)
        #expect(list.cost(of: tokens, model: "m", at: december) == 1_000_000)
    }

    @Test("a model priced only from a later instant is unpriced before it")
    func unpricedBefore() throws {
        let list = try PriceList.parse("m=1/2@2026-12-01", currency: .standard)
        #expect(list.price(of: "m", at: 1_796_083_200_000 - 1) == nil)
        #expect(list.price(of: "m", at: 1_796_083_200_000) != nil)
    }

    @Test(
        "a broken entry is refused with the reason",
        arguments: [
            ("m=1", "INPUT/OUTPUT"), ("m", "MODEL=INPUT/OUTPUT"), ("=1/2", "model id"), ("m=1/2/3/4", "INPUT/OUTPUT"),
            ("m=1/x", "units per million"), ("m=1/-2", "units per million"), ("m=0.0000001/1", "six digits"),
            ("m=1/2@yesterday", "RFC 3339"), ("m=1/2@2026-02-29", "RFC 3339"),
            ("m=1/2@2026-12-01T00:00:00Z; m=3/4@2026-12-01T03:30:00+03:30", "same instant"),
            ("m=1/2; m=3/4", "same instant"),
        ])
    func refuses(text: String, reason: String) {
        #expect {
            _ = try PriceList.parse(text, currency: .standard)
        } throws: { error in
            "\(error)".contains(reason)
        }
    }

    @Test("a file: an entry a line, # comments, blank lines; a refusal names its line")
    func file() throws {
        let list = try PriceList.parse(
            file: "# the provider's list, 2026-12\n\nsmall=0.1/0.4   # cheap\r\nlarge = 2/0.5/8\n", currency: .standard)
        #expect(list.models == ["small", "large"])
        #expect(list.price(of: "large", at: 0)?.cachedInput == 500_000)
        #expect {
            _ = try PriceList.parse(file: "a=1/2\n# fine\nb=1/2/3/4\n", currency: .standard)
        } throws: { error in
            "\(error)".hasPrefix("line 3:")
        }
    }
}

@Suite("RFC 3339 instants a price starts from")
struct RFC3339Tests {
    @Test(
        "date-times with Z or an offset, fractions, and dates at midnight UTC",
        arguments: [
            ("2026-12-01T00:00:00Z", Int64(1_796_083_200_000)), ("2026-12-01t00:00:00z", 1_796_083_200_000),
            ("2026-12-01T03:30:00+03:30", 1_796_083_200_000), ("2026-11-30T20:30:00-03:30", 1_796_083_200_000),
            ("2026-12-01T00:00:00.25Z", 1_796_083_200_250), ("2026-12-01", 1_796_083_200_000),
            ("2024-02-29", 1_709_164_800_000), ("1969-12-31T23:59:59Z", -1000),
        ])
    func reads(text: String, milliseconds: Int64) {
        #expect(RFC3339.milliseconds(Substring(text)) == milliseconds)
    }

    @Test(
        "anything else is nil",
        arguments: [
            "", "2026-12-01T00:00:00", "2026-13-01", "2026-02-29", "2026-04-31", "2026-12-01T24:00:00Z",
            "2026-12-01T00:00Z", "2026-12-01T00:00:00+0330", "2026-12-01T00:00:00.Z", "2026-12-01 00:00:00Z",
            "2026-12-01T00:00:00Zjunk",
        ])
    func refuses(text: String) {
        #expect(RFC3339.milliseconds(Substring(text)) == nil)
    }
}

@Suite("CURRENCY")
struct CurrencyTests {
    @Test("known codes have their minor units; IRR and IRT are whole; a given count wins")
    func known() throws {
        #expect(try Currency(code: "USD").minorUnits == 2)
        #expect(try Currency(code: "IRR").minorUnits == 0)
        #expect(try Currency(code: "IRT").minorUnits == 0)
        #expect(try Currency(code: "KWD").minorUnits == 3)
        #expect(try Currency(code: "IRR", minorUnits: 2).minorUnits == 2)
        #expect(try Currency(code: "USD").format(12_345_000) == "12.35")
        #expect(Currency.standard.code == "USD")
    }

    @Test("a code is three capital letters; an unknown one needs its minor units; they are 0 to 6")
    func refuses() throws {
        #expect(throws: PriceConfigError.self) { try Currency(code: "usd") }
        #expect(throws: PriceConfigError.self) { try Currency(code: "DOLLAR") }
        #expect(throws: PriceConfigError.self) { try Currency(code: "XYZ") }
        #expect(try Currency(code: "XYZ", minorUnits: 4).minorUnits == 4)
        #expect(throws: PriceConfigError.self) { try Currency(code: "USD", minorUnits: 7) }
    }
}
