/// Why `PRICES`, `PRICES_FILE` or `CURRENCY` was refused; the message names the entry or the
/// line, never more of the text than the model's id.
package enum PriceConfigError: Error, Hashable, Sendable, CustomStringConvertible {
    case currency(String)
    case entry(line: Int?, String)

    package var description: String {
        switch self {
        case .currency(let reason): "CURRENCY \(reason)"
        case .entry(let line?, let reason): "line \(line): \(reason)"
        case .entry(nil, let reason): reason
        }
    }
}
