/// The language of the gateway's messages: Persian unless `Accept-Language` prefers English.
package enum Language: Sendable {
    case persian, english

    /// Picks the language from an `Accept-Language` value: the highest-weighted tag that is
    /// `en…` or `fa…` wins; anything else means Persian.
    init(acceptLanguage: String?, default fallback: Language = .persian) {
        guard let acceptLanguage else {
            self = fallback
            return
        }
        var best: (weight: Double, language: Language)?
        for element in HeaderElement.list(acceptLanguage) {
            let weight = element.weight
            let language: Language?
            if element.valueIs("en") || element.valueStarts(with: "en-") {
                language = .english
            } else if element.valueIs("fa") || element.valueStarts(with: "fa-") {
                language = .persian
            } else {
                language = nil
            }
            if let language, weight > 0, weight > (best?.weight ?? 0) { best = (weight, language) }
        }
        self = best?.language ?? fallback
    }
}
