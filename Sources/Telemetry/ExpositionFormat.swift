/// The spelling rules of the Prometheus text exposition format 0.0.4: values, escapes and
/// sample lines.
enum ExpositionFormat {
    /// A sample value: whole numbers without a decimal point (`3`), others in Swift's
    /// shortest round-tripping form (`0.25`, `1e-05`), and `+Inf`, `-Inf`, `NaN`.
    static func value(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Inf" : "+Inf" }
        if value.rounded(.towardZero) == value, value.magnitude < 0x1p63 {
            return String(Int64(value))
        }
        return String(describing: value)
    }

    /// A whole count, as a sample value.
    static func value(_ value: UInt64) -> String {
        String(value)
    }

    /// Help text with `\` and newline escaped.
    static func escapeHelp(_ help: String) -> String {
        escape(help, quotes: false)
    }

    /// A label value with `\`, `"` and newline escaped.
    static func escapeLabelValue(_ value: String) -> String {
        escape(value, quotes: true)
    }

    /// `a="x",b="y"`: the inside of a sample's braces, without the braces.
    static func labelPairs(names: [String], values: [String]) -> String {
        var text = ""
        for (index, (name, value)) in zip(names, values).enumerated() {
            if index > 0 { text += "," }
            text += name
            text += "=\""
            text += escapeLabelValue(value)
            text += "\""
        }
        return text
    }

    /// Appends `name{labels} value\n`, or `name value\n` when `labels` is empty.
    static func appendSample(to text: inout String, name: String, labels: String, value: String) {
        text += name
        if !labels.isEmpty {
            text += "{"
            text += labels
            text += "}"
        }
        text += " "
        text += value
        text += "\n"
    }

    private static func escape(_ text: String, quotes: Bool) -> String {
        let needsEscape = text.utf8.contains { byte in
            byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\n") || (quotes && byte == UInt8(ascii: "\""))
        }
        guard needsEscape else { return text }
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\"" where quotes: escaped += "\\\""
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
