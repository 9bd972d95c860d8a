/// The language of the gateway's messages: Persian unless `Accept-Language` prefers English.
public enum Language: Sendable {
    case persian, english

    /// Picks the language from an `Accept-Language` value: the highest-weighted tag that is
    /// `en…` or `fa…` wins; anything else means Persian.
    init(acceptLanguage: String?, default fallback: Language = .persian) {
        guard let acceptLanguage else {
            self = fallback
            return
        }
        var best: (weight: Double, language: Language)?
        for item in acceptLanguage.split(separator: ",").prefix(32) {
            let parts = item.split(separator: ";")
            let tag = parts.first.map { String($0).lowercased().filter { $0 != " " } } ?? ""
            var weight = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                if pair.count == 2, pair[0].filter({ $0 != " " }) == "q" {
                    weight = Double(pair[1].filter { $0 != " " }) ?? 0
                }
            }
            let language: Language?
            if tag == "en" || tag.hasPrefix("en-") {
                language = .english
            } else if tag == "fa" || tag.hasPrefix("fa-") {
                language = .persian
            } else {
                language = nil
            }
            if let language, weight > 0, weight > (best?.weight ?? 0) { best = (weight, language) }
        }
        self = best?.language ?? fallback
    }
}
