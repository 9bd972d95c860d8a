/// RFC 4180 text for the console's exports. A cell that a spreadsheet would run as a formula
/// (`=`, `+`, `-`, `@`, tab or carriage return first) gets a leading `'`: user ids and labels
/// are chosen by whoever made the token, and an export must not become a way to run one.
struct CSVWriter {
    private(set) var text = ""

    init(header: [String]) {
        row(header)
    }

    mutating func row(_ cells: [String]) {
        text += cells.map(Self.cell).joined(separator: ",")
        text += "\r\n"
    }

    static func cell(_ value: String) -> String {
        var value = value
        if let first = value.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first),
            Double(value) == nil
        {
            value = "'" + value
        }
        guard value.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else {
            return value
        }
        return "\"" + value.replacing("\"", with: "\"\"") + "\""
    }
}
