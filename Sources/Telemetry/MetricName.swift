/// The Prometheus rules for metric and label names.
enum MetricName {
    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    static func isValidMetricName(_ name: String) -> Bool {
        isValid(name, allowingColon: true)
    }

    /// `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__` (reserved for Prometheus itself).
    static func isValidLabelName(_ name: String) -> Bool {
        isValid(name, allowingColon: false) && !name.utf8.starts(with: "__".utf8)
    }

    /// Stops the program unless `name` is a valid metric name and `labels` are valid,
    /// distinct label names; `reserved` are label names this kind of metric writes itself.
    static func validate(_ name: String, labels: [String], reserved: Set<String> = []) {
        precondition(isValidMetricName(name), "invalid metric name \(name.debugDescription)")
        var seen: Set<String> = []
        for label in labels {
            precondition(isValidLabelName(label), "metric \(name): invalid label name \(label.debugDescription)")
            precondition(!reserved.contains(label), "metric \(name): label name \(label.debugDescription) is reserved")
            precondition(seen.insert(label).inserted, "metric \(name): duplicate label name \(label.debugDescription)")
        }
    }

    private static func isValid(_ name: String, allowingColon: Bool) -> Bool {
        var bytes = name.utf8.makeIterator()
        guard let first = bytes.next(),
            isLetter(first) || first == UInt8(ascii: "_")
                || (allowingColon && first == UInt8(ascii: ":"))
        else { return false }
        while let byte = bytes.next() {
            let valid =
                isLetter(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "_") || (allowingColon && byte == UInt8(ascii: ":"))
            if !valid { return false }
        }
        return true
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }
}
